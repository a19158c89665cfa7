//! Loops paused at a spend cap (`paused_loops`, `agent::paused`): a paused loop stays pending
//! in `loops` and no drain claims a loop of its run ([`loops::claim_next_loop`]) while its
//! row here exists. Nobody waits for a paused run's pending loops any more (their requests
//! were answered paused), so any instance may run them once the row goes.
//!
//! [`loops::claim_next_loop`]: crate::db::queries::loops::claim_next_loop

use diesel::sql_types::{BigInt, Text};
use diesel::{OptionalExtension, QueryableByName, RunQueryDsl};

use crate::db::ids::{LoopId, RunId};
use crate::db::statement::statement;
use crate::db::{Conn, DbError};

/// A paused loop: its run, the cap that stopped it (`usage::StandingView` as JSON) and its
/// message, and when that cap's period ends (seconds since the epoch, UTC).
#[derive(Debug, Clone, PartialEq, Eq, QueryableByName)]
pub(crate) struct PausedRow {
    #[diesel(sql_type = BigInt)]
    pub loop_id: LoopId,
    #[diesel(sql_type = BigInt)]
    pub run_id: RunId,
    #[diesel(sql_type = Text)]
    pub cap: String,
    #[diesel(sql_type = Text)]
    pub error: String,
    #[diesel(sql_type = BigInt)]
    pub resets_at: i64,
}

/// Pauses the running loop of `paused`: back to pending with `record` (where it stopped) as
/// its result, its row entered, and nobody's waiting for the run's pending loops kept.
pub(crate) fn pause(
    conn: &mut Conn,
    paused: &PausedRow,
    record: &serde_json::Value,
) -> Result<(), DbError> {
    let moved =
        statement("UPDATE loops SET status = 100, result = ? WHERE id = ? AND status = 102")
            .bind::<Text, _>(record.to_string())
            .bind::<BigInt, _>(paused.loop_id)
            .execute(conn)?;
    if moved != 1 {
        return Err(DbError::Invalid(format!(
            "loop {} is not running: it cannot pause",
            paused.loop_id
        )));
    }
    statement(
        "INSERT INTO paused_loops (loop_id, run_id, cap, error, resets_at) VALUES (?, ?, ?, ?, ?)",
    )
    .bind::<BigInt, _>(paused.loop_id)
    .bind::<BigInt, _>(paused.run_id)
    .bind::<Text, _>(paused.cap.clone())
    .bind::<Text, _>(paused.error.clone())
    .bind::<BigInt, _>(paused.resets_at)
    .execute(conn)?;
    forget_waiters(conn, paused.run_id)
}

/// The run's paused loop, if it has one.
pub(crate) fn of_run(conn: &mut Conn, run: RunId) -> Result<Option<PausedRow>, DbError> {
    Ok(statement("SELECT * FROM paused_loops WHERE run_id = ?")
        .bind::<BigInt, _>(run)
        .get_result(conn)
        .optional()?)
}

/// Every paused loop, the soonest to reset first.
pub(crate) fn all(conn: &mut Conn) -> Result<Vec<PausedRow>, DbError> {
    Ok(statement("SELECT * FROM paused_loops ORDER BY resets_at, loop_id").load(conn)?)
}

/// When the soonest period of a paused loop's cap ends (seconds since the epoch), if any
/// loop is paused.
pub(crate) fn next_reset(conn: &mut Conn) -> Result<Option<i64>, DbError> {
    #[derive(QueryableByName)]
    struct Soonest {
        #[diesel(sql_type = diesel::sql_types::Nullable<BigInt>)]
        resets_at: Option<i64>,
    }
    let soonest: Soonest =
        statement("SELECT MIN(resets_at) AS resets_at FROM paused_loops").get_result(conn)?;
    Ok(soonest.resets_at)
}

/// The run's loop stays paused, now by this cap (another than the one that paused it).
pub(crate) fn restate(conn: &mut Conn, paused: &PausedRow) -> Result<(), DbError> {
    statement("UPDATE paused_loops SET cap = ?, error = ?, resets_at = ? WHERE run_id = ?")
        .bind::<Text, _>(paused.cap.clone())
        .bind::<Text, _>(paused.error.clone())
        .bind::<BigInt, _>(paused.resets_at)
        .bind::<BigInt, _>(paused.run_id)
        .execute(conn)?;
    Ok(())
}

/// Takes the run's paused loop out of pause (its row gone, anyone's to run, with the loops
/// queued behind it); `None` when it has none (another unit of work, here or on another
/// instance, unpaused or aborted it first).
pub(crate) fn unpause(conn: &mut Conn, run: RunId) -> Result<Option<LoopId>, DbError> {
    #[derive(QueryableByName)]
    struct Unpaused {
        #[diesel(sql_type = BigInt)]
        loop_id: LoopId,
    }
    let unpaused: Option<Unpaused> =
        statement("DELETE FROM paused_loops WHERE run_id = ? RETURNING loop_id")
            .bind::<BigInt, _>(run)
            .get_result(conn)
            .optional()?;
    if unpaused.is_some() {
        forget_waiters(conn, run)?;
    }
    Ok(unpaused.map(|unpaused| unpaused.loop_id))
}

/// No instance waits for the run's pending loops any more: any may run them.
fn forget_waiters(conn: &mut Conn, run: RunId) -> Result<(), DbError> {
    statement(
        "DELETE FROM loop_waiters WHERE loop_id IN (
             SELECT id FROM loops WHERE run_id = ? AND status = 100)",
    )
    .bind::<BigInt, _>(run)
    .execute(conn)?;
    Ok(())
}
