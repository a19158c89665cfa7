//! A turn's snapshot written as its difference from the run's previous one
//! ([`crate::db::queries::snapshot`]): only the rows new or changed since then, and a mark
//! for each row that left the context. The previous snapshot comes from what the run's actor
//! holds ([`LatestSnapshot`]) when that is the run's latest turn's, otherwise (the actor new
//! after a restart, another instance drove the run meanwhile, a turn prepared again) it is
//! read back from the store.

use std::collections::{HashMap, HashSet};
use std::sync::{Mutex, PoisonError};

use serde_json::Value;

use super::ContextRow;
use crate::db::ids::{LoopId, RunId};
use crate::db::models::entry::{SnapshotRow, TurnContextInsertForm};
use crate::db::queries::snapshot::{insert_turn_context, turn_context, REMOVED, SET};
use crate::db::{Conn, DbError};

/// A snapshot by path.
type ByPath = HashMap<String, SnapshotRow>;

/// The run's latest snapshot as far as its actor knows: the turn that stored it and its
/// rows, noted once that turn's unit of work committed.
#[derive(Default)]
pub(crate) struct LatestSnapshot(Mutex<Option<(i32, ByPath)>>);

impl LatestSnapshot {
    /// Notes that `turn`'s snapshot, now stored, is `rows`.
    pub(crate) fn note(&self, turn: i32, rows: Vec<SnapshotRow>) {
        let rows = rows
            .into_iter()
            .map(|row| (row.path.clone(), row))
            .collect();
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = Some((turn, rows));
    }
}

/// The rows of a snapshot as the store keeps them.
pub(crate) fn snapshot_rows(rows: &[ContextRow]) -> Vec<SnapshotRow> {
    rows.iter()
        .map(|row| SnapshotRow {
            entry_id: Some(row.entry_id),
            ordinal: row.ordinal,
            path: row.path.clone(),
            scheme: row.scheme.clone(),
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

/// Where a turn's difference is taken from.
#[derive(Clone, Copy)]
pub(crate) enum Previous<'a> {
    /// The run's latest turn before this one (`None`: this is its first) and what the actor
    /// holds.
    Latest(Option<i32>, &'a LatestSnapshot),
    /// Read back from the store.
    Stored,
}

/// Stores `now`, turn `turn`'s snapshot, as its difference from the snapshot before it;
/// returns the rows written.
pub(crate) fn store_difference(
    conn: &mut Conn,
    (run_id, loop_id, turn): (RunId, Option<LoopId>, i32),
    now: &[SnapshotRow],
    previous: Previous<'_>,
) -> Result<usize, DbError> {
    let form = |row: &SnapshotRow, change: &str| TurnContextInsertForm {
        run_id,
        loop_id,
        turn,
        ordinal: row.ordinal,
        path: row.path.clone(),
        status: row.status,
        fidelity: row.fidelity,
        body: row.body.clone(),
        tokens: row.tokens,
        attributes: row.attributes.clone(),
        category: row.category,
        source_turn: row.source_turn,
        change: change.to_owned(),
        entry_id: row.entry_id,
    };
    let difference = |before: &ByPath| {
        let mut forms: Vec<TurnContextInsertForm> = now
            .iter()
            .filter(|row| !before.get(&row.path).is_some_and(|had| had.unchanged(row)))
            .map(|row| form(row, SET))
            .collect();
        let kept: HashSet<&str> = now.iter().map(|row| row.path.as_str()).collect();
        forms.extend(
            before
                .values()
                .filter(|row| !kept.contains(row.path.as_str()))
                .map(|row| form(row, REMOVED)),
        );
        forms
    };
    let forms = match previous {
        Previous::Latest(latest, held) => {
            let held = held.0.lock().unwrap_or_else(PoisonError::into_inner);
            match held.as_ref() {
                Some((noted, rows)) if Some(*noted) == latest => difference(rows),
                _ if latest.is_none() => difference(&ByPath::new()),
                _ => difference(&stored_before(conn, run_id, turn)?),
            }
        }
        Previous::Stored => difference(&stored_before(conn, run_id, turn)?),
    };
    insert_turn_context(conn, &forms)
}

/// The run's snapshot before turn `turn`, read back from the store.
fn stored_before(conn: &mut Conn, run_id: RunId, turn: i32) -> Result<ByPath, DbError> {
    Ok(turn_context(conn, run_id, turn - 1)?
        .into_iter()
        .map(|row| (row.path.clone(), row))
        .collect())
}
