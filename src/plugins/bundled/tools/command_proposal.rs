//! `env` and `sh`: a shell command run after the user accepts, as a 202 proposal
//! `{command}`. Where the project runs commands in the client (the default), the client runs
//! it and its output replaces the body on accept; where it runs them on the server, the
//! accepted command runs confined in the project root (`crate::sandbox`) and its outcome
//! — status and output — is the entry, whatever the client sent. `env` is for commands
//! without side effects (versions, git log) and is offered outside panic mode; `sh` is for
//! commands with side effects (install, build, test) and is offered only in act mode.

use std::borrow::Cow;

use serde_json::{json, Map, Value};

use crate::context::view::EntryView;
use crate::db::enums::{EntryStatus, LoopMode};
use crate::db::models::entry::EntryRow;
use crate::db::queries::entries;
use crate::parser::{Command, TagSpec};
use crate::plugins::bundled::tools::{echoed, propose_text};
use crate::plugins::gather::{Accepting, Gather};
use crate::plugins::policy::ToolPolicy;
use crate::plugins::tool::{
    Availability, ClientCall, Handled, TargetKind, ToolEffect, ToolError, ToolInfo, ToolScope,
    TypedTool,
};
use crate::sandbox::outcome::CommandOutcome;
use crate::sandbox::runner::CommandError;

/// What running an accepted command on the server came to.
pub(crate) type RanOnServer = Result<CommandOutcome, CommandError>;

/// The `env` or `sh` tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct CommandProposal {
    name: &'static str,
    doc: &'static str,
    has_side_effects: bool,
}

impl CommandProposal {
    /// `env`: a command without side effects.
    pub(crate) const ENV: CommandProposal = CommandProposal {
        name: "env",
        doc: include_str!("../../text/tools/env.md"),
        has_side_effects: false,
    };

    /// `sh`: a command with side effects.
    pub(crate) const SH: CommandProposal = CommandProposal {
        name: "sh",
        doc: include_str!("../../text/tools/sh.md"),
        has_side_effects: true,
    };
}

impl ToolInfo for CommandProposal {
    fn effect(&self) -> ToolEffect {
        if self.has_side_effects {
            ToolEffect::Changes
        } else {
            ToolEffect::Reads
        }
    }

    fn proposes(&self) -> bool {
        true
    }

    fn name(&self) -> &'static str {
        self.name
    }

    fn availability(&self, policy: &ToolPolicy) -> Availability {
        let allowed = if self.has_side_effects {
            policy.mode == LoopMode::Act
        } else {
            policy.mode != LoopMode::Panic
        };
        if allowed && !policy.no_proposals {
            Availability::Offered
        } else {
            Availability::Excluded
        }
    }

    fn tag(&self) -> TagSpec {
        TagSpec {
            main_field: "command",
            attributes: &["command"],
        }
    }

    fn doc(&self) -> &'static str {
        self.doc
    }

    fn full_view(&self, entry: &EntryView<'_>) -> String {
        echoed(self.name, entry, "command")
    }

    fn summary_view(&self, entry: &EntryView<'_>) -> String {
        entry.attribute("command").unwrap_or_default().to_owned()
    }

    fn command_from_call(&self, call: &ClientCall) -> Command {
        let line = call
            .attribute("command")
            .or_else(|| Some(call.path.clone()));
        if self.has_side_effects {
            Command::Sh(line)
        } else {
            Command::Env(line)
        }
    }

    fn target_kind(&self) -> TargetKind {
        TargetKind::Text
    }

    fn command_line(&self, body: &str, attributes: &Map<String, Value>) -> Option<String> {
        let command = attributes.get("command").and_then(Value::as_str);
        Some(command.unwrap_or(body).to_owned())
    }

    /// Runs the accepted command when its project runs commands on the server.
    fn gather_acceptance<'a>(&'a self, accepting: &'a Accepting<'a>) -> Option<Gather<'a>> {
        let place = accepting.commands?;
        let proposal = accepting.proposal;
        let command = proposal
            .attributes
            .text("command")
            .unwrap_or(proposal.body.as_str());
        Some(Gather::of(async move {
            let ran: RanOnServer = place.run(&proposal.path, command).await;
            ran
        }))
    }

    /// Records what the command run on the server came to, when it ran there.
    fn accept(
        &self,
        scope: &mut ToolScope<'_>,
        proposal: &EntryRow,
        _output: Option<&str>,
    ) -> Result<(), ToolError> {
        let (status, body) = match scope.gathered::<RanOnServer>(self.name) {
            Some(Ok(outcome)) => (outcome.status, std::mem::take(&mut outcome.body)),
            Some(Err(error)) => (EntryStatus::Failed, error.to_string()),
            None => return Ok(()),
        };
        entries::resolve_entry(
            scope.conn,
            scope.run_id,
            &proposal.path,
            status,
            Some(&body),
        )?;
        Ok(())
    }
}

impl TypedTool for CommandProposal {
    type Input = Option<String>;

    fn input<'c>(&self, command: &'c Command) -> Option<Cow<'c, Option<String>>> {
        match command {
            Command::Sh(line) if self.has_side_effects => Some(Cow::Borrowed(line)),
            Command::Env(line) if !self.has_side_effects => Some(Cow::Borrowed(line)),
            _ => None,
        }
    }

    fn target(&self, line: &Option<String>) -> String {
        line.clone().unwrap_or_default()
    }

    fn handle(
        &self,
        scope: &mut ToolScope<'_>,
        line: &Option<String>,
        result_path: &str,
    ) -> Result<Handled, ToolError> {
        propose_text(
            scope,
            result_path,
            line.as_deref(),
            "command is required",
            |line| json!({ "command": line }),
        )
    }
}

#[cfg(test)]
mod tests {
    use crate::db::enums::EntryStatus;
    use crate::db::enums::LoopMode;
    use crate::plugins::bundled::tools::testing::TestRun;
    use crate::plugins::policy::ToolPolicy;
    use crate::plugins::tool::{Availability, ToolInfo};

    use super::CommandProposal;

    #[test]
    fn commands_are_proposals_shown_with_their_output() {
        let mut run = TestRun::new();
        let outcome = run.respond("<env>node --version</env>");
        assert_eq!(outcome.proposals[0].body, "node --version");
        let path = "env://turn_1/node%20--version";
        assert_eq!(run.projected(path), "# env node --version");
        run.resolve(
            path,
            crate::plugins::engine::resolve::Resolution::Accept,
            Some("v22"),
        )
        .unwrap();
        assert_eq!(run.projected(path), "# env node --version\nv22");
        let empty = run.respond("<env></env>");
        assert_eq!(empty.errors[0].status, EntryStatus::BadRequest);
    }

    #[test]
    fn env_is_offered_outside_panic_and_sh_only_in_act_mode() {
        let offered = |tool: CommandProposal, mode: LoopMode, no_proposals: bool| {
            let mut policy = ToolPolicy::act();
            policy.mode = mode;
            policy.no_proposals = no_proposals;
            tool.availability(&policy) == Availability::Offered
        };
        let modes = [LoopMode::Act, LoopMode::Ask, LoopMode::Panic];
        let env: Vec<bool> = modes
            .iter()
            .map(|mode| offered(CommandProposal::ENV, *mode, false))
            .collect();
        let sh: Vec<bool> = modes
            .iter()
            .map(|mode| offered(CommandProposal::SH, *mode, false))
            .collect();
        assert_eq!(
            (env.as_slice(), sh.as_slice()),
            (&[true, true, false][..], &[true, false, false][..])
        );
        assert!(!offered(CommandProposal::ENV, LoopMode::Act, true));
        assert!(!offered(CommandProposal::SH, LoopMode::Act, true));
    }
}
