//! A turn's audit copies written in one statement ([`write_archived`]): on PostgreSQL each
//! statement is a round trip, and a turn writes up to six copies.

use diesel::sql_types::{BigInt, Integer, Nullable, Text};
use diesel::RunQueryDsl;

use crate::db::enums::EntryStatus;
use crate::db::ids::{LoopId, RunId};
use crate::db::paths::normalize_path;
use crate::db::statement::statement;
use crate::db::{Conn, DbError};

/// One row of [`write_archived`]'s insert: run, loop, turn, path, body, status.
macro_rules! archived_row {
    () => {
        "(?, ?, ?, ?, ?, ?, 'archive', '{}')"
    };
}

/// [`write_archived`]'s insert of the rows given: each path new is inserted at archive
/// fidelity, each existing one written again as `upsert_sql` writes an entry whose form
/// sets archive fidelity and no hash or attributes.
macro_rules! archived_sql {
    ($($rows:expr),+) => {
        concat!(
            "INSERT INTO known_entries (run_id, loop_id, turn, path, body, status, fidelity, attributes) VALUES ",
            $($rows),+,
            " ON CONFLICT (run_id, path) DO UPDATE SET
                 loop_id = excluded.loop_id,
                 turn = excluded.turn,
                 body = excluded.body,
                 status = excluded.status,
                 fidelity = excluded.fidelity,
                 write_count = known_entries.write_count + 1,
                 updated_at = datetime('now')"
        )
    };
}

/// [`archived_sql`] for 1 to 6 rows, by count less one.
const ARCHIVED: [&str; 6] = [
    archived_sql!(archived_row!()),
    archived_sql!(archived_row!(), ", ", archived_row!()),
    archived_sql!(
        archived_row!(),
        ", ",
        archived_row!(),
        ", ",
        archived_row!()
    ),
    archived_sql!(
        archived_row!(),
        ", ",
        archived_row!(),
        ", ",
        archived_row!(),
        ", ",
        archived_row!()
    ),
    archived_sql!(
        archived_row!(),
        ", ",
        archived_row!(),
        ", ",
        archived_row!(),
        ", ",
        archived_row!(),
        ", ",
        archived_row!()
    ),
    archived_sql!(
        archived_row!(),
        ", ",
        archived_row!(),
        ", ",
        archived_row!(),
        ", ",
        archived_row!(),
        ", ",
        archived_row!(),
        ", ",
        archived_row!()
    ),
];

/// Writes each `(path, body)` of `copies` as run `run`'s entry at archive fidelity, written
/// in loop `loop_id` at turn `turn` (a turn's audit copies): what `write_entry` writes for
/// each, in one statement per six (one round trip instead of one each).
pub(crate) fn write_archived(
    conn: &mut Conn,
    run: RunId,
    loop_id: Option<LoopId>,
    turn: i32,
    copies: &[(String, String)],
) -> Result<(), DbError> {
    for chunk in copies.chunks(ARCHIVED.len()) {
        let mut insert = statement(ARCHIVED[chunk.len() - 1]);
        for (path, body) in chunk {
            insert = insert
                .bind::<BigInt, _>(run)
                .bind::<Nullable<BigInt>, _>(loop_id)
                .bind::<Integer, _>(turn)
                .bind::<Text, _>(normalize_path(path))
                .bind::<Text, _>(body.as_str())
                .bind::<Integer, _>(EntryStatus::Ok);
        }
        insert.execute(conn)?;
    }
    Ok(())
}
