//! `cp`: copy an entry or file (entries now, files as a 202 proposal).

use crate::db::models::entry::EntryRow;
use crate::parser::Command;
use crate::plugins::policy::ToolPolicy;
use crate::plugins::tool::{Availability, ClientCall, Handled, Tool, ToolError, ToolScope};
use crate::plugins::tools::file_changes_forbidden;
use crate::plugins::tools::files::is_file;
use crate::plugins::tools::transfer::Transfer;
use crate::plugins::view::EntryView;

/// The `cp` tool.
pub struct Cp;

const TRANSFER: Transfer = Transfer {
    name: "cp",
    is_move: false,
};

impl Tool for Cp {
    fn name(&self) -> &'static str {
        TRANSFER.name
    }

    fn availability(&self, _policy: &ToolPolicy) -> Availability {
        Availability::Offered
    }

    fn doc(&self) -> &'static str {
        include_str!("../text/tools/cp.md")
    }

    fn full_view(&self, entry: &EntryView<'_>) -> String {
        TRANSFER.view(entry)
    }

    fn summary_view(&self, entry: &EntryView<'_>) -> String {
        TRANSFER.view(entry)
    }

    fn command_from_call(&self, call: &ClientCall) -> Command {
        Command::Cp(Transfer::from_call(call))
    }

    fn target(&self, command: &Command) -> String {
        Transfer::target(command)
    }

    fn forbids(&self, command: &Command, policy: &ToolPolicy) -> Option<String> {
        match command {
            Command::Cp(transfer)
                if !transfer.preview && transfer.to.as_deref().is_some_and(is_file) =>
            {
                file_changes_forbidden(TRANSFER.name, policy)
            }
            _ => None,
        }
    }

    fn handle(
        &self,
        scope: &mut ToolScope<'_>,
        command: &Command,
        result_path: &str,
    ) -> Result<Handled, ToolError> {
        let Command::Cp(transfer) = command else {
            return Err(ToolError::InvalidParams("cp expects a cp command".into()));
        };
        TRANSFER.run(scope, transfer, result_path)
    }

    fn accept(
        &self,
        scope: &mut ToolScope<'_>,
        proposal: &EntryRow,
        _output: Option<&str>,
    ) -> Result<(), ToolError> {
        TRANSFER.accept(scope, proposal)
    }
}
