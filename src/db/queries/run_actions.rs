//! Who resolved a run's proposals and aborted its loops (`run_actions`), and who queued
//! its loops, for `getRun`.

use crate::db::Conn;
use diesel::prelude::*;
use diesel::sql_types::{BigInt, Integer};

use crate::db::ids::RunId;
use crate::db::models::run::{LoopRow, RunActionForm, RunActionRow};
use crate::db::schema::{loops, run_actions};
use crate::db::statement::statement;
use crate::db::DbError;

/// Records one action.
pub(crate) fn record(conn: &mut Conn, form: &RunActionForm) -> Result<(), DbError> {
    diesel::insert_into(run_actions::table)
        .values(form)
        .execute(conn)?;
    Ok(())
}

/// The run's actions, oldest first.
pub(crate) fn of_run(conn: &mut Conn, run: RunId) -> Result<Vec<RunActionRow>, DbError> {
    Ok(run_actions::table
        .filter(run_actions::run_id.eq(run))
        .order(run_actions::id)
        .select(RunActionRow::as_select())
        .load(conn)?)
}

/// Whether a proposal the run made after its turn `turn` was accepted.
pub(crate) fn accepted_after(conn: &mut Conn, run: RunId, turn: i32) -> Result<bool, DbError> {
    let accepted: Accepted = statement(
        "SELECT count(*) AS found FROM (SELECT 1 AS one FROM run_actions AS a \
         JOIN known_entries AS e ON e.run_id = a.run_id AND e.path = a.path \
         WHERE a.run_id = ? AND a.action = 'accept' AND e.turn > ? LIMIT 1) AS hit",
    )
    .bind::<BigInt, _>(run)
    .bind::<Integer, _>(turn)
    .get_result(conn)?;
    Ok(accepted.found > 0)
}

#[derive(QueryableByName)]
struct Accepted {
    #[diesel(sql_type = BigInt)]
    found: i64,
}

/// The run's loops, oldest first.
pub(crate) fn loops_of_run(conn: &mut Conn, run: RunId) -> Result<Vec<LoopRow>, DbError> {
    Ok(loops::table
        .filter(loops::run_id.eq(run))
        .order(loops::id)
        .select(LoopRow::as_select())
        .load(conn)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::enums::RunAction;
    use crate::db::testing::{sample_loop, sample_run, TestDb};

    #[test]
    fn actions_and_loops_come_back_in_order_for_their_run_only() {
        let mut db = TestDb::new();
        let run = sample_run(&mut db.conn);
        let other = sample_run(&mut db.conn);
        let first = sample_loop(&mut db.conn, run.id, "");
        sample_loop(&mut db.conn, other.id, "");
        let second = sample_loop(&mut db.conn, run.id, "");
        for (action, person, path) in [
            (RunAction::Accept, Some("alice"), Some("sh://1/ls")),
            (RunAction::Abort, None, None),
        ] {
            record(
                &mut db.conn,
                &RunActionForm {
                    run_id: run.id,
                    loop_id: Some(first.id),
                    person: person.map(Into::into),
                    action,
                    path: path.map(Into::into),
                },
            )
            .unwrap();
        }
        let actions = of_run(&mut db.conn, run.id).unwrap();
        let seen: Vec<_> = actions
            .iter()
            .map(|row| {
                (
                    row.action,
                    row.person.as_deref(),
                    row.path.as_deref(),
                    row.loop_id,
                )
            })
            .collect();
        assert_eq!(
            seen,
            [
                (
                    RunAction::Accept,
                    Some("alice"),
                    Some("sh://1/ls"),
                    Some(first.id)
                ),
                (RunAction::Abort, None, None, Some(first.id)),
            ]
        );
        assert!(of_run(&mut db.conn, other.id).unwrap().is_empty());
        let ids: Vec<_> = loops_of_run(&mut db.conn, run.id)
            .unwrap()
            .into_iter()
            .map(|row| row.id)
            .collect();
        assert_eq!(ids, [first.id, second.id]);
    }

    #[test]
    fn an_acceptance_counts_after_the_turn_its_proposal_was_made_in() {
        let mut db = TestDb::new();
        let run = sample_run(&mut db.conn);
        let lp = sample_loop(&mut db.conn, run.id, "");
        for (turn, path) in [(2, "sh://turn_2/ls"), (3, "sh://turn_3/rm")] {
            crate::db::queries::entries::write_entry(
                &mut db.conn,
                &crate::db::models::entry::EntryUpsertForm::new(
                    run.id,
                    Some(lp.id),
                    turn,
                    path,
                    "",
                ),
            )
            .unwrap();
        }
        let act = |conn: &mut Conn, action, path: &str| {
            record(
                conn,
                &RunActionForm {
                    run_id: run.id,
                    loop_id: Some(lp.id),
                    person: None,
                    action,
                    path: Some(path.into()),
                },
            )
            .unwrap()
        };
        act(&mut db.conn, RunAction::Reject, "sh://turn_3/rm");
        assert!(
            !accepted_after(&mut db.conn, run.id, 0).unwrap(),
            "a rejection"
        );
        act(&mut db.conn, RunAction::Accept, "sh://turn_2/ls");
        assert!(accepted_after(&mut db.conn, run.id, 1).unwrap());
        assert!(
            !accepted_after(&mut db.conn, run.id, 2).unwrap(),
            "made at turn 2"
        );
        let other = sample_run(&mut db.conn);
        assert!(!accepted_after(&mut db.conn, other.id, 0).unwrap());
    }
}
