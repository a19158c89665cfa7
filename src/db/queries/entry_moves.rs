//! Copying and moving entries within a run, and copying a whole store into a fork.

use crate::db::statement::statement;
use crate::db::Conn;
use diesel::prelude::*;
use diesel::sql_types::{BigInt, Integer, Nullable, Text};

use crate::db::ids::{LoopId, RunId};
use crate::db::models::entry::EntryRow;
use crate::db::paths::normalize_path;
use crate::db::DbError;

/// Where a copy or move lands and who wrote it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct EntryTransfer {
    /// The run both entries belong to.
    pub run_id: RunId,
    /// Source path (normalised).
    pub from: String,
    /// Destination path (normalised); an existing entry there is overwritten.
    pub to: String,
    pub loop_id: Option<LoopId>,
    pub turn: i32,
}

/// Copies body, status, fidelity, hash and attributes of `from` to `to`; returns the copy.
pub(crate) fn copy_entry(conn: &mut Conn, transfer: &EntryTransfer) -> Result<EntryRow, DbError> {
    let from = normalize_path(&transfer.from);
    statement(
        "INSERT INTO known_entries (run_id, loop_id, turn, path, body, status, fidelity, hash, attributes)
         SELECT run_id, ?, ?, ?, body, status, fidelity, hash, attributes
         FROM known_entries WHERE run_id = ? AND path = ?
         ON CONFLICT (run_id, path) DO UPDATE SET
             loop_id = excluded.loop_id,
             turn = excluded.turn,
             body = excluded.body,
             status = excluded.status,
             fidelity = excluded.fidelity,
             hash = excluded.hash,
             attributes = excluded.attributes,
             write_count = known_entries.write_count + 1,
             updated_at = datetime('now')
         RETURNING *",
    )
    .bind::<Nullable<BigInt>, _>(transfer.loop_id)
    .bind::<Integer, _>(transfer.turn)
    .bind::<Text, _>(normalize_path(&transfer.to))
    .bind::<BigInt, _>(transfer.run_id)
    .bind::<Text, _>(&from)
    .get_result(conn)
    .optional()?
    .ok_or_else(|| DbError::NotFound(format!("entry {from}")))
}

/// Copies every entry of `from` into `to` (loop cleared, turns kept); returns the count.
pub(crate) fn copy_run_entries(conn: &mut Conn, from: RunId, to: RunId) -> Result<usize, DbError> {
    Ok(statement(
        "INSERT INTO known_entries
             (run_id, loop_id, turn, path, body, status, fidelity, hash, attributes, refs,
              write_count, created_at, updated_at)
         SELECT ?, NULL, turn, path, body, status, fidelity, hash, attributes, refs,
                write_count, created_at, updated_at
         FROM known_entries WHERE run_id = ? ORDER BY id",
    )
    .bind::<BigInt, _>(to)
    .bind::<BigInt, _>(from)
    .execute(conn)?)
}
