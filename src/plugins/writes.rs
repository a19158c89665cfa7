//! The writes a tool's handler makes at its scope's run, loop and turn: an entry (its
//! attributes merged into the stored ones) and the outcome at its result path.

use serde_json::Value;

use crate::db::enums::EntryStatus;
use crate::db::models::entry::{EntryRow, EntryUpsertForm};
use crate::db::queries::entries;
use crate::plugins::tool::{Handled, ToolError, ToolScope};

/// The upsert of `body` at `path` with `status` at the scope's run, loop and turn, keeping
/// the stored fidelity and attributes.
pub(crate) fn upsert(
    scope: &ToolScope<'_>,
    path: &str,
    body: &str,
    status: EntryStatus,
) -> EntryUpsertForm {
    EntryUpsertForm {
        run_id: scope.run_id,
        loop_id: scope.loop_id,
        turn: scope.turn,
        path: path.to_owned(),
        body: body.to_owned(),
        status,
        fidelity: None,
        hash: None,
        attributes: None,
    }
}

/// Writes `body` at `path` with `status`, merging `attributes` into the stored ones.
pub fn write(
    scope: &mut ToolScope<'_>,
    path: &str,
    body: &str,
    status: EntryStatus,
    attributes: Option<Value>,
) -> Result<(), ToolError> {
    let entry = EntryUpsertForm {
        attributes,
        ..upsert(scope, path, body, status)
    };
    Ok(entries::write_entry(scope.conn, &entry)?)
}

/// As [`write`], and returns the entry as stored.
pub(crate) fn write_row(
    scope: &mut ToolScope<'_>,
    path: &str,
    body: &str,
    status: EntryStatus,
    attributes: Option<Value>,
) -> Result<EntryRow, ToolError> {
    let entry = EntryUpsertForm {
        attributes,
        ..upsert(scope, path, body, status)
    };
    Ok(entries::upsert_entry(scope.conn, &entry)?)
}

/// Writes the outcome of an action at its result path (its body, status and attributes
/// merged into the recorded ones) and reports it there.
pub fn finish(
    scope: &mut ToolScope<'_>,
    result_path: &str,
    status: EntryStatus,
    body: &str,
    attributes: Option<Value>,
) -> Result<Handled, ToolError> {
    write(scope, result_path, body, status, attributes)?;
    Ok(Handled::at(result_path))
}

/// Resolves the accepted `proposal` of a tool whose call is made by its gather half, outside
/// the writer: with the call's `(status, body)` when it was made, else as failed.
pub(crate) fn resolve_accepted(
    scope: &mut ToolScope<'_>,
    proposal: &EntryRow,
    made: Option<(EntryStatus, String)>,
) -> Result<(), ToolError> {
    let (status, body) = made.unwrap_or((
        EntryStatus::Failed,
        "the accepted call was not made".to_owned(),
    ));
    entries::resolve_entry(
        scope.conn,
        scope.run_id,
        &proposal.path,
        status,
        Some(&body),
    )?;
    Ok(())
}
