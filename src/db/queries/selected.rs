//! Operations on entries a tool already selected, by id (or on the one entry at a path), in
//! statements of at most `IDS_PER_STATEMENT` ids.

use crate::db::Conn;
use diesel::dsl::sql;
use diesel::prelude::*;
use diesel::sql_types::Text;

use super::entries;
use crate::db::enums::Fidelity;
use crate::db::ids::{EntryId, RunId};
use crate::db::models::entry::EntryRow;
use crate::db::schema::known_entries;
use crate::db::DbError;

/// Ids per statement, well under SQLite's bind limit.
const IDS_PER_STATEMENT: usize = 5_000;

fn ids(rows: &[EntryRow]) -> Vec<EntryId> {
    rows.iter().map(|row| row.id).collect()
}

/// Brings the rows to full fidelity, touched at `turn`.
pub(crate) fn promote(conn: &mut Conn, rows: &[EntryRow], turn: i32) -> Result<(), DbError> {
    for chunk in ids(rows).chunks(IDS_PER_STATEMENT) {
        diesel::update(known_entries::table.filter(known_entries::id.eq_any(chunk)))
            .set((
                known_entries::fidelity.eq(Fidelity::Full),
                known_entries::turn.eq(turn),
                known_entries::updated_at.eq(sql::<Text>("datetime('now')")),
            ))
            .execute(conn)?;
    }
    Ok(())
}

/// Sets the rows' fidelity; the turn is not touched.
pub(crate) fn set_fidelity(
    conn: &mut Conn,
    rows: &[EntryRow],
    fidelity: Fidelity,
) -> Result<(), DbError> {
    for chunk in ids(rows).chunks(IDS_PER_STATEMENT) {
        diesel::update(known_entries::table.filter(known_entries::id.eq_any(chunk)))
            .set((
                known_entries::fidelity.eq(fidelity),
                known_entries::updated_at.eq(sql::<Text>("datetime('now')")),
            ))
            .execute(conn)?;
    }
    Ok(())
}

pub(crate) fn delete(conn: &mut Conn, rows: &[EntryRow]) -> Result<(), DbError> {
    for chunk in ids(rows).chunks(IDS_PER_STATEMENT) {
        diesel::delete(known_entries::table.filter(known_entries::id.eq_any(chunk)))
            .execute(conn)?;
    }
    Ok(())
}

/// Deletes the run's entry at `path`, when there is one.
pub(crate) fn delete_at(conn: &mut Conn, run_id: RunId, path: &str) -> Result<(), DbError> {
    match entries::get_entry(conn, run_id, path)? {
        Some(entry) => delete(conn, std::slice::from_ref(&entry)),
        None => Ok(()),
    }
}
