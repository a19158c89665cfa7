//! `cp` and `mv`: copy, or move and rename, entries and files. Entries change now; a file
//! destination is a 202 proposal the client (or the server, on accept) carries out. A
//! pattern's matches land under the destination by their path relative to the pattern's
//! fixed prefix. `mv` without a destination but with a fidelity changes it in place.

use std::borrow::Cow;

use serde_json::{json, Value};

use crate::context::view::EntryView;
use crate::db::enums::{EntryStatus, Fidelity};
use crate::db::models::entry::EntryRow;
use crate::db::paths::is_file;
use crate::db::queries::entries;
use crate::db::queries::entry_moves::{copy_entry, EntryTransfer};
use crate::db::queries::selected;
use crate::parser::{Command, TagSpec, TransferCommand};
use crate::plugins::bundled::tools::files::{self, escape_reason};
use crate::plugins::bundled::tools::{
    fail, file_changes_forbidden, is_pattern, non_empty, not_found, parse_fidelity, paths_of,
    propose_separately, select_settled,
};
use crate::plugins::policy::ToolPolicy;
use crate::plugins::tool::{
    ClientCall, Handled, ToolEffect, ToolError, ToolInfo, ToolScope, TypedTool,
};
use crate::plugins::writes::{finish, write};

/// The `cp` or `mv` tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Transfer {
    name: &'static str,
    doc: &'static str,
    is_move: bool,
}

impl Transfer {
    /// `cp`: the source stays.
    pub(crate) const CP: Transfer = Transfer {
        name: "cp",
        doc: include_str!("../../text/tools/cp.md"),
        is_move: false,
    };

    /// `mv`: the source goes away.
    pub(crate) const MV: Transfer = Transfer {
        name: "mv",
        doc: include_str!("../../text/tools/mv.md"),
        is_move: true,
    };

    /// `# cp <from> <to>` (and a warning line).
    fn view(self, entry: &EntryView<'_>) -> String {
        let from = entry
            .attribute("from")
            .or(entry.attribute("path"))
            .unwrap_or_default();
        let to = entry.attribute("to").unwrap_or_default();
        let mut text = format!("# {} {from} {to}", self.name);
        if let Some(error) = entry.attribute("error") {
            text.push_str(&format!("\n{error}"));
        } else if let Some(warning) = entry.attribute("warning") {
            text.push_str(&format!("\n{warning}"));
        }
        text
    }

    /// Runs one `cp`/`mv` whose result entry is at `result_path`.
    fn run(
        self,
        scope: &mut ToolScope<'_>,
        command: &TransferCommand,
        result_path: &str,
    ) -> Result<Handled, ToolError> {
        let Some(path) = non_empty(command.path.as_deref()) else {
            return fail(
                scope,
                result_path,
                EntryStatus::BadRequest,
                "path is required",
            );
        };
        let fidelity = match command.fidelity.as_deref().map(parse_fidelity).transpose() {
            Ok(fidelity) => fidelity,
            Err(message) => return fail(scope, result_path, EntryStatus::BadRequest, &message),
        };
        let rows = select_settled(scope, path, None, result_path)?;
        let Some(to) = non_empty(command.to.as_deref()).map(str::trim) else {
            return self.without_destination(scope, path, &rows, fidelity, result_path);
        };
        if rows.is_empty() {
            return not_found(scope, result_path, path);
        }
        let pairs = destinations(path, rows, to);
        if command.preview {
            let lines: Vec<String> = pairs
                .iter()
                .map(|(row, destination)| format!("{} → {destination}", row.path))
                .collect();
            let body = format!("PREVIEW {} {}:\n{}", self.name, path, lines.join("\n"));
            return finish(scope, result_path, EntryStatus::Ok, &body, None);
        }
        if let Some((status, message)) = pairs
            .iter()
            .find_map(|(row, destination)| self.refusal(scope, &row.path, destination))
        {
            return fail(scope, result_path, status, &message);
        }
        self.transfer(scope, &pairs, (path, to), fidelity, result_path)
    }

    /// A `cp`/`mv` without a destination: an `mv` with a fidelity sets it on the selected
    /// entries in place; anything else is a 400 saying `to` is required.
    fn without_destination(
        self,
        scope: &mut ToolScope<'_>,
        path: &str,
        rows: &[EntryRow],
        fidelity: Option<Fidelity>,
        result_path: &str,
    ) -> Result<Handled, ToolError> {
        match fidelity {
            Some(fidelity) if self.is_move => {
                if rows.is_empty() {
                    return not_found(scope, result_path, path);
                }
                selected::set_fidelity(scope.conn, rows, fidelity)?;
                let body = format!("{} set to {fidelity}", paths_of(rows));
                finish(scope, result_path, EntryStatus::Ok, &body, None)
            }
            _ => {
                let message = format!(
                    "to is required: <{} path=\"{path}\" to=\"destination\"/>",
                    self.name
                );
                fail(scope, result_path, EntryStatus::BadRequest, &message)
            }
        }
    }

    /// Transfers each (source, destination) pair, none refused: an entry destination now,
    /// a file destination as a proposal (at `result_path` for a lone pair, one of its own
    /// for each of several). Several pairs are summed up at `result_path`, one line each,
    /// under the command's `(path, to)`.
    fn transfer(
        self,
        scope: &mut ToolScope<'_>,
        pairs: &[(EntryRow, String)],
        (path, to): (&str, &str),
        fidelity: Option<Fidelity>,
        result_path: &str,
    ) -> Result<Handled, ToolError> {
        let single = pairs.len() == 1;
        let mut outcome: Option<String> = None;
        let mut lines = Vec::new();
        for (row, destination) in pairs {
            let body = format!("{} {destination}", row.path);
            if is_file(destination) {
                let attributes = self.attributes(&row.path, destination, None);
                let proposal = if single {
                    let status = EntryStatus::Proposed;
                    write(scope, result_path, &body, status, Some(attributes))?;
                    result_path.to_owned()
                } else {
                    propose_separately(scope, self.name, &row.path, &body, attributes)?
                };
                lines.push(format!("{} → {destination} (awaiting approval)", row.path));
                outcome.get_or_insert(proposal);
            } else {
                let warning = self.copy_now(scope, row, destination, fidelity)?;
                if single {
                    let attributes = self.attributes(&row.path, destination, warning);
                    finish(scope, result_path, EntryStatus::Ok, &body, Some(attributes))?;
                }
                lines.push(format!("{} → {destination}", row.path));
            }
        }
        if !single {
            let attributes = json!({ "from": path, "to": to, "isMove": self.is_move });
            let body = lines.join("\n");
            finish(scope, result_path, EntryStatus::Ok, &body, Some(attributes))?;
        }
        Ok(Handled::at(
            outcome.unwrap_or_else(|| result_path.to_owned()),
        ))
    }

    /// Why this pair cannot be transferred (400, or 403 for a readonly file), in words
    /// the model can act on.
    fn refusal(self, scope: &ToolScope<'_>, from: &str, to: &str) -> Option<(EntryStatus, String)> {
        if let Some(reason) = escape_reason(scope.project_root, to) {
            return Some((EntryStatus::BadRequest, reason));
        }
        let misplaced = match (is_file(from), is_file(to)) {
            (true, false) if self.is_move => Some(format!(
                "A project file cannot move into an entry. Copy it with <cp path=\"{from}\" \
                 to=\"{to}\"/> instead."
            )),
            (false, true) => Some(format!(
                "An entry cannot be copied to a file. Write the file with <set path=\"{to}\">\
                 content</set> instead."
            )),
            _ => None,
        };
        if let Some(message) = misplaced {
            return Some((EntryStatus::BadRequest, message));
        }
        self.readonly_refusal(scope, from, to)
            .map(|message| (EntryStatus::Forbidden, message))
    }

    /// Why the transfer would change a readonly file: its destination, or a moved source.
    fn readonly_refusal(self, scope: &ToolScope<'_>, from: &str, to: &str) -> Option<String> {
        let source = self.is_move.then_some(from);
        [Some(to), source]
            .into_iter()
            .flatten()
            .find_map(|path| scope.readonly.refusal(self.name, path))
    }

    /// Copies (or moves) an entry to an entry path; returns the overwrite warning.
    fn copy_now(
        self,
        scope: &mut ToolScope<'_>,
        row: &EntryRow,
        destination: &str,
        fidelity: Option<Fidelity>,
    ) -> Result<Option<String>, ToolError> {
        let existed = entries::get_entry(scope.conn, scope.run_id, destination)?.is_some();
        let copy = copy_entry(
            scope.conn,
            &EntryTransfer {
                run_id: scope.run_id,
                from: row.path.clone(),
                to: destination.to_owned(),
                loop_id: scope.loop_id,
                turn: scope.turn,
            },
        )?;
        if self.is_move && copy.path != row.path {
            selected::delete(scope.conn, std::slice::from_ref(row))?;
        }
        if let Some(fidelity) = fidelity {
            selected::set_fidelity(scope.conn, std::slice::from_ref(&copy), fidelity)?;
        }
        Ok(existed.then(|| format!("Overwrote existing entry at {}", copy.path)))
    }

    fn attributes(self, from: &str, to: &str, warning: Option<String>) -> Value {
        json!({ "from": from, "to": to, "isMove": self.is_move, "warning": warning })
    }
}

impl ToolInfo for Transfer {
    fn effect(&self) -> ToolEffect {
        ToolEffect::Changes
    }

    fn proposes(&self) -> bool {
        true
    }

    fn name(&self) -> &'static str {
        self.name
    }

    fn tag(&self) -> TagSpec {
        TagSpec {
            main_field: "to",
            attributes: &["path", "to", "fidelity", "preview"],
        }
    }

    fn doc(&self) -> &'static str {
        self.doc
    }

    fn full_view(&self, entry: &EntryView<'_>) -> String {
        self.view(entry)
    }

    fn summary_view(&self, entry: &EntryView<'_>) -> String {
        self.view(entry)
    }

    fn command_from_call(&self, call: &ClientCall) -> Command {
        let transfer = TransferCommand {
            path: Some(call.path.clone()),
            to: call.to.clone().or_else(|| call.body.clone()),
            fidelity: call.attribute("fidelity"),
            preview: call.flag("preview"),
        };
        if self.is_move {
            Command::Mv(transfer)
        } else {
            Command::Cp(transfer)
        }
    }

    /// Accepting a file copy or move: done on disk when the server applies changes; a
    /// moved source's entry goes (the scan brings the destination).
    fn accept(
        &self,
        scope: &mut ToolScope<'_>,
        proposal: &EntryRow,
        _output: Option<&str>,
    ) -> Result<(), ToolError> {
        let attributes = &proposal.attributes;
        let text = |key: &str| attributes.get(key).and_then(Value::as_str);
        if let (Some(root), Some(from), Some(to)) = (scope.disk_root, text("from"), text("to")) {
            if let Some(refusal) = self.readonly_refusal(scope, from, to) {
                return Err(ToolError::Readonly(refusal));
            }
            files::copy(root, from, to)?;
            if self.is_move {
                files::remove(root, from)?;
            }
        }
        match text("from") {
            Some(from) if self.is_move => Ok(selected::delete_at(scope.conn, scope.run_id, from)?),
            _ => Ok(()),
        }
    }
}

impl TypedTool for Transfer {
    type Input = TransferCommand;

    fn input<'c>(&self, command: &'c Command) -> Option<Cow<'c, TransferCommand>> {
        match command {
            Command::Mv(transfer) if self.is_move => Some(Cow::Borrowed(transfer)),
            Command::Cp(transfer) if !self.is_move => Some(Cow::Borrowed(transfer)),
            _ => None,
        }
    }

    fn target(&self, transfer: &TransferCommand) -> String {
        transfer.path.clone().unwrap_or_default()
    }

    fn forbids(&self, transfer: &TransferCommand, policy: &ToolPolicy) -> Option<String> {
        if !transfer.preview && transfer.to.as_deref().is_some_and(is_file) {
            file_changes_forbidden(self.name, policy)
        } else {
            None
        }
    }

    fn handle(
        &self,
        scope: &mut ToolScope<'_>,
        transfer: &TransferCommand,
        result_path: &str,
    ) -> Result<Handled, ToolError> {
        self.run(scope, transfer, result_path)
    }
}

/// Each selected row with its destination: `to` itself, or under `to` for the matches of
/// a pattern.
fn destinations(path: &str, rows: Vec<EntryRow>, to: &str) -> Vec<(EntryRow, String)> {
    let pattern = is_pattern(path, None);
    rows.into_iter()
        .map(|row| {
            let destination = if pattern {
                destination_under(path, &row.path, to)
            } else {
                to.to_owned()
            };
            (row, destination)
        })
        .collect()
}

/// Where a pattern match lands: `to` joined with the match's path relative to the
/// pattern's fixed prefix (up to the last `/` or `://` before the first wildcard).
fn destination_under(pattern: &str, matched: &str, to: &str) -> String {
    let wildcard = pattern.find(['*', '?', '[']).unwrap_or(pattern.len());
    let fixed = pattern.get(..wildcard).unwrap_or_default();
    let prefix_end = fixed.rfind('/').map_or(0, |index| index + 1);
    let prefix = fixed.get(..prefix_end).unwrap_or_default();
    let relative = matched
        .strip_prefix(prefix)
        .or_else(|| matched.rsplit('/').next())
        .unwrap_or(matched);
    if to.ends_with('/') {
        format!("{to}{relative}")
    } else {
        format!("{to}/{relative}")
    }
}

#[cfg(test)]
mod tests;
