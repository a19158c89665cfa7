//! Who resolved a run's proposals and aborted its loops (`run_actions`), and who queued
//! its loops, for `getRun`.

use crate::db::Conn;
use diesel::prelude::*;

use crate::db::ids::RunId;
use crate::db::models::run::{LoopRow, RunActionForm, RunActionRow};
use crate::db::schema::{loops, run_actions};
use crate::db::DbError;

/// Records one action.
pub fn record(conn: &mut Conn, form: &RunActionForm) -> Result<(), DbError> {
    diesel::insert_into(run_actions::table)
        .values(form)
        .execute(conn)?;
    Ok(())
}

/// The run's actions, oldest first.
pub fn of_run(conn: &mut Conn, run: RunId) -> Result<Vec<RunActionRow>, DbError> {
    Ok(run_actions::table
        .filter(run_actions::run_id.eq(run))
        .order(run_actions::id)
        .select(RunActionRow::as_select())
        .load(conn)?)
}

/// The run's loops, oldest first.
pub fn loops_of_run(conn: &mut Conn, run: RunId) -> Result<Vec<LoopRow>, DbError> {
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
}
