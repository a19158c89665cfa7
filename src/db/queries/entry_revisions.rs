//! A run's entries written since a revision of them, as the triggers of migration
//! `2026-12-28-000000_entry_revisions` stamp them, with the run's counters, in one
//! statement (one snapshot on either store).

use diesel::deserialize::{self, QueryableByName};
use diesel::row::NamedRow;
use diesel::sql_types::{BigInt, Integer, Nullable, Text};
use diesel::RunQueryDsl;

use crate::db::enums::EntryStatus;
use crate::db::ids::{EntryId, RunId};
use crate::db::json::Attributes;
use crate::db::statement::statement;
use crate::db::{Conn, DbError, MultiBackend};

/// One entry written since the revision asked for (columns `run/state` reports).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ChangedEntry {
    pub id: EntryId,
    pub path: String,
    pub body: String,
    /// The scheme, `None` for files.
    pub scheme: Option<String>,
    /// Whether its scheme is registered (`schemes`).
    pub registered: bool,
    pub status: EntryStatus,
    pub attributes: Attributes,
    /// The turn of the last touch.
    pub turn: i32,
}

/// What changed in a run's entries since a revision.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct EntryChanges {
    /// The run's revision now: every write up to it is among `entries` or was before the
    /// revision asked for.
    pub revision: i64,
    /// How many entries the run has lost so far (deleted, or moved to another run).
    pub removed: i64,
    /// How many schemes are registered now.
    pub schemes: i64,
    /// The entries written since, by id.
    pub entries: Vec<ChangedEntry>,
}

/// One row of the statement: the run's counters, and an entry when one changed.
struct ChangeRow {
    revision: i64,
    removed: i64,
    schemes: i64,
    entry: Option<ChangedEntry>,
}

impl QueryableByName<MultiBackend> for ChangeRow {
    fn build<'a>(row: &impl NamedRow<'a, MultiBackend>) -> deserialize::Result<Self> {
        let id = NamedRow::get::<Nullable<BigInt>, Option<i64>>(row, "id")?;
        let entry = match id {
            None => None,
            Some(id) => Some(ChangedEntry {
                id: EntryId(id),
                path: NamedRow::get::<Text, _>(row, "path")?,
                body: NamedRow::get::<Text, _>(row, "body")?,
                scheme: NamedRow::get::<Nullable<Text>, _>(row, "scheme")?,
                registered: NamedRow::get::<Integer, i32>(row, "registered")? != 0,
                status: NamedRow::get::<Integer, _>(row, "status")?,
                attributes: Attributes::by_name(row, "id")?,
                turn: NamedRow::get::<Integer, _>(row, "turn")?,
            }),
        };
        Ok(ChangeRow {
            revision: NamedRow::get::<BigInt, _>(row, "revision_now")?,
            removed: NamedRow::get::<BigInt, _>(row, "removed")?,
            schemes: NamedRow::get::<BigInt, _>(row, "schemes")?,
            entry,
        })
    }
}

/// The schemes the run's log (`v_run_log`) leaves out: the audit copies of what the model
/// saw and said. `reportable!` names the same in SQL (a test holds them together).
pub(crate) const UNLOGGED: [&str; 4] = ["system", "reasoning", "model", "content"];

/// Whether `run/state` may report an entry `e` as it is now: a pending proposal, or an
/// entry of a scheme the log does not leave out (`agent::state::carried` decides; an entry
/// outside this never is reported, so its body is not read).
macro_rules! reportable {
    () => {
        "(e.status = 202 OR e.scheme NOT IN ('system', 'reasoning', 'model', 'content'))"
    };
}

/// The statement, with `$entries` the joins that pick the entries read (`e`).
macro_rules! changes_where {
    ($($entries:tt)+) => {
        concat!(
            "SELECT r.entries_revision AS revision_now, r.entries_removed AS removed, \
                    (SELECT COUNT(*) FROM schemes) AS schemes, \
                    e.id, e.path, e.scheme, e.status, e.attributes, e.turn, \
                    CASE WHEN ",
            reportable!(),
            " THEN e.body ELSE '' END AS body, \
                    CASE WHEN s.name IS NULL THEN 0 ELSE 1 END AS registered \
             FROM runs AS r ",
            $($entries)+,
            " LEFT JOIN schemes AS s ON s.name = e.scheme \
             WHERE r.id = ? ORDER BY e.id"
        )
    };
}

/// The run's entries written after `revision`, whatever they are now (the body only of
/// those `run/state` may report).
pub(crate) fn changed_since(
    conn: &mut Conn,
    run: RunId,
    revision: i64,
) -> Result<EntryChanges, DbError> {
    let rows = statement(changes_where!(
        "LEFT JOIN entry_revisions AS v ON v.run_id = r.id AND v.revision > ? \
         LEFT JOIN known_entries AS e ON e.id = v.entry_id"
    ))
    .bind::<BigInt, _>(revision)
    .bind::<BigInt, _>(run)
    .load::<ChangeRow>(conn)?;
    Ok(collect(rows))
}

/// Every entry of the run `run/state` may report.
pub(crate) fn all_told(conn: &mut Conn, run: RunId) -> Result<EntryChanges, DbError> {
    let rows = statement(changes_where!(
        "LEFT JOIN known_entries AS e ON e.run_id = r.id AND ",
        reportable!()
    ))
    .bind::<BigInt, _>(run)
    .load::<ChangeRow>(conn)?;
    Ok(collect(rows))
}

fn collect(rows: Vec<ChangeRow>) -> EntryChanges {
    let mut changes = EntryChanges {
        revision: 0,
        removed: 0,
        schemes: 0,
        entries: Vec::with_capacity(rows.len()),
    };
    for row in rows {
        changes.revision = row.revision;
        changes.removed = row.removed;
        changes.schemes = row.schemes;
        changes.entries.extend(row.entry);
    }
    changes
}

#[cfg(test)]
mod tests {
    use super::UNLOGGED;

    #[test]
    fn the_sql_leaves_out_of_the_log_the_schemes_rust_does() {
        let listed = UNLOGGED.map(|scheme| format!("'{scheme}'")).join(", ");
        assert!(
            reportable!().contains(&format!("e.scheme NOT IN ({listed})")),
            "{}",
            reportable!()
        );
    }
}
