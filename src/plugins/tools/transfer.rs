//! What `cp` and `mv` share: pairing sources with destinations (a pattern's matches land
//! under the destination by their path relative to the pattern's fixed prefix), copying
//! entries now, and proposing file copies and moves to the client.

use serde_json::{json, Value};

use crate::db::models::entry::EntryRow;
use crate::db::paths::result_path as turn_result_path;
use crate::db::queries::entries;
use crate::db::queries::entry_moves::{copy_entry, EntryTransfer};
use crate::parser::{Command, TransferCommand};
use crate::plugins::tool::{ClientCall, Handled, ToolError, ToolScope};
use crate::plugins::tools::files::{self, escape_reason, is_file};
use crate::plugins::tools::{
    bad_fidelity, fail, finish, is_pattern, non_empty, parse_fidelity, select, store, write,
};
use crate::plugins::view::EntryView;

/// `cp` or `mv`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Transfer {
    /// Tool name.
    pub name: &'static str,
    /// Whether the source goes away.
    pub is_move: bool,
}

impl Transfer {
    /// The transfer command a client call stands for.
    pub(crate) fn from_call(call: &ClientCall) -> TransferCommand {
        TransferCommand {
            path: Some(call.path.clone()),
            to: call.to.clone().or_else(|| call.body.clone()),
            fidelity: call.attribute("fidelity"),
            preview: call.flag("preview"),
        }
    }

    /// `# cp <from> <to>` (and a warning line).
    pub(crate) fn view(self, entry: &EntryView<'_>) -> String {
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

    /// The command's source path.
    pub(crate) fn target(command: &Command) -> String {
        match command {
            Command::Cp(transfer) | Command::Mv(transfer) => {
                transfer.path.clone().unwrap_or_default()
            }
            _ => String::new(),
        }
    }

    /// Runs one `cp`/`mv` whose result entry is at `result_path`.
    pub(crate) fn run(
        self,
        scope: &mut ToolScope<'_>,
        command: &TransferCommand,
        result_path: &str,
    ) -> Result<Handled, ToolError> {
        let Some(path) = non_empty(command.path.as_deref()) else {
            return fail(scope, result_path, 400, "path is required");
        };
        let fidelity = match command.fidelity.as_deref() {
            Some(text) => match parse_fidelity(text) {
                Some(fidelity) => Some(fidelity),
                None => return fail(scope, result_path, 400, &bad_fidelity(text)),
            },
            None => None,
        };
        let rows: Vec<EntryRow> = select(scope, path, None)?
            .into_iter()
            .filter(|row| row.path != result_path && row.status != 202)
            .collect();
        let Some(to) = non_empty(command.to.as_deref()).map(str::trim) else {
            return match fidelity {
                Some(fidelity) if self.is_move => {
                    if rows.is_empty() {
                        return fail(scope, result_path, 404, &format!("{path} not found"));
                    }
                    store::set_fidelity(scope.conn, &rows, fidelity)?;
                    let paths: Vec<&str> = rows.iter().map(|row| row.path.as_str()).collect();
                    let body = format!("{} set to {fidelity}", paths.join(", "));
                    finish(scope, result_path, 200, &body, None)
                }
                _ => {
                    let message = format!(
                        "to is required: <{} path=\"{path}\" to=\"destination\"/>",
                        self.name
                    );
                    fail(scope, result_path, 400, &message)
                }
            };
        };
        if rows.is_empty() {
            return fail(scope, result_path, 404, &format!("{path} not found"));
        }
        let pattern = is_pattern(path, None);
        let pairs: Vec<(EntryRow, String)> = rows
            .into_iter()
            .map(|row| {
                let destination = if pattern {
                    destination_under(path, &row.path, to)
                } else {
                    to.to_owned()
                };
                (row, destination)
            })
            .collect();
        if command.preview {
            let lines: Vec<String> = pairs
                .iter()
                .map(|(row, destination)| format!("{} → {destination}", row.path))
                .collect();
            let body = format!("PREVIEW {} {}:\n{}", self.name, path, lines.join("\n"));
            return finish(scope, result_path, 200, &body, None);
        }
        if let Some(message) = pairs
            .iter()
            .find_map(|(row, destination)| self.refusal(scope, &row.path, destination))
        {
            return fail(scope, result_path, 400, &message);
        }
        let single = pairs.len() == 1;
        let mut outcome: Option<String> = None;
        let mut lines = Vec::new();
        for (row, destination) in &pairs {
            if is_file(destination) {
                let proposal = if single {
                    result_path.to_owned()
                } else {
                    let target = turn_result_path(self.name, scope.turn, &row.path);
                    entries::free_path(scope.conn, scope.run_id, &target)?
                };
                let attributes = self.attributes(&row.path, destination, None);
                let body = format!("{} {destination}", row.path);
                write(scope, &proposal, &body, 202, Some(attributes))?;
                lines.push(format!("{} → {destination} (awaiting approval)", row.path));
                outcome.get_or_insert(proposal);
            } else {
                let warning = self.copy_now(scope, row, destination, fidelity)?;
                if single {
                    let attributes = self.attributes(&row.path, destination, warning);
                    let body = format!("{} {destination}", row.path);
                    finish(scope, result_path, 200, &body, Some(attributes))?;
                }
                lines.push(format!("{} → {destination}", row.path));
            }
        }
        if !single {
            let attributes = json!({ "from": path, "to": to, "isMove": self.is_move });
            finish(scope, result_path, 200, &lines.join("\n"), Some(attributes))?;
        }
        Ok(Handled::at(
            outcome.unwrap_or_else(|| result_path.to_owned()),
        ))
    }

    /// Why this pair cannot be transferred, in words the model can act on.
    fn refusal(self, scope: &ToolScope<'_>, from: &str, to: &str) -> Option<String> {
        if let Some(reason) = escape_reason(scope.project_root, to) {
            return Some(reason);
        }
        match (is_file(from), is_file(to)) {
            (true, false) if self.is_move => Some(format!(
                "A project file cannot move into an entry. Copy it with <cp path=\"{from}\" \
                 to=\"{to}\"/> instead."
            )),
            (false, true) => Some(format!(
                "An entry cannot be copied to a file. Write the file with <set path=\"{to}\">\
                 content</set> instead."
            )),
            _ => None,
        }
    }

    /// Copies (or moves) an entry to an entry path; returns the overwrite warning.
    fn copy_now(
        self,
        scope: &mut ToolScope<'_>,
        row: &EntryRow,
        destination: &str,
        fidelity: Option<crate::db::enums::Fidelity>,
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
            store::delete(scope.conn, std::slice::from_ref(row))?;
        }
        if let Some(fidelity) = fidelity {
            store::set_fidelity(scope.conn, std::slice::from_ref(&copy), fidelity)?;
        }
        Ok(existed.then(|| format!("Overwrote existing entry at {}", copy.path)))
    }

    fn attributes(self, from: &str, to: &str, warning: Option<String>) -> Value {
        json!({ "from": from, "to": to, "isMove": self.is_move, "warning": warning })
    }

    /// Accepting a file copy or move: done on disk when the server applies changes; a
    /// moved source's entry goes (the scan brings the destination).
    pub(crate) fn accept(
        self,
        scope: &mut ToolScope<'_>,
        proposal: &EntryRow,
    ) -> Result<(), ToolError> {
        let attributes = proposal.attributes_json()?;
        let text = |key: &str| attributes.get(key).and_then(Value::as_str);
        if let (Some(root), Some(from), Some(to)) = (scope.disk_root, text("from"), text("to")) {
            files::copy(root, from, to)?;
            if self.is_move {
                files::remove(root, from)?;
            }
        }
        match text("from") {
            Some(from) if self.is_move => {
                if let Some(entry) = entries::get_entry(scope.conn, scope.run_id, from)? {
                    store::delete(scope.conn, std::slice::from_ref(&entry))?;
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }
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
mod tests {
    use super::destination_under;

    #[test]
    fn pattern_matches_land_under_the_destination() {
        assert_eq!(
            destination_under("known://plan_*", "known://plan_a", "known://archive"),
            "known://archive/plan_a"
        );
        assert_eq!(
            destination_under("src/**/*.js", "src/a/b.js", "backup/"),
            "backup/a/b.js"
        );
    }
}

#[cfg(test)]
mod dispatch_tests {
    use crate::db::enums::Fidelity;
    use crate::plugins::tools::testing::TestRun;

    #[test]
    fn entries_copy_and_move_now_with_globs_and_fidelity() {
        let mut run = TestRun::new();
        run.put("known://plan_a", "A");
        run.put("known://plan_b", "B");
        run.respond("<cp path=\"known://plan_*\" to=\"known://archive/\" fidelity=\"index\"/>");
        let copy = run.entry("known://archive/plan_a").unwrap();
        assert_eq!((copy.body.as_str(), copy.fidelity), ("A", Fidelity::Index));
        assert!(run.entry("known://plan_a").is_some());
        run.respond("<mv path=\"known://plan_b\" to=\"known://done/b\"/>");
        assert!(run.entry("known://plan_b").is_none());
        assert_eq!(run.entry("known://done/b").unwrap().body, "B");
        run.respond("<mv path=\"known://archive/*\" fidelity=\"archive\"/>");
        assert_eq!(
            run.entry("known://archive/plan_b").unwrap().fidelity,
            Fidelity::Archive
        );
        run.respond("<cp path=\"known://plan_a\" to=\"known://done/b\"/>");
        assert_eq!(
            run.attribute("cp://turn_4/known%3A//plan_a", "warning"),
            serde_json::json!("Overwrote existing entry at known://done/b")
        );
        assert_eq!(
            run.projected("mv://turn_2/known%3A//plan_b"),
            "# mv known://plan_b known://done/b"
        );
    }

    #[test]
    fn file_destinations_are_proposals_and_bad_pairs_are_refused() {
        let mut run = TestRun::new();
        run.put("src/a.js", "a");
        run.put("known://x", "x");
        let outcome = run.respond("<mv path=\"src/a.js\" to=\"src/b.js\"/>");
        assert_eq!(outcome.proposals[0].path, "mv://turn_1/src/a.js");
        assert_eq!(
            run.attribute("mv://turn_1/src/a.js", "isMove"),
            serde_json::json!(true)
        );
        let refused = run.respond("<cp path=\"known://x\" to=\"notes.md\"/>");
        assert_eq!(refused.errors[0].status, 400);
        let escaping = run.respond("<cp path=\"src/a.js\" to=\"../b.js\"/>");
        assert!(escaping.errors[0].message.contains("leaves the project"));
        let no_destination = run.respond("<cp path=\"known://x\"/>");
        assert!(no_destination.errors[0].message.contains("to is required"));
    }
}
