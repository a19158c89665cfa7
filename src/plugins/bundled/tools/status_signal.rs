//! `summarize` and `update`: the status signals. `summarize` is the final answer and ends
//! the loop; `update` is a progress note and the loop continues. Both are lifecycle
//! signals, stored at `<tool>://<slug>` and shown as their text at every fidelity.

use std::borrow::Cow;

use crate::context::view::EntryView;
use crate::db::enums::EntryStatus;
use crate::db::paths::slug_path;
use crate::parser::Command;
use crate::plugins::bundled::tools::headed;
use crate::plugins::tool::{
    ClientCall, Handled, ToolEffect, ToolError, ToolInfo, ToolKind, ToolScope, TypedTool,
};
use crate::plugins::writes::write;

/// The `summarize` or `update` tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct StatusSignal {
    name: &'static str,
    doc: &'static str,
    is_final: bool,
}

impl StatusSignal {
    /// `summarize`: the final answer.
    pub(crate) const SUMMARIZE: StatusSignal = StatusSignal {
        name: "summarize",
        doc: include_str!("../../text/tools/summarize.md"),
        is_final: true,
    };

    /// `update`: a progress note.
    pub(crate) const UPDATE: StatusSignal = StatusSignal {
        name: "update",
        doc: include_str!("../../text/tools/update.md"),
        is_final: false,
    };
}

impl ToolInfo for StatusSignal {
    fn effect(&self) -> ToolEffect {
        ToolEffect::Signals
    }

    fn name(&self) -> &'static str {
        self.name
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Lifecycle
    }

    /// Stored at a slug of their text.
    fn paths_are_words(&self) -> bool {
        true
    }

    fn doc(&self) -> &'static str {
        self.doc
    }

    fn full_view(&self, entry: &EntryView<'_>) -> String {
        headed(self.name, "", entry.body)
    }

    fn summary_view(&self, entry: &EntryView<'_>) -> String {
        self.full_view(entry)
    }

    fn command_from_call(&self, call: &ClientCall) -> Command {
        let text = call.body.clone().filter(|body| !body.trim().is_empty());
        let text = text.unwrap_or_else(|| call.path.clone());
        if self.is_final {
            Command::Summarize(text)
        } else {
            Command::Update(text)
        }
    }
}

impl TypedTool for StatusSignal {
    type Input = String;

    fn input<'c>(&self, command: &'c Command) -> Option<Cow<'c, String>> {
        match command {
            Command::Summarize(text) if self.is_final => Some(Cow::Borrowed(text)),
            Command::Update(text) if !self.is_final => Some(Cow::Borrowed(text)),
            _ => None,
        }
    }

    fn record(
        &self,
        scope: &mut ToolScope<'_>,
        text: &String,
    ) -> Result<Option<Handled>, ToolError> {
        let body = text.trim();
        if body.is_empty() {
            return Ok(None);
        }
        let path = slug_path(self.name, body);
        write(scope, &path, body, EntryStatus::Ok, None)?;
        Ok(Some(Handled::at(path)))
    }
}
