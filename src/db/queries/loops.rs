//! The per-run prompt queue: enqueue, claim the next loop, finish it.

use crate::db::backend::per_backend;
use crate::db::statement::statement;
use crate::db::Conn;
use diesel::prelude::*;
use diesel::sql_types::{BigInt, Integer, Nullable, Text};

use crate::db::connection::write_transaction;
use crate::db::enums::{LoopPriority, RunStatus};
use crate::db::ids::{LoopId, RunId};
use crate::db::models::run::{LoopEnqueue, LoopInsertForm, LoopRow};
use crate::db::queries::run_titles;
use crate::db::schema::{loops, runs};
use crate::db::DbError;

/// Appends a pending loop (status 100) to the run's queue, numbered from `runs.next_loop`.
pub(crate) fn enqueue_loop(conn: &mut Conn, enqueue: &LoopEnqueue) -> Result<LoopRow, DbError> {
    if !enqueue.config.is_object() {
        return Err(DbError::Invalid(
            "loop config must be a JSON object".to_owned(),
        ));
    }
    write_transaction(conn, |conn| {
        let next: i32 = diesel::update(runs::table.find(enqueue.run_id))
            .set((
                runs::next_loop.eq(runs::next_loop + 1),
                run_titles::first_prompt(&enqueue.prompt),
            ))
            .returning(runs::next_loop)
            .get_result(conn)
            .optional()?
            .ok_or_else(|| DbError::NotFound(format!("run {}", enqueue.run_id)))?;
        let form = LoopInsertForm {
            run_id: enqueue.run_id,
            sequence: next - 1,
            mode: enqueue.mode,
            model: enqueue.model.clone(),
            prompt: enqueue.prompt.clone(),
            priority: enqueue.priority,
            config: enqueue.config.to_string(),
            requested_by: enqueue.requested_by.clone(),
            requested_on: enqueue.requested_on,
        };
        Ok(per_backend!(conn, |conn| diesel::insert_into(
            loops::table
        )
        .values(&form)
        .returning(LoopRow::as_returning())
        .get_result(conn))?)
    })
}

/// Locks the run's loops queued or running until the unit of work ends (PostgreSQL: `FOR
/// UPDATE`; SQLite's one writer already excludes every other unit), so that a verb deciding
/// from them (an abort, a cancel) and another instance's claim follow one another: a claim
/// under way is committed, and seen, before the verb reads the loops; one that comes after
/// finds the loop the verb dropped no longer pending ([`claim_next_loop`] checks it again).
pub(crate) fn lock_in_flight(conn: &mut Conn, run_id: RunId) -> Result<(), DbError> {
    if let Conn::Postgres(_) = conn {
        statement("SELECT id FROM loops WHERE run_id = ? AND status IN (100, 102) FOR UPDATE")
            .bind::<BigInt, _>(run_id)
            .execute(conn)?;
    }
    Ok(())
}

/// Claims the run's next pending loop (highest priority, then oldest) and marks it running,
/// in one statement, among those `instance` may run: its own and those no instance waits
/// for (`loop_waiters`). `None` when nothing is pending for it, a loop of the run is
/// already running, or the run is paused at a spend cap (`paused_loops`: its loop and those
/// queued behind it wait until it is unpaused). The caller holds the run's lease
/// (`instances::claim_loop`).
pub(crate) fn claim_next_loop(
    conn: &mut Conn,
    run_id: RunId,
    instance: &str,
) -> Result<Option<LoopRow>, DbError> {
    Ok(statement(
        "UPDATE loops SET status = 102
         WHERE id = (
             SELECT pending.id FROM loops AS pending
             WHERE pending.run_id = ? AND pending.status = 100
               AND NOT EXISTS (SELECT 1 FROM loops WHERE run_id = ? AND status = 102)
               AND NOT EXISTS (SELECT 1 FROM paused_loops WHERE run_id = ?)
               AND NOT EXISTS (
                   SELECT 1 FROM loop_waiters
                   WHERE loop_waiters.loop_id = pending.id AND loop_waiters.instance_id <> ?)
             ORDER BY pending.priority DESC, pending.id
             LIMIT 1)
           AND status = 100
         RETURNING *",
    )
    .bind::<BigInt, _>(run_id)
    .bind::<BigInt, _>(run_id)
    .bind::<BigInt, _>(run_id)
    .bind::<Text, _>(instance.to_owned())
    .get_result::<LoopRow>(conn)
    .optional()?)
}

/// Records a loop's outcome. Only a running loop may finish (and a pending one be aborted);
/// anything else is [`DbError::Invalid`].
pub(crate) fn finish_loop(
    conn: &mut Conn,
    id: LoopId,
    status: RunStatus,
    result: Option<&serde_json::Value>,
) -> Result<LoopRow, DbError> {
    statement("UPDATE loops SET status = ?, result = ? WHERE id = ? RETURNING *")
        .bind::<Integer, _>(status)
        .bind::<Nullable<Text>, _>(result.map(serde_json::Value::to_string))
        .bind::<BigInt, _>(id)
        .get_result(conn)
        .optional()?
        .ok_or_else(|| DbError::NotFound(format!("loop {id}")))
}

/// Drops a pending loop that will never run (status 499, with the reason as its result).
pub(crate) fn drop_loop(
    conn: &mut Conn,
    id: LoopId,
    result: Option<&serde_json::Value>,
) -> Result<LoopRow, DbError> {
    finish_loop(conn, id, RunStatus::Aborted, result)
}

/// Drops every pending loop of the run (status 499, with `result`): an abort stops the whole
/// run. Their ids.
pub(crate) fn drop_pending(
    conn: &mut Conn,
    run_id: RunId,
    result: Option<&serde_json::Value>,
) -> Result<Vec<LoopId>, DbError> {
    Ok(diesel::update(
        loops::table
            .filter(loops::run_id.eq(run_id))
            .filter(loops::status.eq(RunStatus::Queued)),
    )
    .set((
        loops::status.eq(RunStatus::Aborted),
        loops::result.eq(result.map(serde_json::Value::to_string)),
    ))
    .returning(loops::id)
    .get_results(conn)?)
}

/// The run's loop numbered `sequence`.
pub(crate) fn by_sequence(
    conn: &mut Conn,
    run_id: RunId,
    sequence: i32,
) -> Result<Option<LoopRow>, DbError> {
    Ok(loops::table
        .filter(loops::run_id.eq(run_id))
        .filter(loops::sequence.eq(sequence))
        .select(LoopRow::as_select())
        .first(conn)
        .optional()?)
}

/// Drops the run's pending panic and retry loops (their overflowing loop was aborted).
pub(crate) fn drop_recovery_loops(conn: &mut Conn, run_id: RunId) -> Result<usize, DbError> {
    Ok(diesel::update(
        loops::table
            .filter(loops::run_id.eq(run_id))
            .filter(loops::status.eq(RunStatus::Queued))
            .filter(loops::priority.ne(LoopPriority::Normal)),
    )
    .set(loops::status.eq(RunStatus::Aborted))
    .execute(conn)?)
}

/// The loop with this id.
pub(crate) fn get_loop(conn: &mut Conn, id: LoopId) -> Result<Option<LoopRow>, DbError> {
    Ok(loops::table
        .find(id)
        .select(LoopRow::as_select())
        .first(conn)
        .optional()?)
}

/// The loop the run would claim next: its pending loop of highest priority, then oldest.
pub(crate) fn next_pending(conn: &mut Conn, run_id: RunId) -> Result<Option<LoopRow>, DbError> {
    Ok(loops::table
        .filter(loops::run_id.eq(run_id))
        .filter(loops::status.eq(RunStatus::Queued))
        .order((loops::priority.desc(), loops::id))
        .select(LoopRow::as_select())
        .first(conn)
        .optional()?)
}

/// The run's running loop.
pub(crate) fn active_loop(conn: &mut Conn, run_id: RunId) -> Result<Option<LoopRow>, DbError> {
    Ok(loops::table
        .filter(loops::run_id.eq(run_id))
        .filter(loops::status.eq(RunStatus::Running))
        .select(LoopRow::as_select())
        .first(conn)
        .optional()?)
}

/// The run's most recently enqueued loop, whatever its state.
pub(crate) fn latest_loop(conn: &mut Conn, run_id: RunId) -> Result<Option<LoopRow>, DbError> {
    Ok(loops::table
        .filter(loops::run_id.eq(run_id))
        .order(loops::id.desc())
        .select(LoopRow::as_select())
        .first(conn)
        .optional()?)
}

/// The run's pending loops in claim order.
pub(crate) fn pending_loops(conn: &mut Conn, run_id: RunId) -> Result<Vec<LoopRow>, DbError> {
    Ok(loops::table
        .filter(loops::run_id.eq(run_id))
        .filter(loops::status.eq(RunStatus::Queued))
        .order((loops::priority.desc(), loops::id))
        .select(LoopRow::as_select())
        .load(conn)?)
}

/// The loop queue across every run, for `/metrics`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct QueueDepth {
    /// Loops waiting for their run's actor (100).
    pub pending: i64,
    /// Loops running (102), one per run at most.
    pub running: i64,
    /// Runs with a loop pending or running.
    pub runs: i64,
}

/// How many loops wait and run, and for how many runs.
pub(crate) fn queue_depth(conn: &mut Conn) -> Result<QueueDepth, DbError> {
    let unfinished = [RunStatus::Queued, RunStatus::Running];
    let by_status: Vec<(RunStatus, i64)> = loops::table
        .filter(loops::status.eq_any(unfinished))
        .group_by(loops::status)
        .select((loops::status, diesel::dsl::count_star()))
        .load(conn)?;
    let runs = loops::table
        .filter(loops::status.eq_any(unfinished))
        .select(diesel::dsl::count(loops::run_id).aggregate_distinct())
        .get_result(conn)?;
    let count = |wanted: RunStatus| {
        by_status
            .iter()
            .find(|(status, _)| *status == wanted)
            .map_or(0, |(_, count)| *count)
    };
    Ok(QueueDepth {
        pending: count(RunStatus::Queued),
        running: count(RunStatus::Running),
        runs,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::enums::{LoopMode, LoopPriority};
    use crate::db::testing::{sample_run, TestDb};
    use serde_json::json;

    fn enqueue(conn: &mut Conn, run_id: RunId, prompt: &str, priority: LoopPriority) -> LoopRow {
        let request = LoopEnqueue {
            run_id,
            mode: LoopMode::Ask,
            model: Some("m".into()),
            prompt: prompt.into(),
            priority,
            config: json!({"noRepo": true}),
            requested_by: Some("alice".into()),
            requested_on: Some(1 << 32 | 7),
        };
        enqueue_loop(conn, &request).unwrap()
    }

    #[test]
    fn loops_are_claimed_fifo_one_at_a_time() {
        let mut db = TestDb::new();
        let run = sample_run(&mut db.conn);
        let first = enqueue(&mut db.conn, run.id, "one", LoopPriority::Normal);
        let second = enqueue(&mut db.conn, run.id, "two", LoopPriority::Normal);
        assert_eq!((first.sequence, second.sequence), (1, 2));
        assert_eq!(first.config.to_value(), json!({"noRepo": true}));
        assert_eq!(first.requested_by.as_deref(), Some("alice"));

        let claimed = claim_next_loop(&mut db.conn, run.id, "here")
            .unwrap()
            .unwrap();
        assert_eq!(claimed.id, first.id);
        assert_eq!(claimed.status, RunStatus::Running);
        assert_eq!(claim_next_loop(&mut db.conn, run.id, "here").unwrap(), None);
        assert_eq!(
            active_loop(&mut db.conn, run.id).unwrap().map(|l| l.id),
            Some(first.id)
        );

        let done = finish_loop(
            &mut db.conn,
            first.id,
            RunStatus::Completed,
            Some(&json!({"ok": 1})),
        )
        .unwrap();
        assert_eq!(done.result.map(|result| result.0), Some(json!({"ok": 1})));
        let next = claim_next_loop(&mut db.conn, run.id, "here")
            .unwrap()
            .unwrap();
        assert_eq!(next.id, second.id);
        finish_loop(&mut db.conn, second.id, RunStatus::Failed, None).unwrap();
        assert_eq!(claim_next_loop(&mut db.conn, run.id, "here").unwrap(), None);
        assert_eq!(
            latest_loop(&mut db.conn, run.id).unwrap().map(|l| l.id),
            Some(second.id)
        );
    }

    #[test]
    fn panic_and_retry_loops_jump_the_queue() {
        let mut db = TestDb::new();
        let run = sample_run(&mut db.conn);
        let queued = enqueue(&mut db.conn, run.id, "queued", LoopPriority::Normal);
        let retry = enqueue(&mut db.conn, run.id, "retry", LoopPriority::Retry);
        let panic = enqueue(&mut db.conn, run.id, "panic", LoopPriority::Panic);
        let order: Vec<LoopId> = pending_loops(&mut db.conn, run.id)
            .unwrap()
            .iter()
            .map(|l| l.id)
            .collect();
        assert_eq!(order, [panic.id, retry.id, queued.id]);
        assert_eq!(
            claim_next_loop(&mut db.conn, run.id, "here")
                .unwrap()
                .map(|l| l.id),
            Some(panic.id)
        );
    }

    #[test]
    fn finished_loops_cannot_change_and_only_one_runs() {
        let mut db = TestDb::new();
        let run = sample_run(&mut db.conn);
        let first = enqueue(&mut db.conn, run.id, "one", LoopPriority::Normal);
        let second = enqueue(&mut db.conn, run.id, "two", LoopPriority::Normal);
        assert!(matches!(
            finish_loop(&mut db.conn, first.id, RunStatus::Completed, None),
            Err(DbError::Invalid(_))
        ));
        claim_next_loop(&mut db.conn, run.id, "here").unwrap();
        let both_running = diesel::update(loops::table.find(second.id))
            .set(loops::status.eq(RunStatus::Running))
            .execute(&mut db.conn);
        assert!(both_running.is_err());
        finish_loop(&mut db.conn, first.id, RunStatus::Aborted, None).unwrap();
        assert!(matches!(
            finish_loop(&mut db.conn, first.id, RunStatus::Running, None),
            Err(DbError::Invalid(_))
        ));
        assert_eq!(
            finish_loop(&mut db.conn, second.id, RunStatus::Aborted, None)
                .unwrap()
                .status,
            RunStatus::Aborted
        );
    }

    #[test]
    fn queue_depth_counts_unfinished_loops_and_their_runs() {
        let mut db = TestDb::new();
        assert_eq!(queue_depth(&mut db.conn).unwrap(), QueueDepth::default());
        let run = sample_run(&mut db.conn);
        let first = enqueue(&mut db.conn, run.id, "one", LoopPriority::Normal);
        enqueue(&mut db.conn, run.id, "two", LoopPriority::Normal);
        enqueue(&mut db.conn, run.id, "three", LoopPriority::Normal);
        claim_next_loop(&mut db.conn, run.id, "here").unwrap();
        let expected = QueueDepth {
            pending: 2,
            running: 1,
            runs: 1,
        };
        assert_eq!(queue_depth(&mut db.conn).unwrap(), expected);
        finish_loop(&mut db.conn, first.id, RunStatus::Completed, None).unwrap();
        let expected = QueueDepth {
            running: 0,
            ..expected
        };
        assert_eq!(queue_depth(&mut db.conn).unwrap(), expected);
    }

    #[test]
    fn config_must_be_an_object_and_run_must_exist() {
        let mut db = TestDb::new();
        let run = sample_run(&mut db.conn);
        let mut request = LoopEnqueue {
            run_id: run.id,
            mode: LoopMode::Panic,
            model: None,
            prompt: String::new(),
            priority: LoopPriority::Panic,
            config: json!([1]),
            requested_by: None,
            requested_on: None,
        };
        assert!(matches!(
            enqueue_loop(&mut db.conn, &request),
            Err(DbError::Invalid(_))
        ));
        request.config = json!({});
        request.run_id = RunId(9_999);
        assert!(matches!(
            enqueue_loop(&mut db.conn, &request),
            Err(DbError::NotFound(_))
        ));
    }
}
