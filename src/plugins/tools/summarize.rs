//! `summarize`: the final answer; the loop ends. A lifecycle signal, stored at `summarize://<slug>`.

use crate::db::paths::slug_path;
use crate::parser::Command;
use crate::plugins::policy::ToolPolicy;
use crate::plugins::tool::{
    Availability, ClientCall, Handled, Tool, ToolError, ToolKind, ToolScope,
};
use crate::plugins::tools::{headed, write};
use crate::plugins::view::EntryView;

/// The `summarize` tool.
pub struct Summarize;

impl Tool for Summarize {
    fn name(&self) -> &'static str {
        "summarize"
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Lifecycle
    }

    fn availability(&self, _policy: &ToolPolicy) -> Availability {
        Availability::Offered
    }

    fn doc(&self) -> &'static str {
        include_str!("../text/tools/summarize.md")
    }

    fn full_view(&self, entry: &EntryView<'_>) -> String {
        headed("summarize", "", entry.body)
    }

    fn summary_view(&self, entry: &EntryView<'_>) -> String {
        self.full_view(entry)
    }

    fn command_from_call(&self, call: &ClientCall) -> Command {
        let text = call.body.clone().filter(|body| !body.trim().is_empty());
        Command::Summarize(text.unwrap_or_else(|| call.path.clone()))
    }

    fn record(
        &self,
        scope: &mut ToolScope<'_>,
        command: &Command,
    ) -> Result<Option<Handled>, ToolError> {
        let Command::Summarize(body) = command else {
            return Err(ToolError::InvalidParams(
                "summarize expects a summarize command".into(),
            ));
        };
        let body = body.trim();
        if body.is_empty() {
            return Ok(None);
        }
        let path = slug_path("summarize", body);
        write(scope, &path, body, 200, None)?;
        Ok(Some(Handled::at(path)))
    }
}
