//! `env`: a command without side effects (versions, git log), run by the client after the user accepts.
//! A 202 proposal `{command}`; the server never runs it.

use crate::db::enums::LoopMode;
use crate::parser::Command;
use crate::plugins::policy::ToolPolicy;
use crate::plugins::tool::{
    Availability, ClientCall, Handled, TargetKind, Tool, ToolError, ToolScope,
};
use crate::plugins::tools::{command_proposal, headed};
use crate::plugins::view::EntryView;

/// The `env` tool.
pub struct Env;

impl Tool for Env {
    fn name(&self) -> &'static str {
        "env"
    }

    fn availability(&self, policy: &ToolPolicy) -> Availability {
        if policy.no_proposals || policy.mode == LoopMode::Panic {
            Availability::Excluded
        } else {
            Availability::Offered
        }
    }

    fn doc(&self) -> &'static str {
        include_str!("../text/tools/env.md")
    }

    fn full_view(&self, entry: &EntryView<'_>) -> String {
        let command = entry.attribute("command").unwrap_or_default();
        let output = if entry.body == command {
            ""
        } else {
            entry.body
        };
        headed("env", command, output)
    }

    fn summary_view(&self, entry: &EntryView<'_>) -> String {
        entry.attribute("command").unwrap_or_default().to_owned()
    }

    fn command_from_call(&self, call: &ClientCall) -> Command {
        Command::Env(
            call.attribute("command")
                .or_else(|| Some(call.path.clone())),
        )
    }

    fn target_kind(&self) -> TargetKind {
        TargetKind::Text
    }

    fn target(&self, command: &Command) -> String {
        match command {
            Command::Env(command) => command.clone().unwrap_or_default(),
            _ => String::new(),
        }
    }

    fn handle(
        &self,
        scope: &mut ToolScope<'_>,
        command: &Command,
        result_path: &str,
    ) -> Result<Handled, ToolError> {
        let Command::Env(command) = command else {
            return Err(ToolError::InvalidParams("env expects a env command".into()));
        };
        command_proposal(scope, command.as_deref(), result_path)
    }
}

#[cfg(test)]
mod tests {
    use crate::plugins::tools::testing::TestRun;

    #[test]
    fn commands_are_proposals_shown_with_their_output() {
        let mut run = TestRun::new();
        let outcome = run.respond("<env>node --version</env>");
        assert_eq!(outcome.proposals[0].body, "node --version");
        let path = "env://turn_1/node%20--version";
        assert_eq!(run.projected(path), "# env node --version");
        run.resolve(
            path,
            crate::plugins::resolve::Resolution::Accept,
            Some("v22"),
        )
        .unwrap();
        assert_eq!(run.projected(path), "# env node --version\nv22");
        let empty = run.respond("<env></env>");
        assert_eq!(empty.errors[0].status, 400);
    }
}
