//! What a run changed in its project's files (`file_changes`): one row per file an accepted
//! proposal changed, written in the resolution's unit of work, read by `run/changes` and
//! `run/revert` (`agent::changes`).

use diesel::prelude::*;
use diesel::sql_types::{BigInt, Integer, Nullable, Text};

use crate::db::ids::{LoopId, RunId};
use crate::db::statement::statement;
use crate::db::{Conn, DbError};

/// One file an accepted proposal changed.
#[derive(Debug, Clone, PartialEq, Eq, QueryableByName)]
pub(crate) struct FileChangeRow {
    #[diesel(sql_type = BigInt)]
    pub id: i64,
    /// The loop that proposed it (`None`: a client's proposal, a revert).
    #[diesel(sql_type = Nullable<BigInt>)]
    pub loop_id: Option<LoopId>,
    #[diesel(sql_type = Integer)]
    pub turn: i32,
    /// The proposal's entry path.
    #[diesel(sql_type = Text)]
    pub proposal: String,
    /// The file, relative to the project root.
    #[diesel(sql_type = Text)]
    pub file: String,
    /// Its content before and after (`None`: it did not exist).
    #[diesel(sql_type = Nullable<Text>)]
    pub before: Option<String>,
    #[diesel(sql_type = Nullable<Text>)]
    pub after: Option<String>,
    /// Who accepted it (`None`: the operator).
    #[diesel(sql_type = Nullable<Text>)]
    pub person: Option<String>,
    /// `YYYY-MM-DD HH:MM:SS` UTC.
    #[diesel(sql_type = Text)]
    pub created_at: String,
}

/// One change to record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FileChangeForm<'a> {
    pub run_id: RunId,
    pub loop_id: Option<LoopId>,
    pub turn: i32,
    pub proposal: &'a str,
    pub file: &'a str,
    pub before: Option<&'a str>,
    pub after: Option<&'a str>,
    pub person: Option<&'a str>,
}

/// Records one change.
pub(crate) fn record(conn: &mut Conn, form: &FileChangeForm<'_>) -> Result<(), DbError> {
    statement(
        "INSERT INTO file_changes (run_id, loop_id, turn, proposal, file, before, after, person) \
         VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
    )
    .bind::<BigInt, _>(form.run_id)
    .bind::<Nullable<BigInt>, _>(form.loop_id)
    .bind::<Integer, _>(form.turn)
    .bind::<Text, _>(form.proposal)
    .bind::<Text, _>(form.file)
    .bind::<Nullable<Text>, _>(form.before)
    .bind::<Nullable<Text>, _>(form.after)
    .bind::<Nullable<Text>, _>(form.person)
    .execute(conn)?;
    Ok(())
}

/// The run's changes, oldest first.
pub(crate) fn of_run(conn: &mut Conn, run: RunId) -> Result<Vec<FileChangeRow>, DbError> {
    Ok(statement(
        "SELECT id, loop_id, turn, proposal, file, before, after, person, created_at \
         FROM file_changes WHERE run_id = ? ORDER BY id",
    )
    .bind::<BigInt, _>(run)
    .load(conn)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::testing::{sample_loop, sample_run, TestDb};

    #[test]
    fn changes_come_back_in_order_for_their_run_only() {
        let mut db = TestDb::new();
        let run = sample_run(&mut db.conn);
        let other = sample_run(&mut db.conn);
        let lp = sample_loop(&mut db.conn, run.id, "");
        for (run_id, file, before, after) in [
            (run.id, "a.txt", None, Some("a\n")),
            (other.id, "b.txt", Some("b"), None),
            (run.id, "a.txt", Some("a\n"), Some("aa\n")),
        ] {
            record(
                &mut db.conn,
                &FileChangeForm {
                    run_id,
                    loop_id: Some(lp.id),
                    turn: 2,
                    proposal: "set://a.txt",
                    file,
                    before,
                    after,
                    person: Some("bo"),
                },
            )
            .unwrap();
        }
        let rows = of_run(&mut db.conn, run.id).unwrap();
        let seen: Vec<_> = rows
            .iter()
            .map(|row| {
                (
                    row.file.as_str(),
                    row.before.as_deref(),
                    row.after.as_deref(),
                )
            })
            .collect();
        assert_eq!(
            seen,
            [
                ("a.txt", None, Some("a\n")),
                ("a.txt", Some("a\n"), Some("aa\n"))
            ]
        );
        assert_eq!(rows[0].loop_id, Some(lp.id));
        assert_eq!(rows[0].person.as_deref(), Some("bo"));
    }
}
