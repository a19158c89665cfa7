//! Writing what a handler did: entries at the scope's run, loop and turn, the outcome at the
//! result path (done, failed, not found, a preview), and proposals awaiting the client.

use serde_json::{json, Value};

use crate::db::enums::EntryStatus;
use crate::db::models::entry::EntryRow;
use crate::db::paths::result_path as turn_result_path;
use crate::db::queries::entries;
use crate::plugins::bundled::tools::{listing, non_empty, pattern_header};
use crate::plugins::tool::{Handled, ToolError, ToolScope};
use crate::plugins::writes::{finish, write};

/// A failed action: `status`, the message as body and `error` attribute.
pub(crate) fn fail(
    scope: &mut ToolScope<'_>,
    result_path: &str,
    status: EntryStatus,
    message: &str,
) -> Result<Handled, ToolError> {
    finish(
        scope,
        result_path,
        status,
        message,
        Some(json!({ "error": message })),
    )
}

/// A 404: `path` selects nothing.
pub(crate) fn not_found(
    scope: &mut ToolScope<'_>,
    result_path: &str,
    path: &str,
) -> Result<Handled, ToolError> {
    fail(
        scope,
        result_path,
        EntryStatus::NotFound,
        &format!("{path} not found"),
    )
}

/// A 200 outcome about the entries `path` selected, with `path` as attribute.
pub(crate) fn report(
    scope: &mut ToolScope<'_>,
    result_path: &str,
    path: &str,
    body: &str,
) -> Result<Handled, ToolError> {
    finish(
        scope,
        result_path,
        EntryStatus::Ok,
        body,
        Some(json!({ "path": path })),
    )
}

/// `preview`: a 200 listing of what `<tool path filter>` selects, with nothing changed.
pub(crate) fn preview(
    scope: &mut ToolScope<'_>,
    result_path: &str,
    tool: &str,
    path: &str,
    filter: Option<&str>,
    rows: &[EntryRow],
) -> Result<Handled, ToolError> {
    let body = format!(
        "PREVIEW {}",
        listing(&pattern_header(tool, path, filter), rows)
    );
    finish(scope, result_path, EntryStatus::Ok, &body, None)
}

/// A free-text proposal (a command line, a question, a query): 400 with `missing` when
/// the text is empty, else a 202 whose body is the trimmed text, with `attributes` built
/// from it.
pub(crate) fn propose_text(
    scope: &mut ToolScope<'_>,
    result_path: &str,
    text: Option<&str>,
    missing: &str,
    attributes: impl FnOnce(&str) -> Value,
) -> Result<Handled, ToolError> {
    let Some(text) = non_empty(text) else {
        return fail(scope, result_path, EntryStatus::BadRequest, missing);
    };
    let text = text.trim();
    finish(
        scope,
        result_path,
        EntryStatus::Proposed,
        text,
        Some(attributes(text)),
    )
}

/// A 202 proposal for one file of several, at the first free `<tool>://turn_N/<source>`
/// path; returns that path.
pub(crate) fn propose_separately(
    scope: &mut ToolScope<'_>,
    tool: &str,
    source: &str,
    body: &str,
    attributes: Value,
) -> Result<String, ToolError> {
    let target = turn_result_path(tool, scope.turn, source);
    let proposal = entries::free_path(scope.conn, scope.run_id, &target)?;
    write(
        scope,
        &proposal,
        body,
        EntryStatus::Proposed,
        Some(attributes),
    )?;
    Ok(proposal)
}
