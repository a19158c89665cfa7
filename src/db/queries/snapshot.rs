//! The per-turn snapshot of what the model saw (`turn_context`), stored as differences: a
//! turn writes the rows new or changed since the run's previous snapshot (`set`) and marks
//! the rows that left the context (`removed`); snapshots written before differences are
//! whole (`whole`). The reader rebuilds a turn's snapshot from the latest whole one at or
//! before it (none: the run's start) and the differences after it, and puts the rows in
//! context order again, since a row's position moves whenever a row before it comes or goes.

use std::collections::HashMap;

use diesel::dsl::max;
use diesel::prelude::*;

use crate::db::backend::per_backend;
use crate::db::enums::{Category, Fidelity};
use crate::db::ids::RunId;
use crate::db::models::entry::{SnapshotRow, TurnContextInsertForm};
use crate::db::schema::turn_context;
use crate::db::Conn;
use crate::db::DbError;

/// A row of a turn's entire snapshot (written before differences).
pub(crate) const WHOLE: &str = "whole";
/// A row new or changed since the run's previous snapshot.
pub(crate) const SET: &str = "set";
/// A row that left the context since the run's previous snapshot.
pub(crate) const REMOVED: &str = "removed";

/// Inserts a turn's difference `rows`.
pub(crate) fn insert_turn_context(
    conn: &mut Conn,
    rows: &[TurnContextInsertForm],
) -> Result<usize, DbError> {
    if rows.is_empty() {
        return Ok(0);
    }
    Ok(per_backend!(conn, |conn| diesel::insert_into(
        turn_context::table
    )
    .values(rows)
    .execute(conn))?)
}

/// Deletes what turn `turn` stored (a turn prepared again replaces its own difference).
pub(crate) fn delete_turn_context(
    conn: &mut Conn,
    run_id: RunId,
    turn: i32,
) -> Result<usize, DbError> {
    Ok(diesel::delete(
        turn_context::table
            .filter(turn_context::run_id.eq(run_id))
            .filter(turn_context::turn.eq(turn)),
    )
    .execute(conn)?)
}

/// The snapshot of turn `turn` (for a turn that stored none, the run's latest before it),
/// in context order, each row's ordinal its position.
pub(crate) fn turn_context(
    conn: &mut Conn,
    run_id: RunId,
    turn: i32,
) -> Result<Vec<SnapshotRow>, DbError> {
    let whole: Option<i32> = turn_context::table
        .filter(turn_context::run_id.eq(run_id))
        .filter(turn_context::turn.le(turn))
        .filter(turn_context::change.eq(WHOLE))
        .select(max(turn_context::turn))
        .first(conn)?;
    let stored: Vec<(String, SnapshotRow)> = turn_context::table
        .filter(turn_context::run_id.eq(run_id))
        .filter(turn_context::turn.ge(whole.unwrap_or(0)))
        .filter(turn_context::turn.le(turn))
        .order((turn_context::turn, turn_context::id))
        .select((turn_context::change, SnapshotRow::as_select()))
        .load(conn)?;
    let mut rows: HashMap<String, SnapshotRow> = HashMap::new();
    for (change, row) in stored {
        if change == REMOVED {
            rows.remove(&row.path);
        } else {
            rows.insert(row.path.clone(), row);
        }
    }
    let mut rows: Vec<SnapshotRow> = rows.into_values().collect();
    rows.sort_by_cached_key(context_order);
    for (position, row) in rows.iter_mut().enumerate() {
        row.ordinal = i32::try_from(position + 1).unwrap_or(i32::MAX);
    }
    Ok(rows)
}

/// `v_model_context`'s order (section, skills first, fidelity group, turn, insertion), then
/// the stored position for whole snapshots, whose rows carry no entry.
fn context_order(row: &SnapshotRow) -> (u8, u8, u8, i32, Option<i64>, i32) {
    let section = match row.category {
        Category::Data => 2,
        Category::Logging => 3,
        Category::Unknown => 4,
        Category::Prompt | Category::Audit | Category::Memory => 5,
    };
    let skill = u8::from(row.scheme.as_deref() != Some("skill"));
    let fidelity = match row.fidelity {
        Fidelity::Index => 0,
        Fidelity::Summary => 1,
        Fidelity::Full | Fidelity::Archive => 2,
    };
    (
        section,
        skill,
        fidelity,
        row.source_turn,
        row.entry_id.map(|id| id.0),
        row.ordinal,
    )
}
