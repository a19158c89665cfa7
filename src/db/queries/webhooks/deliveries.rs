//! The webhooks' outbox: deliveries claimed by one worker at a time, their attempts
//! recorded, and the log `webhooks/deliveries` reads.
//!
//! **Claims.** A worker claims the due deliveries in one statement, a compare-and-set on
//! each row (`claimed_until` still past, `state` still pending) that on PostgreSQL also
//! skips the rows another instance's claim has locked (`FOR UPDATE SKIP LOCKED`): two
//! instances never claim one delivery together. A claim lasts until `claimed_until` (the
//! attempt's timeout and a margin), so the deliveries of an instance that dies mid-attempt
//! are claimed again once it expires; those of an instance gone from `instances` at once
//! ([`release_gone`]).

use diesel::prelude::*;
use diesel::sql_types::{BigInt, Integer, Nullable, Text};

use crate::db::statement::statement;
use crate::db::{Conn, DbError};

/// A delivery waits for its (next) attempt.
pub(crate) const PENDING: i32 = 0;
/// The receiver answered 2xx.
pub(crate) const DELIVERED: i32 = 1;
/// Every attempt failed.
pub(crate) const GIVEN_UP: i32 = 2;

/// A delivery claimed, with what its request needs.
#[derive(Debug, Clone, QueryableByName)]
pub(crate) struct Claimed {
    #[diesel(sql_type = BigInt)]
    pub id: i64,
    #[diesel(sql_type = Text)]
    pub event: String,
    #[diesel(sql_type = Text)]
    pub detail: String,
    #[diesel(sql_type = Nullable<Text>)]
    pub title: Option<String>,
    #[diesel(sql_type = Nullable<Text>)]
    pub who: Option<String>,
    #[diesel(sql_type = BigInt)]
    pub created_ms: i64,
    #[diesel(sql_type = Integer)]
    pub attempts: i32,
    #[diesel(sql_type = Text)]
    pub url: String,
    #[diesel(sql_type = Text)]
    pub format: String,
    #[diesel(sql_type = Text)]
    pub secret: String,
    #[diesel(sql_type = Text)]
    pub project: String,
    #[diesel(sql_type = Nullable<Text>)]
    pub run: Option<String>,
}

/// Claims for `instance`, until `until`, at most `limit` deliveries due at `now`; answers
/// them with their webhooks'.
pub(crate) fn claim(
    conn: &mut Conn,
    instance: &str,
    now: i64,
    until: i64,
    limit: i64,
) -> Result<Vec<Claimed>, DbError> {
    let sql = match conn {
        Conn::Sqlite(_) => {
            "UPDATE webhook_deliveries SET claimed_by = ?, claimed_until = ?
              WHERE id IN (SELECT id FROM webhook_deliveries
                            WHERE state = 0 AND next_ms <= ? AND claimed_until < ?
                            ORDER BY next_ms, id LIMIT ?)
                AND state = 0 AND claimed_until < ?"
        }
        Conn::Postgres(_) => {
            "UPDATE webhook_deliveries SET claimed_by = ?, claimed_until = ?
              WHERE id IN (SELECT id FROM webhook_deliveries
                            WHERE state = 0 AND next_ms <= ? AND claimed_until < ?
                            ORDER BY next_ms, id LIMIT ? FOR UPDATE SKIP LOCKED)
                AND state = 0 AND claimed_until < ?"
        }
    };
    let claimed = statement(sql)
        .bind::<Text, _>(instance)
        .bind::<BigInt, _>(until)
        .bind::<BigInt, _>(now)
        .bind::<BigInt, _>(now)
        .bind::<BigInt, _>(limit)
        .bind::<BigInt, _>(now)
        .execute(conn)?;
    if claimed == 0 {
        return Ok(Vec::new());
    }
    Ok(statement(
        "SELECT d.id, d.event, d.detail, d.title, d.who, d.created_ms, d.attempts,
                w.url, w.format, w.secret, p.name AS project, r.alias AS run
           FROM webhook_deliveries d
           JOIN webhooks w ON w.id = d.webhook_id
           JOIN projects p ON p.id = w.project_id
           LEFT JOIN runs r ON r.id = d.run_id
          WHERE d.claimed_by = ? AND d.claimed_until = ? AND d.state = 0
          ORDER BY d.next_ms, d.id",
    )
    .bind::<Text, _>(instance)
    .bind::<BigInt, _>(until)
    .load(conn)?)
}

/// One attempt's result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Attempt {
    pub delivery: i64,
    /// Its number, from 1.
    pub attempt: i32,
    pub at_ms: i64,
    pub duration_ms: i64,
    /// The receiver's status code, when it answered.
    pub status: Option<i32>,
    /// Why it did not answer (a timeout, a refused connection …).
    pub error: Option<String>,
    /// What the delivery is now: [`DELIVERED`], [`GIVEN_UP`] or [`PENDING`] again at
    /// `next_ms`.
    pub state: i32,
    pub next_ms: i64,
}

/// Records `attempt` and releases its delivery's claim; a delivery settled, those settled
/// before `keep_from` (ms) go, with their attempts.
pub(crate) fn record(conn: &mut Conn, attempt: &Attempt, keep_from: i64) -> Result<(), DbError> {
    statement(
        "INSERT INTO webhook_attempts (delivery_id, attempt, at_ms, duration_ms, status, error)
         VALUES (?, ?, ?, ?, ?, ?)",
    )
    .bind::<BigInt, _>(attempt.delivery)
    .bind::<Integer, _>(attempt.attempt)
    .bind::<BigInt, _>(attempt.at_ms)
    .bind::<BigInt, _>(attempt.duration_ms)
    .bind::<Nullable<Integer>, _>(attempt.status)
    .bind::<Nullable<Text>, _>(attempt.error.as_deref())
    .execute(conn)?;
    statement(
        "UPDATE webhook_deliveries
            SET attempts = ?, state = ?, next_ms = ?, claimed_by = NULL, claimed_until = 0
          WHERE id = ?",
    )
    .bind::<Integer, _>(attempt.attempt)
    .bind::<Integer, _>(attempt.state)
    .bind::<BigInt, _>(attempt.next_ms)
    .bind::<BigInt, _>(attempt.delivery)
    .execute(conn)?;
    if attempt.state != PENDING {
        statement("DELETE FROM webhook_deliveries WHERE created_ms < ? AND state <> 0")
            .bind::<BigInt, _>(keep_from)
            .execute(conn)?;
    }
    Ok(())
}

/// Releases the claims of instances no longer alive at `now` (killed mid-attempt, or
/// stopped while one ran); the number released.
pub(crate) fn release_gone(conn: &mut Conn, now: i64) -> Result<usize, DbError> {
    Ok(statement(
        "UPDATE webhook_deliveries SET claimed_by = NULL, claimed_until = 0
          WHERE state = 0 AND claimed_by IS NOT NULL
            AND claimed_by NOT IN (SELECT id FROM instances WHERE expires_at >= ?)",
    )
    .bind::<BigInt, _>(now)
    .execute(conn)?)
}

/// Whether a delivery is due at `now` and unclaimed.
pub(crate) fn any_due(conn: &mut Conn, now: i64) -> Result<bool, DbError> {
    #[derive(QueryableByName)]
    struct Due {
        #[diesel(sql_type = BigInt)]
        due: i64,
    }
    let due: Due = statement(
        "SELECT COUNT(*) AS due FROM (SELECT 1 FROM webhook_deliveries
          WHERE state = 0 AND next_ms <= ? AND claimed_until < ? LIMIT 1) AS d",
    )
    .bind::<BigInt, _>(now)
    .bind::<BigInt, _>(now)
    .get_result(conn)?;
    Ok(due.due > 0)
}

/// A delivery as its log shows it.
#[derive(Debug, Clone, QueryableByName)]
pub(crate) struct LoggedDelivery {
    #[diesel(sql_type = BigInt)]
    pub id: i64,
    #[diesel(sql_type = Text)]
    pub event: String,
    #[diesel(sql_type = Nullable<Text>)]
    pub run: Option<String>,
    #[diesel(sql_type = Integer)]
    pub state: i32,
    #[diesel(sql_type = BigInt)]
    pub created_ms: i64,
    #[diesel(sql_type = BigInt)]
    pub next_ms: i64,
}

/// An attempt as the log shows it.
#[derive(Debug, Clone, QueryableByName)]
pub(crate) struct LoggedAttempt {
    #[diesel(sql_type = BigInt)]
    pub delivery_id: i64,
    #[diesel(sql_type = Integer)]
    pub attempt: i32,
    #[diesel(sql_type = BigInt)]
    pub at_ms: i64,
    #[diesel(sql_type = BigInt)]
    pub duration_ms: i64,
    #[diesel(sql_type = Nullable<Integer>)]
    pub status: Option<i32>,
    #[diesel(sql_type = Nullable<Text>)]
    pub error: Option<String>,
}

/// The latest `limit` deliveries of webhook `hook`, newest first, and their attempts.
pub(crate) fn log(
    conn: &mut Conn,
    hook: &str,
    limit: i64,
) -> Result<(Vec<LoggedDelivery>, Vec<LoggedAttempt>), DbError> {
    let deliveries: Vec<LoggedDelivery> = statement(
        "SELECT d.id, d.event, r.alias AS run, d.state, d.created_ms, d.next_ms
           FROM webhook_deliveries d LEFT JOIN runs r ON r.id = d.run_id
          WHERE d.webhook_id = ? ORDER BY d.id DESC LIMIT ?",
    )
    .bind::<Text, _>(hook)
    .bind::<BigInt, _>(limit)
    .load(conn)?;
    let Some(oldest) = deliveries.last().map(|delivery| delivery.id) else {
        return Ok((deliveries, Vec::new()));
    };
    let attempts = statement(
        "SELECT a.delivery_id, a.attempt, a.at_ms, a.duration_ms, a.status, a.error
           FROM webhook_attempts a JOIN webhook_deliveries d ON d.id = a.delivery_id
          WHERE d.webhook_id = ? AND d.id >= ? ORDER BY a.delivery_id, a.attempt, a.id",
    )
    .bind::<Text, _>(hook)
    .bind::<BigInt, _>(oldest)
    .load(conn)?;
    Ok((deliveries, attempts))
}
