//! `sh`: a command with side effects (install, build, test), run by the client after the user accepts.
//! A 202 proposal `{command}`; the server never runs it.

use crate::db::enums::LoopMode;
use crate::parser::Command;
use crate::plugins::policy::ToolPolicy;
use crate::plugins::tool::{
    Availability, ClientCall, Handled, TargetKind, Tool, ToolError, ToolScope,
};
use crate::plugins::tools::{command_proposal, headed};
use crate::plugins::view::EntryView;

/// The `sh` tool.
pub struct Sh;

impl Tool for Sh {
    fn name(&self) -> &'static str {
        "sh"
    }

    fn availability(&self, policy: &ToolPolicy) -> Availability {
        if policy.mode == LoopMode::Act && !policy.no_proposals {
            Availability::Offered
        } else {
            Availability::Excluded
        }
    }

    fn doc(&self) -> &'static str {
        include_str!("../text/tools/sh.md")
    }

    fn full_view(&self, entry: &EntryView<'_>) -> String {
        let command = entry.attribute("command").unwrap_or_default();
        let output = if entry.body == command {
            ""
        } else {
            entry.body
        };
        headed("sh", command, output)
    }

    fn summary_view(&self, entry: &EntryView<'_>) -> String {
        entry.attribute("command").unwrap_or_default().to_owned()
    }

    fn command_from_call(&self, call: &ClientCall) -> Command {
        Command::Sh(
            call.attribute("command")
                .or_else(|| Some(call.path.clone())),
        )
    }

    fn target_kind(&self) -> TargetKind {
        TargetKind::Text
    }

    fn target(&self, command: &Command) -> String {
        match command {
            Command::Sh(command) => command.clone().unwrap_or_default(),
            _ => String::new(),
        }
    }

    fn handle(
        &self,
        scope: &mut ToolScope<'_>,
        command: &Command,
        result_path: &str,
    ) -> Result<Handled, ToolError> {
        let Command::Sh(command) = command else {
            return Err(ToolError::InvalidParams("sh expects a sh command".into()));
        };
        command_proposal(scope, command.as_deref(), result_path)
    }
}
