//! Materialization: the run's visible entries, projected, counted and snapshotted.
//!
//! `v_model_context` decides what is visible and in which order (sections, skills first,
//! fidelity groups, then chronological by turn and insertion). Each row is projected through
//! the registry's view for its scheme and fidelity; its tokens are counted on the projected
//! text, never on the raw body. The projected rows are stored in `turn_context`, as the
//! difference from the run's previous snapshot ([`super::snapshot`]), so the snapshot of a
//! turn rebuilt from it is exactly what its packet was built from.

use crate::db::Conn;
use serde_json::{Map, Value};

use super::snapshot::{snapshot_rows, store_difference, LatestSnapshot, Previous};
use super::view::EntryView;
use super::TokenMath;
use crate::db::enums::{Category, EntryStatus, Fidelity};
use crate::db::ids::{EntryId, LoopId, RunId};
use crate::db::models::entry::{ModelContextRow, SnapshotRow};
use crate::db::queries::context::model_context;
use crate::db::queries::snapshot::delete_turn_context;
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

/// Which snapshot a materialization writes.
#[derive(Clone, Copy)]
pub(crate) enum Snapshot<'a> {
    /// The first of a turn numbered in the same unit of work: its difference from the run's
    /// latest turn's snapshot (`None`: there is none), taken from `held` when it holds that
    /// one.
    First {
        latest: Option<i32>,
        held: &'a LatestSnapshot,
    },
    /// Another of a turn prepared again (a panic loop's continuation, a paused turn taken
    /// up): the turn's earlier difference replaced.
    Again,
}

/// A turn's context, projected and stored.
pub(crate) struct Materialized {
    /// The visible entries, in context order.
    pub rows: Vec<ContextRow>,
    /// The same rows as the snapshot keeps them (what the actor notes once stored).
    pub snapshot: Vec<SnapshotRow>,
}

/// Reads and projects the run's context, then stores it as the snapshot of `turn`, as its
/// difference from the one before (`snapshot` says where that comes from).
pub(crate) fn materialize_turn(
    conn: &mut Conn,
    target: TurnTarget,
    snapshot: Snapshot<'_>,
    projector: &dyn Projector,
    tokens: TokenMath,
) -> Result<Materialized, DbError> {
    let previous = match snapshot {
        Snapshot::First { latest, held } => Previous::Latest(latest, held),
        Snapshot::Again => {
            delete_turn_context(conn, target.run_id, target.turn)?;
            Previous::Stored
        }
    };
    let rows = read_context(conn, target.run_id, projector, tokens)?;
    let snapshot = snapshot_rows(&rows);
    let place = (target.run_id, target.loop_id, target.turn);
    store_difference(conn, place, &snapshot, previous)?;
    Ok(Materialized { rows, snapshot })
}

/// Reads and projects the run's context, then stores it as the snapshot of `turn` (the
/// turn's earlier one replaced), taking the one before from the store (the tests' and the
/// benchmarks' way in).
#[cfg(any(test, feature = "testing"))]
pub(crate) fn materialize(
    conn: &mut Conn,
    target: TurnTarget,
    projector: &dyn Projector,
    tokens: TokenMath,
) -> Result<Vec<ContextRow>, DbError> {
    Ok(materialize_turn(conn, target, Snapshot::Again, projector, tokens)?.rows)
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
