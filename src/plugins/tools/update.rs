//! `update`: a progress note; the loop continues. A lifecycle signal, stored at `update://<slug>`.

use crate::db::paths::slug_path;
use crate::parser::Command;
use crate::plugins::policy::ToolPolicy;
use crate::plugins::tool::{
    Availability, ClientCall, Handled, Tool, ToolError, ToolKind, ToolScope,
};
use crate::plugins::tools::{headed, write};
use crate::plugins::view::EntryView;

/// The `update` tool.
pub struct Update;

impl Tool for Update {
    fn name(&self) -> &'static str {
        "update"
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Lifecycle
    }

    fn availability(&self, _policy: &ToolPolicy) -> Availability {
        Availability::Offered
    }

    fn doc(&self) -> &'static str {
        include_str!("../text/tools/update.md")
    }

    fn full_view(&self, entry: &EntryView<'_>) -> String {
        headed("update", "", entry.body)
    }

    fn summary_view(&self, entry: &EntryView<'_>) -> String {
        self.full_view(entry)
    }

    fn command_from_call(&self, call: &ClientCall) -> Command {
        let text = call.body.clone().filter(|body| !body.trim().is_empty());
        Command::Update(text.unwrap_or_else(|| call.path.clone()))
    }

    fn record(
        &self,
        scope: &mut ToolScope<'_>,
        command: &Command,
    ) -> Result<Option<Handled>, ToolError> {
        let Command::Update(body) = command else {
            return Err(ToolError::InvalidParams(
                "update expects a update command".into(),
            ));
        };
        let body = body.trim();
        if body.is_empty() {
            return Ok(None);
        }
        let path = slug_path("update", body);
        write(scope, &path, body, 200, None)?;
        Ok(Some(Handled::at(path)))
    }
}
