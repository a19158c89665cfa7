//! Materialization: the run's visible entries, projected, counted and snapshotted.
//!
//! `v_model_context` decides what is visible and in which order (sections, skills first,
//! fidelity groups, then chronological by turn and insertion). Each row is projected through
//! the registry's view for its scheme and fidelity; its tokens are counted on the projected
//! text, never on the raw body. The projected rows are written to `turn_context` so the
//! snapshot of a turn is exactly what its packet was built from.

use crate::db::Conn;
use serde_json::{Map, Value};

use super::view::EntryView;
use super::TokenMath;
use crate::db::enums::{Category, EntryStatus, Fidelity};
use crate::db::ids::{EntryId, LoopId, RunId};
use crate::db::models::entry::{ModelContextRow, TurnContextInsertForm};
use crate::db::queries::context::{insert_turn_context, model_context, replace_turn_context};
use crate::db::DbError;

/// Projects one visible entry into the text the model reads (the tool registry's views).
pub(crate) trait Projector: Send + Sync {
    /// The projected text of `entry` at its fidelity.
    fn project(&self, entry: &EntryView<'_>) -> String;
}

/// One visible entry as the model sees it this turn.
#[derive(Debug, Clone, PartialEq)]
pub struct ContextRow {
    /// The store entry it comes from (creation order).
    pub entry_id: EntryId,
    /// 1-based position in context order.
    pub ordinal: i32,
    /// Normalized entry path.
    pub path: String,
    /// The scheme, `None` for a bare file path.
    pub scheme: Option<String>,
    pub status: EntryStatus,
    /// Visible fidelity (never archive).
    pub fidelity: Fidelity,
    /// The section it belongs to.
    pub category: Category,
    pub attributes: Map<String, Value>,
    /// The turn of the entry's last touch.
    pub source_turn: i32,
    /// The projected text.
    pub body: String,
    /// Tokens of the projected text (the display measure of `tokens="…"`).
    pub tokens: i64,
}

impl ContextRow {
    /// The scheme name used for tags and plugins: `file` for bare paths.
    pub fn tag(&self) -> &str {
        self.scheme.as_deref().unwrap_or("file")
    }

    /// Whether this is an entry of `scheme`.
    pub fn has_scheme(&self, scheme: &str) -> bool {
        self.scheme.as_deref() == Some(scheme)
    }

    /// A string attribute, when present.
    pub fn attribute(&self, name: &str) -> Option<&str> {
        self.attributes.get(name).and_then(Value::as_str)
    }
}

/// Reads the run's visible rows in context order and projects each one.
pub(crate) fn read_context(
    conn: &mut Conn,
    run_id: RunId,
    projector: &dyn Projector,
    tokens: TokenMath,
) -> Result<Vec<ContextRow>, DbError> {
    let rows = model_context(conn, run_id)?;
    Ok(rows
        .into_iter()
        .map(|row| project_row(row, projector, tokens))
        .collect())
}

/// Replaces the `turn_context` snapshot of `turn` with `rows`; returns the rows stored.
pub(crate) fn store_context(
    conn: &mut Conn,
    run_id: RunId,
    loop_id: Option<LoopId>,
    turn: i32,
    rows: &[ContextRow],
) -> Result<usize, DbError> {
    let forms = snapshot_forms(run_id, loop_id, turn, rows);
    replace_turn_context(conn, run_id, turn, &forms)
}

/// The `turn_context` rows of `rows` as the snapshot of `turn`.
fn snapshot_forms(
    run_id: RunId,
    loop_id: Option<LoopId>,
    turn: i32,
    rows: &[ContextRow],
) -> Vec<TurnContextInsertForm> {
    rows.iter()
        .map(|row| TurnContextInsertForm {
            run_id,
            loop_id,
            turn,
            ordinal: row.ordinal,
            path: row.path.clone(),
            status: row.status,
            fidelity: row.fidelity,
            body: row.body.clone(),
            tokens: i32::try_from(row.tokens).unwrap_or(i32::MAX),
            attributes: Value::Object(row.attributes.clone()).to_string(),
            category: row.category,
            source_turn: row.source_turn,
        })
        .collect()
}

/// Which snapshot a materialization writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Snapshot {
    /// The first of a turn numbered in the same unit of work: inserted, nothing replaced.
    First,
    /// Another of a turn prepared again (a panic loop's continuation, a paused turn taken
    /// up): the turn's earlier snapshot replaced.
    Again,
}

/// Reads and projects the run's context, then stores it as the snapshot of `turn`
/// (`snapshot` says whether the turn has one to replace).
pub(crate) fn materialize_turn(
    conn: &mut Conn,
    target: TurnTarget,
    snapshot: Snapshot,
    projector: &dyn Projector,
    tokens: TokenMath,
) -> Result<Vec<ContextRow>, DbError> {
    if snapshot == Snapshot::Again {
        return materialize(conn, target, projector, tokens);
    }
    let rows = read_context(conn, target.run_id, projector, tokens)?;
    let forms = snapshot_forms(target.run_id, target.loop_id, target.turn, &rows);
    insert_turn_context(conn, &forms)?;
    Ok(rows)
}

/// Reads and projects the run's context, then stores it as the snapshot of `turn`.
pub(crate) fn materialize(
    conn: &mut Conn,
    target: TurnTarget,
    projector: &dyn Projector,
    tokens: TokenMath,
) -> Result<Vec<ContextRow>, DbError> {
    let rows = read_context(conn, target.run_id, projector, tokens)?;
    store_context(conn, target.run_id, target.loop_id, target.turn, &rows)?;
    Ok(rows)
}

/// The turn a snapshot belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TurnTarget {
    pub run_id: RunId,
    /// The loop the turn belongs to.
    pub loop_id: Option<LoopId>,
    /// The run-wide turn number N.
    pub turn: i32,
}

fn project_row(row: ModelContextRow, projector: &dyn Projector, tokens: TokenMath) -> ContextRow {
    let attributes = row.attributes.0;
    let view = EntryView {
        path: &row.path,
        scheme: row.scheme.as_deref(),
        status: row.status,
        fidelity: row.fidelity,
        category: row.category,
        body: &row.body,
        attributes: &attributes,
        turn: i64::from(row.turn),
    };
    let body = projector.project(&view);
    ContextRow {
        entry_id: row.entry_id,
        ordinal: i32::try_from(row.ordinal).unwrap_or(i32::MAX),
        tokens: tokens.count(&body),
        body,
        path: row.path,
        scheme: row.scheme,
        status: row.status,
        fidelity: row.fidelity,
        category: row.category,
        attributes,
        source_turn: row.turn,
    }
}

#[cfg(test)]
mod tests;
