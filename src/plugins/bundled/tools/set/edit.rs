//! `set` edits: applied to entries now with hedberg (409 when the SEARCH is missing or
//! ambiguous), proposed for files at `set://<file>` with a unified `patch` and `merge`
//! blocks for the client (202), or 409 there when the edit does not apply.

use serde_json::{json, Value};

use crate::db::enums::EntryStatus;
use crate::db::functions::estimate_tokens;
use crate::db::models::entry::EntryRow;
use crate::db::paths::is_file;
use crate::db::paths::normalize_path;
use crate::db::queries::entries::get_entry;
use crate::db::queries::selected;
use crate::hedberg::{EditBlock, HedbergError};
use crate::plugins::bundled::tools::{fail, merge, select_settled};
use crate::plugins::tool::{Handled, ToolError, ToolScope};
use crate::plugins::writes::{finish, write, write_row};

use super::prepared;

/// Applies `blocks` to every entry `path` selects; proposes them for files.
pub(super) fn run(
    scope: &mut ToolScope<'_>,
    path: &str,
    filter: Option<&str>,
    blocks: &[EditBlock],
    result_path: &str,
) -> Result<Handled, ToolError> {
    let rows = select_settled(scope, path, filter, result_path)?;
    if rows.is_empty() {
        let error =
            format!("{path} not found in context. Load it with <get path=\"{path}\"/> first.");
        let attributes = json!({ "file": path, "error": error });
        return finish(
            scope,
            result_path,
            EntryStatus::NotFound,
            &error,
            Some(attributes),
        );
    }
    let (files, others): (Vec<EntryRow>, Vec<EntryRow>) =
        rows.into_iter().partition(|row| is_file(&row.path));
    if let Some(refusal) = files
        .iter()
        .find_map(|file| scope.readonly.refusal("set", &file.path))
    {
        return fail(scope, result_path, EntryStatus::Forbidden, &refusal);
    }
    let mut outcome: Option<Handled> = None;
    for file in &files {
        let handled = propose(scope, file, blocks, result_path)?;
        outcome.get_or_insert(handled);
    }
    if others.is_empty() {
        let kept_result = outcome
            .as_ref()
            .is_some_and(|handled| handled.path == result_path);
        if !kept_result {
            selected::delete_at(scope.conn, scope.run_id, result_path)?;
        }
        return Ok(outcome.unwrap_or_else(|| Handled::at(result_path)));
    }
    let edited = edit_entries(scope, &others, blocks)?;
    let status = if edited.errors.is_empty() {
        EntryStatus::Ok
    } else {
        EntryStatus::Conflict
    };
    let error = (!edited.errors.is_empty()).then(|| edited.errors.join("\n"));
    let attributes = json!({
        "file": others.iter().map(|row| row.path.as_str()).collect::<Vec<_>>().join(", "),
        "patch": joined(&edited.patches, "\n"),
        "merge": joined(&edited.merges, "\n"),
        "beforeTokens": edited.before_tokens,
        "afterTokens": edited.after_tokens,
        "warning": joined(&edited.warnings, " "),
        "error": error,
    });
    finish(scope, result_path, status, "", Some(attributes))?;
    match (status, outcome) {
        (EntryStatus::Ok, Some(proposal)) => Ok(proposal),
        _ => Ok(Handled::at(result_path)),
    }
}

/// The parts joined, or `null` when there are none.
fn joined(parts: &[String], separator: &str) -> Value {
    if parts.is_empty() {
        Value::Null
    } else {
        Value::String(parts.join(separator))
    }
}

#[derive(Default)]
struct EntryEdits {
    patches: Vec<String>,
    merges: Vec<String>,
    warnings: Vec<String>,
    errors: Vec<String>,
    before_tokens: i32,
    after_tokens: i32,
}

fn edit_entries(
    scope: &mut ToolScope<'_>,
    rows: &[EntryRow],
    blocks: &[EditBlock],
) -> Result<EntryEdits, ToolError> {
    let divisor = scope.settings.token_divisor;
    let mut edits = EntryEdits::default();
    for row in rows {
        edits.before_tokens += estimate_tokens(&row.body, divisor);
        match prepared::edit(&row.path, &row.body, &row.body, blocks) {
            Ok(product) => {
                edits.after_tokens += estimate_tokens(&product.edited.body, divisor);
                edits.warnings.extend(product.edited.warning);
                if let (Some(merge), Some(patch)) = (product.merge, product.patch) {
                    edits.patches.push(patch);
                    edits.merges.push(merge);
                    write(scope, &row.path, &product.edited.body, row.status, None)?;
                }
            }
            Err(HedbergError::WorkLimit(limit)) => return Err(ToolError::WorkLimit(limit)),
            Err(error) => {
                edits.after_tokens += estimate_tokens(&row.body, divisor);
                edits.errors.push(format!("{}: {error}", row.path));
            }
        }
    }
    Ok(edits)
}

/// Where the edit proposal of a project file lives.
pub(super) fn proposal_path(file: &str) -> String {
    normalize_path(&format!("set://{file}"))
}

/// The proposal for one file at `set://<file>`: 202 with the change, or 409 with why not.
/// A proposal made earlier in the same turn is amended: the edit applies on top of it; when
/// it does not apply, the proposal stays and the failure is reported at `result_path`.
fn propose(
    scope: &mut ToolScope<'_>,
    file: &EntryRow,
    blocks: &[EditBlock],
    result_path: &str,
) -> Result<Handled, ToolError> {
    let proposal_path = proposal_path(&file.path);
    let pending = get_entry(scope.conn, scope.run_id, &proposal_path)?
        .filter(|row| row.status == EntryStatus::Proposed && row.turn == scope.turn);
    let proposed = pending
        .as_ref()
        .and_then(|row| merge::apply(&file.body, row.attributes.text("merge")?));
    let current = proposed.as_deref().unwrap_or(&file.body);
    let divisor = scope.settings.token_divisor;
    let before = estimate_tokens(&file.body, divisor);
    let product = match prepared::edit(&file.path, &file.body, current, blocks) {
        Err(HedbergError::WorkLimit(limit)) => return Err(ToolError::WorkLimit(limit)),
        Err(error) if pending.is_some() => {
            let message = format!("{}: {error}", file.path);
            let attributes = json!({ "file": file.path, "error": message });
            return finish(
                scope,
                result_path,
                EntryStatus::Conflict,
                &message,
                Some(attributes),
            );
        }
        product => product,
    };
    let (status, attributes) = match product {
        Ok(product) => match (product.merge, product.patch) {
            (Some(merge), Some(patch)) => (
                EntryStatus::Proposed,
                json!({
                    "file": file.path,
                    "patch": patch,
                    "merge": merge,
                    "beforeTokens": before,
                    "afterTokens": estimate_tokens(&product.edited.body, divisor),
                    "warning": product.edited.warning,
                    "error": null,
                }),
            ),
            _ => (
                EntryStatus::Conflict,
                failure(&file.path, before, "The edit leaves the file unchanged."),
            ),
        },
        Err(error) => (
            EntryStatus::Conflict,
            failure(&file.path, before, &error.to_string()),
        ),
    };
    let row = write_row(scope, &proposal_path, &file.body, status, Some(attributes))?;
    Ok(Handled::at(row.path))
}

fn failure(file: &str, before: i32, error: &str) -> Value {
    json!({
        "file": file,
        "patch": null,
        "merge": null,
        "beforeTokens": before,
        "afterTokens": before,
        "warning": null,
        "error": error,
    })
}
