//! The change log of the known store: what a unit of work did to the runs' entries, for the
//! `entry.changed` event (AGENT §1.5, §9.2).
//!
//! [`record`] gives the writer's connection a temporary table that triggers on
//! `known_entries` fill, so every writer is covered (the query functions, the schema's own
//! triggers, foreign-key cascades) and a rolled-back savepoint or transaction takes its
//! changes with it. On SQLite the triggers are temporary too, the connection's own; on
//! PostgreSQL, which has no temporary triggers, the migrations' trigger logs a change on any
//! connection that has the table (the writer's) and nowhere else. The unit of work [`take`]s them just before it commits and hands them to
//! the [`EntryChangeSink`] once it has.

use std::sync::Arc;

use crate::db::Conn;
use diesel::connection::SimpleConnection;
use diesel::sql_types::{BigInt, Integer, Text};
use diesel::{QueryableByName, RunQueryDsl};

use super::enums::ChangeType;
use super::ids::{EntryId, RunId};
use super::DbError;

/// The log and its triggers, on SQLite. An update is one change, named by the first of: written again
/// (`upsert`), status (`resolve`), fidelity (`promote` to full, `demote` to archive, else
/// `fidelity`), body, attributes, turn alone (`promote`: touched at full fidelity). An
/// update that changes none of these (loop or bookkeeping columns only) is no change; a
/// path that changes is the old path removed and the new one written.
const RECORD: &str = "
CREATE TEMP TABLE IF NOT EXISTS entry_changes (
    id          INTEGER PRIMARY KEY,
    run_id      INTEGER NOT NULL,
    entry_id    INTEGER NOT NULL,
    turn        INTEGER NOT NULL,
    path        TEXT NOT NULL,
    change_type TEXT NOT NULL
);
CREATE TEMP TRIGGER IF NOT EXISTS entry_changes_insert AFTER INSERT ON main.known_entries
BEGIN
    INSERT INTO entry_changes (run_id, entry_id, turn, path, change_type)
    VALUES (NEW.run_id, NEW.id, NEW.turn, NEW.path, 'upsert');
END;
CREATE TEMP TRIGGER IF NOT EXISTS entry_changes_delete AFTER DELETE ON main.known_entries
BEGIN
    INSERT INTO entry_changes (run_id, entry_id, turn, path, change_type)
    VALUES (OLD.run_id, OLD.id, OLD.turn, OLD.path, 'remove');
END;
CREATE TEMP TRIGGER IF NOT EXISTS entry_changes_move AFTER UPDATE ON main.known_entries
WHEN NEW.path <> OLD.path OR NEW.run_id <> OLD.run_id
BEGIN
    INSERT INTO entry_changes (run_id, entry_id, turn, path, change_type)
    VALUES (OLD.run_id, OLD.id, OLD.turn, OLD.path, 'remove');
    INSERT INTO entry_changes (run_id, entry_id, turn, path, change_type)
    VALUES (NEW.run_id, NEW.id, NEW.turn, NEW.path, 'upsert');
END;
CREATE TEMP TRIGGER IF NOT EXISTS entry_changes_update AFTER UPDATE ON main.known_entries
WHEN NEW.path = OLD.path AND NEW.run_id = OLD.run_id
BEGIN
    INSERT INTO entry_changes (run_id, entry_id, turn, path, change_type)
    SELECT NEW.run_id, NEW.id, NEW.turn, NEW.path, change_type FROM (SELECT CASE
        WHEN NEW.write_count <> OLD.write_count THEN 'upsert'
        WHEN NEW.status <> OLD.status THEN 'resolve'
        WHEN NEW.fidelity <> OLD.fidelity THEN
            CASE NEW.fidelity WHEN 'full' THEN 'promote' WHEN 'archive' THEN 'demote'
                ELSE 'fidelity' END
        WHEN NEW.body <> OLD.body THEN 'body'
        WHEN NEW.attributes <> OLD.attributes THEN 'attributes'
        WHEN NEW.turn <> OLD.turn THEN 'promote'
    END AS change_type)
    WHERE change_type IS NOT NULL;
END;
";

/// The log on PostgreSQL; the migrations' `log_entry_change` trigger (the same rules as
/// [`RECORD`]'s, last set by `2026-12-06-000000_entry_change_identity`) writes into it.
const RECORD_POSTGRES: &str = "
CREATE TEMP TABLE IF NOT EXISTS entry_changes (
    id          BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    run_id      BIGINT NOT NULL,
    entry_id    BIGINT NOT NULL,
    turn        INTEGER NOT NULL,
    path        TEXT NOT NULL,
    change_type TEXT NOT NULL
);
";

/// One change to one entry.
#[derive(Debug, Clone, PartialEq, Eq, QueryableByName)]
pub struct EntryChange {
    #[diesel(sql_type = BigInt)]
    pub run_id: RunId,
    /// The entry's row (as it was, when it was removed).
    #[diesel(sql_type = BigInt)]
    pub entry_id: EntryId,
    /// The run-wide turn it was written in (as it was, when it was removed).
    #[diesel(sql_type = Integer)]
    pub turn: i32,
    /// The entry's path (its old path when it moved away or was removed).
    #[diesel(sql_type = Text)]
    pub path: String,
    #[diesel(sql_type = Text)]
    pub change_type: ChangeType,
}

/// Where the writer hands each committed unit's changes, in the order they were made, on its
/// own thread: it must not block.
#[derive(Clone)]
pub struct EntryChangeSink(Arc<Deliver>);

/// What the sink does with a unit's changes.
type Deliver = dyn Fn(&[EntryChange]) + Send + Sync;

impl EntryChangeSink {
    pub fn new(sink: impl Fn(&[EntryChange]) + Send + Sync + 'static) -> Self {
        EntryChangeSink(Arc::new(sink))
    }

    /// Hands over a unit's changes (none: not called).
    pub fn deliver(&self, changes: &[EntryChange]) {
        if !changes.is_empty() {
            (self.0)(changes);
        }
    }
}

impl std::fmt::Debug for EntryChangeSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("EntryChangeSink")
    }
}

/// Starts logging the changes made on `conn` (idempotent).
pub(crate) fn record(conn: &mut Conn) -> Result<(), DbError> {
    let record = match conn {
        Conn::Sqlite(_) => RECORD,
        Conn::Postgres(_) => RECORD_POSTGRES,
    };
    conn.batch_execute(record)?;
    Ok(())
}

/// The changes logged on `conn` since the last call, oldest first, and empties the log. Inside
/// the unit's transaction, so a failed commit keeps nothing.
pub(crate) fn take(conn: &mut Conn) -> Result<Vec<EntryChange>, DbError> {
    let changes: Vec<EntryChange> =
        // Unqualified: both backends look in the connection's temporary tables first.
        diesel::sql_query(
            "SELECT run_id, entry_id, turn, path, change_type FROM entry_changes ORDER BY id",
        )
        .load(conn)?;
    if !changes.is_empty() {
        diesel::sql_query("DELETE FROM entry_changes").execute(conn)?;
    }
    Ok(changes)
}

#[cfg(test)]
mod tests;
