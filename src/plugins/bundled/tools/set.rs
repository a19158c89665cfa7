//! `set`: write, edit, or change the fidelity of entries and files.
//!
//! The first branch that applies wins: `preview` lists the targets; a `fidelity` without
//! new content (or with content for an entry) changes how the targets are shown, with
//! `summary` keywords that persist; an edit (SEARCH/REPLACE, diff, sed ...) is applied to
//! entries now with hedberg and proposed for files at `set://<file>` (202 with `patch` and
//! `merge`); a plain write to an entry is an upsert and to a file a 202 proposal.

mod edit;
pub(crate) mod prepared;

use std::borrow::Cow;

use serde_json::{json, Value};

use crate::context::view::EntryView;
use crate::db::enums::EntryStatus;
use crate::db::functions::estimate_tokens;
use crate::db::models::entry::EntryRow;
use crate::db::paths::is_file;
use crate::db::queries::entries;
use crate::db::queries::selected;
use crate::hedberg::unified_diff;
use crate::hedberg::SetRevision;
use crate::parser::{normalize_attrs, Command, SetCommand, TagSpec};
use crate::plugins::bundled::tools::files;
use crate::plugins::bundled::tools::{
    attribute_or, fail, file_changes_forbidden, headed, is_pattern, listing, merge, non_empty,
    not_found, parse_fidelity, paths_of, pattern_header, preview, report, select,
    summary_attribute,
};
use crate::plugins::policy::ToolPolicy;
use crate::plugins::tool::{
    ClientCall, Handled, ToolEffect, ToolError, ToolInfo, ToolScope, TypedTool,
};
use crate::plugins::writes::{finish, write, write_row};

pub(crate) struct Set;

impl ToolInfo for Set {
    fn effect(&self) -> ToolEffect {
        ToolEffect::Changes
    }

    fn proposes(&self) -> bool {
        true
    }

    fn keeps_proposed_body(&self) -> bool {
        true
    }

    fn name(&self) -> &'static str {
        "set"
    }

    fn tag(&self) -> TagSpec {
        TagSpec {
            main_field: "body",
            attributes: &[
                "path", "body", "search", "replace", "preview", "fidelity", "summary",
            ],
        }
    }

    fn doc(&self) -> &'static str {
        include_str!("../../text/tools/set.md")
    }

    fn full_view(&self, entry: &EntryView<'_>) -> String {
        let file = attribute_or(entry, "file", attribute_or(entry, "path", entry.path));
        if let Some(error) = entry.attribute("error") {
            return headed("set", file, error);
        }
        let tokens = ["beforeTokens", "afterTokens"]
            .map(|key| entry.attributes.get(key).and_then(Value::as_i64));
        let subject = match tokens {
            [Some(before), Some(after)] => format!("{file} {before}→{after} tokens"),
            _ => file.to_owned(),
        };
        match entry.attribute("merge") {
            Some(merge) => headed("set", &subject, merge),
            None if entry.status == EntryStatus::Ok => headed("set", &subject, entry.body),
            None => headed("set", &subject, ""),
        }
    }

    fn summary_view(&self, entry: &EntryView<'_>) -> String {
        entry.attribute("merge").unwrap_or_default().to_owned()
    }

    fn command_from_call(&self, call: &ClientCall) -> Command {
        let mut pairs = vec![("path".to_owned(), call.path.clone())];
        for (name, value) in &call.attributes {
            let text = match value {
                Value::String(text) => text.clone(),
                Value::Bool(true) => String::new(),
                Value::Number(number) => number.to_string(),
                _ => continue,
            };
            pairs.push((name.clone(), text));
        }
        let attrs = normalize_attrs(pairs);
        Command::Set(SetCommand::resolve(
            &attrs,
            call.body.as_deref().unwrap_or(""),
        ))
    }

    fn accept(
        &self,
        scope: &mut ToolScope<'_>,
        proposal: &EntryRow,
        _output: Option<&str>,
    ) -> Result<(), ToolError> {
        let attributes = &proposal.attributes;
        let text = |key: &str| {
            attributes
                .get(key)
                .and_then(Value::as_str)
                .map(str::to_owned)
        };
        let (Some(file), Some(merge_text)) = (text("file"), text("merge")) else {
            return Ok(());
        };
        let new = match scope.disk_root {
            Some(root) => {
                if let Some(refusal) = scope.readonly.refusal("set", &file) {
                    return Err(ToolError::Readonly(refusal));
                }
                let on_disk = files::read(root, &file)?.unwrap_or_default();
                // The client (an editor through ACP) may have written the accepted edit
                // already: the file holds exactly the proposed content, and the edit is not
                // applied a second time.
                let proposed = merge::apply(&proposal.body, &merge_text);
                if proposed.as_deref() == Some(on_disk.as_str()) && on_disk != proposal.body {
                    on_disk
                } else {
                    let new = merge::apply(&on_disk, &merge_text).ok_or_else(|| {
                        ToolError::Disk(format!(
                            "The accepted edit no longer applies to {file}: it changed on disk."
                        ))
                    })?;
                    files::write_atomic(root, &file, &new)?;
                    new
                }
            }
            None => {
                let current = entries::get_entry(scope.conn, scope.run_id, &file)?;
                let old = current
                    .as_ref()
                    .map(|row| row.body.as_str())
                    .unwrap_or_default();
                let Some(new) = merge::apply(old, &merge_text) else {
                    return Ok(());
                };
                new
            }
        };
        write(scope, &file, &new, EntryStatus::Ok, None)?;
        Ok(())
    }
}

impl TypedTool for Set {
    type Input = SetCommand;

    fn input<'c>(&self, command: &'c Command) -> Option<Cow<'c, SetCommand>> {
        match command {
            Command::Set(set) => Some(Cow::Borrowed(set)),
            _ => None,
        }
    }

    fn target(&self, set: &SetCommand) -> String {
        set.path.clone().unwrap_or_default()
    }

    fn amends(&self, set: &SetCommand, proposal: &str) -> bool {
        match set {
            SetCommand {
                path: Some(path),
                preview: false,
                operation: SetRevision::Blocks(_) | SetRevision::Replace(_),
                filter: None,
                ..
            } => is_file(path) && !is_pattern(path, None) && edit::proposal_path(path) == proposal,
            _ => false,
        }
    }

    fn forbids(&self, set: &SetCommand, policy: &ToolPolicy) -> Option<String> {
        let changes_content =
            !matches!(&set.operation, SetRevision::Write(body) if body.is_empty());
        match set.path.as_deref() {
            Some(path) if is_file(path) && changes_content && !set.preview => {
                file_changes_forbidden("set", policy)
            }
            _ => None,
        }
    }

    fn handle(
        &self,
        scope: &mut ToolScope<'_>,
        set: &SetCommand,
        result_path: &str,
    ) -> Result<Handled, ToolError> {
        let Some(path) = non_empty(set.path.as_deref()).map(str::trim) else {
            return fail(
                scope,
                result_path,
                EntryStatus::BadRequest,
                "path is required",
            );
        };
        let filter = non_empty(set.filter.as_deref());
        if set.preview {
            let rows = select(scope, path, filter)?;
            return preview(scope, result_path, "set", path, filter, &rows);
        }
        match &set.operation {
            SetRevision::Blocks(blocks) => edit::run(scope, path, filter, blocks, result_path),
            SetRevision::Replace(block) => edit::run(
                scope,
                path,
                filter,
                std::slice::from_ref(block),
                result_path,
            ),
            SetRevision::Write(body) => match set.fidelity.as_deref() {
                Some(fidelity) if body.is_empty() || !is_file(path) => {
                    change_fidelity(scope, set, path, fidelity, body, result_path)
                }
                _ if is_file(path) => propose_write(scope, path, body, result_path),
                _ => write_entries(scope, set, path, body, result_path),
            },
        }
    }
}

/// Fidelity control: show the targets at `fidelity`, keep `summary` keywords; with content
/// for an entry path, write it at that fidelity.
fn change_fidelity(
    scope: &mut ToolScope<'_>,
    set: &SetCommand,
    path: &str,
    fidelity_text: &str,
    body: &str,
    result_path: &str,
) -> Result<Handled, ToolError> {
    let fidelity = match parse_fidelity(fidelity_text) {
        Ok(fidelity) => fidelity,
        Err(message) => return fail(scope, result_path, EntryStatus::BadRequest, &message),
    };
    let patch = summary_patch(set);
    let filter = non_empty(set.filter.as_deref());
    let mut rows = select(scope, path, filter)?;
    if !body.is_empty() && rows.is_empty() && !is_pattern(path, filter) {
        rows = vec![write_entry(scope, path, body, patch.clone())?];
    } else if !body.is_empty() {
        for row in &rows {
            write_entry(scope, &row.path, body, patch.clone())?;
        }
    }
    if rows.is_empty() {
        return not_found(scope, result_path, path);
    }
    selected::set_fidelity(scope.conn, &rows, fidelity)?;
    if let Some(patch) = &patch {
        for row in &rows {
            entries::update_attributes(scope.conn, scope.run_id, &row.path, patch)?;
        }
    }
    let body = format!("{} set to {fidelity}", paths_of(&rows));
    report(scope, result_path, path, &body)
}

/// A plain write to entries: one path (upsert), or every match of a pattern.
fn write_entries(
    scope: &mut ToolScope<'_>,
    set: &SetCommand,
    path: &str,
    body: &str,
    result_path: &str,
) -> Result<Handled, ToolError> {
    let patch = summary_patch(set);
    let filter = non_empty(set.filter.as_deref());
    if body.is_empty() {
        let Some(patch) = patch else {
            let message = format!(
                "Nothing to write to {path}: give content, an edit, a fidelity or summary \
                 keywords. To remove an entry use <rm path=\"{path}\"/>."
            );
            return fail(scope, result_path, EntryStatus::BadRequest, &message);
        };
        let rows = select(scope, path, filter)?;
        if rows.is_empty() {
            return not_found(scope, result_path, path);
        }
        for row in &rows {
            entries::update_attributes(scope.conn, scope.run_id, &row.path, &patch)?;
        }
        return report(scope, result_path, path, &format!("summary of {path} set"));
    }
    if is_pattern(path, filter) {
        let rows: Vec<EntryRow> = select(scope, path, filter)?
            .into_iter()
            .filter(|row| !is_file(&row.path) && row.status != EntryStatus::Proposed)
            .collect();
        if rows.is_empty() {
            return not_found(scope, result_path, path);
        }
        for row in &rows {
            write_entry(scope, &row.path, body, patch.clone())?;
        }
        let body = listing(&pattern_header("set", path, filter), &rows);
        return report(scope, result_path, path, &body);
    }
    if let Some(existing) = entries::get_entry(scope.conn, scope.run_id, path)? {
        if existing.status == EntryStatus::Proposed {
            let message = format!("{path} is awaiting the user's decision and cannot be written.");
            return fail(scope, result_path, EntryStatus::Conflict, &message);
        }
    }
    let row = write_entry(scope, path, body, patch)?;
    let message = format!("{} written ({} tokens)", row.path, row.tokens_full);
    finish(
        scope,
        result_path,
        EntryStatus::Ok,
        &message,
        Some(json!({ "path": row.path, "body": null })),
    )
}

/// Upserts content at an entry path, keeping its status when it exists.
fn write_entry(
    scope: &mut ToolScope<'_>,
    path: &str,
    body: &str,
    attributes: Option<Value>,
) -> Result<EntryRow, ToolError> {
    let status = entries::get_entry(scope.conn, scope.run_id, path)?
        .map_or(EntryStatus::Ok, |row| row.status);
    write_row(scope, path, body, status, attributes)
}

/// The `summary` keywords of the command as an attribute patch, when it has them.
fn summary_patch(set: &SetCommand) -> Option<Value> {
    summary_attribute(&set.attributes).map(|summary| json!({ "summary": summary }))
}

/// A whole-content write to a project file: a 202 proposal at the result path.
fn propose_write(
    scope: &mut ToolScope<'_>,
    path: &str,
    body: &str,
    result_path: &str,
) -> Result<Handled, ToolError> {
    if is_pattern(path, None) {
        let message = format!("A file write needs one file path, not the pattern {path}.");
        return fail(scope, result_path, EntryStatus::BadRequest, &message);
    }
    if let Some(refusal) = scope.readonly.refusal("set", path) {
        return fail(scope, result_path, EntryStatus::Forbidden, &refusal);
    }
    let old = entries::get_entry(scope.conn, scope.run_id, path)?
        .map(|row| row.body)
        .unwrap_or_default();
    let divisor = scope.settings.token_divisor;
    let attributes = json!({
        "file": path,
        "patch": unified_diff(path, &old, body),
        "merge": merge::whole(body),
        "beforeTokens": estimate_tokens(&old, divisor),
        "afterTokens": estimate_tokens(body, divisor),
        "body": null,
    });
    finish(
        scope,
        result_path,
        EntryStatus::Proposed,
        "",
        Some(attributes),
    )
}

#[cfg(test)]
mod tests;
