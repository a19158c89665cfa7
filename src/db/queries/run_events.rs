//! The durable event log: each run's notifications, numbered in the unit of work that writes
//! them, kept within bounds, and read back for `run/replay` (`rpc::handlers::replay`).
//!
//! **Numbering.** `run_event_seqs` holds a run's first and latest seq. [`append`] raises the
//! latest by the frames it writes in the statement that reads it (an upsert: its row lock
//! makes every writer of the run, on any instance, wait for the one before to commit), so
//! each seq is given once, one more than the previous of the run, in the order the frames
//! were given. A run's first notification is numbered from the clock in microseconds, above
//! any seq a server that numbered in memory (before this log) could have given it. The frames
//! go to the unit's outbox ([`events`](crate::db::events)), sent once the unit has committed.
//!
//! **Bounds** ([`EventBounds`]): the latest `per_run` frames of a run, `run_bytes` of them,
//! `total_bytes` of every run's together, none older than `keep_ms`; the oldest go first and
//! a run's numbering stays. A run is pruned when its frames cross a multiple of an eighth of
//! `per_run` (so a run's frames never pass `per_run` plus that eighth), every run together
//! when the writer has written another [`PRUNE_ALL_EVERY`] frames, and at start: no turn pays
//! for a prune of its own.

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use diesel::prelude::*;
use diesel::sql_types::{BigInt, Text};

use crate::db::backend::per_backend;
use crate::db::events::{self, NumberedEvent, Unnumbered};
use crate::db::ids::{ProjectId, RunId};
use crate::db::schema::run_events;
use crate::db::statement::statement;
use crate::db::{Conn, DbError};

/// Rows of one insert on PostgreSQL: five binds each, well within its bound on a statement's.
const INSERT_ROWS: usize = 1000;

/// Frames written by one writer between two prunes of every run's frames.
pub(crate) const PRUNE_ALL_EVERY: u64 = 1024;

/// How much of the log is kept; a zero bound is no bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct EventBounds {
    /// The latest frames of each run.
    pub per_run: u64,
    /// Bytes of one run's frames.
    pub run_bytes: u64,
    /// Bytes of every run's frames together.
    pub total_bytes: u64,
    /// How long a frame is kept after it was written, in ms.
    pub keep_ms: u64,
}

impl EventBounds {
    /// Frames of a run between two prunes of it: an eighth of `per_run` (at least one), or
    /// 32 when frames are bounded by bytes alone.
    fn prune_every(&self) -> u64 {
        match self.per_run {
            0 => 32,
            per_run => (per_run / 8).max(1),
        }
    }
}

/// A run's numbering: its first seq and its latest.
#[derive(Debug, Clone, Copy, PartialEq, Eq, QueryableByName)]
pub(crate) struct RunSeqs {
    #[diesel(sql_type = BigInt)]
    pub first_seq: i64,
    #[diesel(sql_type = BigInt)]
    pub last_seq: i64,
}

#[derive(Insertable)]
#[diesel(table_name = run_events)]
struct RunEventForm<'a> {
    run_id: RunId,
    seq: i64,
    frame: &'a str,
    bytes: i64,
    created_ms: i64,
}

/// Numbers `frames` of `run` (of `project`) after its latest, in order, writes them and
/// stages them in the unit's outbox; prunes what its bounds ask for now. Call it outside any
/// savepoint that may roll back: the outbox sends what the unit commits.
pub(crate) fn append(
    conn: &mut Conn,
    bounds: &EventBounds,
    project: ProjectId,
    run: RunId,
    frames: &[Unnumbered],
) -> Result<Vec<NumberedEvent>, DbError> {
    let Ok(count) = i64::try_from(frames.len()) else {
        return Err(DbError::Invalid("too many notifications at once".into()));
    };
    if count == 0 {
        return Ok(Vec::new());
    }
    let now = now_micros();
    let seqs: RunSeqs = statement(
        "INSERT INTO run_event_seqs (run_id, first_seq, last_seq) VALUES (?, ?, ?)
         ON CONFLICT (run_id) DO UPDATE SET last_seq = run_event_seqs.last_seq + ?
         RETURNING first_seq, last_seq",
    )
    .bind::<BigInt, _>(run)
    .bind::<BigInt, _>(now + 1)
    .bind::<BigInt, _>(now + count)
    .bind::<BigInt, _>(count)
    .get_result(conn)?;
    let first_new = seqs.last_seq - count + 1;
    let created_ms = now / 1000;
    let numbered: Vec<NumberedEvent> = frames
        .iter()
        .zip(first_new..)
        .map(|(frame, seq)| NumberedEvent {
            project,
            run,
            seq: u64::try_from(seq).unwrap_or_default(),
            text: Arc::from(frame.numbered(seq)),
        })
        .collect();
    write(conn, run, created_ms, &numbered)?;
    let every = i64::try_from(bounds.prune_every()).unwrap_or(i64::MAX);
    let given_before = seqs.last_seq - count - seqs.first_seq + 1;
    if (given_before + count) / every > given_before / every {
        prune_run(conn, bounds, run, seqs.last_seq)?;
    }
    if events::stage(&numbered, PRUNE_ALL_EVERY) {
        prune_all(conn, bounds, created_ms)?;
    }
    Ok(numbered)
}

/// Inserts `numbered`, frames of `run`: on SQLite one fixed statement per frame (diesel
/// inserts a batch there row by row, in a savepoint of its own), on PostgreSQL a statement
/// per [`INSERT_ROWS`] frames.
fn write(
    conn: &mut Conn,
    run: RunId,
    created_ms: i64,
    numbered: &[NumberedEvent],
) -> Result<(), DbError> {
    let seq = |event: &NumberedEvent| i64::try_from(event.seq).unwrap_or(i64::MAX);
    let bytes = |event: &NumberedEvent| i64::try_from(event.text.len()).unwrap_or(i64::MAX);
    if let Conn::Sqlite(_) = conn {
        for event in numbered {
            statement(
                "INSERT INTO run_events (run_id, seq, bytes, created_ms, frame)
                 VALUES (?, ?, ?, ?, ?)",
            )
            .bind::<BigInt, _>(run)
            .bind::<BigInt, _>(seq(event))
            .bind::<BigInt, _>(bytes(event))
            .bind::<BigInt, _>(created_ms)
            .bind::<Text, _>(&*event.text)
            .execute(conn)?;
        }
        return Ok(());
    }
    let forms: Vec<RunEventForm<'_>> = numbered
        .iter()
        .map(|event| RunEventForm {
            run_id: run,
            seq: seq(event),
            frame: &event.text,
            bytes: bytes(event),
            created_ms,
        })
        .collect();
    for rows in forms.chunks(INSERT_ROWS) {
        per_backend!(conn, |conn| diesel::insert_into(run_events::table)
            .values(rows)
            .execute(conn))?;
    }
    Ok(())
}

/// Deletes `run`'s frames past its bounds, `last` being its latest seq; returns how many
/// went.
fn prune_run(
    conn: &mut Conn,
    bounds: &EventBounds,
    run: RunId,
    last: i64,
) -> Result<usize, DbError> {
    let mut deleted = 0;
    if bounds.per_run > 0 {
        let per_run = i64::try_from(bounds.per_run).unwrap_or(i64::MAX);
        deleted += statement("DELETE FROM run_events WHERE run_id = ? AND seq <= ?")
            .bind::<BigInt, _>(run)
            .bind::<BigInt, _>(last.saturating_sub(per_run))
            .execute(conn)?;
    }
    if bounds.run_bytes > 0 {
        deleted += statement(
            "DELETE FROM run_events WHERE run_id = ? AND seq IN (
                 SELECT seq FROM (
                     SELECT seq, SUM(bytes) OVER (ORDER BY seq DESC) AS newer
                     FROM run_events WHERE run_id = ?) AS kept
                 WHERE newer > ?)",
        )
        .bind::<BigInt, _>(run)
        .bind::<BigInt, _>(run)
        .bind::<BigInt, _>(i64::try_from(bounds.run_bytes).unwrap_or(i64::MAX))
        .execute(conn)?;
    }
    Ok(deleted)
}

/// Deletes every run's frames older than the bounds keep and, oldest first, those past the
/// bytes of all together, `now_ms` being the time; returns how many went.
pub(crate) fn prune_all(
    conn: &mut Conn,
    bounds: &EventBounds,
    now_ms: i64,
) -> Result<usize, DbError> {
    let mut deleted = 0;
    if bounds.keep_ms > 0 {
        let keep = i64::try_from(bounds.keep_ms).unwrap_or(i64::MAX);
        deleted += statement("DELETE FROM run_events WHERE created_ms < ?")
            .bind::<BigInt, _>(now_ms.saturating_sub(keep))
            .execute(conn)?;
    }
    if bounds.total_bytes > 0 {
        deleted += statement(
            "DELETE FROM run_events WHERE (run_id, seq) IN (
                 SELECT run_id, seq FROM (
                     SELECT run_id, seq, SUM(bytes) OVER (
                         ORDER BY created_ms DESC, run_id DESC, seq DESC) AS newer
                     FROM run_events) AS kept
                 WHERE newer > ?)",
        )
        .bind::<BigInt, _>(i64::try_from(bounds.total_bytes).unwrap_or(i64::MAX))
        .execute(conn)?;
    }
    Ok(deleted)
}

/// `run`'s numbering, if it ever published.
pub(crate) fn seqs(conn: &mut Conn, run: RunId) -> Result<Option<RunSeqs>, DbError> {
    Ok(
        statement("SELECT first_seq, last_seq FROM run_event_seqs WHERE run_id = ?")
            .bind::<BigInt, _>(run)
            .get_result(conn)
            .optional()?,
    )
}

/// When `run`'s latest kept notification was sent, in ms since the epoch (`None`: none).
pub(crate) fn last_event_ms(conn: &mut Conn, run: RunId) -> Result<Option<i64>, DbError> {
    Ok(run_events::table
        .filter(run_events::run_id.eq(run))
        .order(run_events::seq.desc())
        .select(run_events::created_ms)
        .first(conn)
        .optional()?)
}

/// `run`'s kept frames numbered `from..=to`, oldest first.
pub(crate) fn frames(
    conn: &mut Conn,
    run: RunId,
    from: i64,
    to: i64,
) -> Result<Vec<(i64, String)>, DbError> {
    Ok(run_events::table
        .filter(run_events::run_id.eq(run))
        .filter(run_events::seq.between(from, to))
        .order(run_events::seq)
        .select((run_events::seq, run_events::frame))
        .load(conn)?)
}

/// Bytes of every run's kept frames.
pub(crate) fn kept_bytes(conn: &mut Conn) -> Result<u64, DbError> {
    #[derive(QueryableByName)]
    struct Kept {
        #[diesel(sql_type = BigInt)]
        bytes: i64,
    }
    let kept: Kept =
        statement("SELECT CAST(COALESCE(SUM(bytes), 0) AS BIGINT) AS bytes FROM run_events")
            .get_result(conn)?;
    Ok(u64::try_from(kept.bytes).unwrap_or_default())
}

/// Microseconds since the epoch.
fn now_micros() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| {
            i64::try_from(elapsed.as_micros()).unwrap_or(i64::MAX)
        })
}

#[cfg(test)]
mod tests;
