//! Who is in a run now (`run_presence`): one row per connection that watches a run or last
//! acted on it, under the instance serving the connection. A row goes with its connection
//! ([`leave`]) or with its instance's heartbeat row (`ON DELETE CASCADE`: an instance
//! released by `instances::release` takes its connections' presence with it), and one whose
//! instance expired is not read as present ([`of_run`]) even before it is released.

use diesel::sql_types::{BigInt, Nullable, Text};
use diesel::{OptionalExtension, QueryableByName, RunQueryDsl};

use crate::db::ids::RunId;
use crate::db::statement::statement;
use crate::db::{Conn, DbError};

/// One connection in a run, as [`enter`] records it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Entering<'a> {
    /// The instance serving the connection.
    pub instance: &'a str,
    /// The connection's id on that instance.
    pub conn_id: i64,
    pub run: RunId,
    /// Who it acts for (`None`: the operator).
    pub person: Option<&'a str>,
    /// The client as it named itself at `init` (`rummy acp`, a console page, …).
    pub client_name: &'a str,
    /// `editor`, `console` or `api`.
    pub client_kind: &'a str,
    /// Now (ms since the epoch).
    pub now: i64,
    /// It acts on the run now (prompt, resolve, inject, abort), so it drives it.
    pub acted: bool,
}

/// A connection present in a run.
#[derive(Debug, Clone, PartialEq, Eq, QueryableByName)]
pub(crate) struct PresentRow {
    #[diesel(sql_type = Text)]
    pub instance_id: String,
    #[diesel(sql_type = BigInt)]
    pub conn_id: i64,
    #[diesel(sql_type = Nullable<Text>)]
    pub person: Option<String>,
    #[diesel(sql_type = Text)]
    pub client_name: String,
    #[diesel(sql_type = Text)]
    pub client_kind: String,
    /// Since when it is in the run (ms since the epoch).
    #[diesel(sql_type = BigInt)]
    pub since_ms: i64,
    /// When it last acted on the run, while in it.
    #[diesel(sql_type = Nullable<BigInt>)]
    pub acted_ms: Option<i64>,
}

#[derive(QueryableByName)]
struct InRun {
    #[diesel(sql_type = BigInt)]
    run_id: RunId,
}

/// Puts the connection in `entering.run` (out of any other run it was in: a connection is in
/// one run at a time); returns the run it was in before, when another. Its `since` holds
/// while it stays in the same run; acting marks it as the run's latest actor.
pub(crate) fn enter(conn: &mut Conn, entering: &Entering<'_>) -> Result<Option<RunId>, DbError> {
    let before = in_run(conn, entering.instance, entering.conn_id)?;
    statement(
        "INSERT INTO run_presence
             (instance_id, conn_id, run_id, person, client_name, client_kind, since_ms, acted_ms)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?)
         ON CONFLICT (instance_id, conn_id) DO UPDATE SET
             person = excluded.person,
             client_name = excluded.client_name,
             client_kind = excluded.client_kind,
             since_ms = CASE WHEN run_presence.run_id = excluded.run_id
                             THEN run_presence.since_ms ELSE excluded.since_ms END,
             acted_ms = CASE WHEN excluded.acted_ms IS NOT NULL THEN excluded.acted_ms
                             WHEN run_presence.run_id = excluded.run_id
                             THEN run_presence.acted_ms END,
             run_id = excluded.run_id",
    )
    .bind::<Text, _>(entering.instance)
    .bind::<BigInt, _>(entering.conn_id)
    .bind::<BigInt, _>(entering.run)
    .bind::<Nullable<Text>, _>(entering.person)
    .bind::<Text, _>(entering.client_name)
    .bind::<Text, _>(entering.client_kind)
    .bind::<BigInt, _>(entering.now)
    .bind::<Nullable<BigInt>, _>(entering.acted.then_some(entering.now))
    .execute(conn)?;
    Ok(before.filter(|run| *run != entering.run))
}

/// The run the connection is in, if any.
pub(crate) fn in_run(
    conn: &mut Conn,
    instance: &str,
    conn_id: i64,
) -> Result<Option<RunId>, DbError> {
    let row: Option<InRun> =
        statement("SELECT run_id FROM run_presence WHERE instance_id = ? AND conn_id = ?")
            .bind::<Text, _>(instance)
            .bind::<BigInt, _>(conn_id)
            .get_result(conn)
            .optional()?;
    Ok(row.map(|row| row.run_id))
}

/// Takes the connection out of the run it is in (only out of `run`, when given); returns the
/// run it left.
pub(crate) fn leave(
    conn: &mut Conn,
    instance: &str,
    conn_id: i64,
    run: Option<RunId>,
) -> Result<Option<RunId>, DbError> {
    let row: Option<InRun> = statement(
        "DELETE FROM run_presence
         WHERE instance_id = ? AND conn_id = ? AND (? IS NULL OR run_id = ?)
         RETURNING run_id",
    )
    .bind::<Text, _>(instance)
    .bind::<BigInt, _>(conn_id)
    .bind::<Nullable<BigInt>, _>(run)
    .bind::<Nullable<BigInt>, _>(run)
    .get_result(conn)
    .optional()?;
    Ok(row.map(|row| row.run_id))
}

/// The connections in `run` whose instance is alive at `now`, longest present first.
pub(crate) fn of_run(conn: &mut Conn, run: RunId, now: i64) -> Result<Vec<PresentRow>, DbError> {
    Ok(statement(
        "SELECT p.instance_id, p.conn_id, p.person, p.client_name, p.client_kind,
                p.since_ms, p.acted_ms
         FROM run_presence AS p JOIN instances AS i ON i.id = p.instance_id
         WHERE p.run_id = ? AND i.expires_at >= ?
         ORDER BY p.since_ms, p.instance_id, p.conn_id",
    )
    .bind::<BigInt, _>(run)
    .bind::<BigInt, _>(now)
    .load(conn)?)
}

#[cfg(test)]
mod tests;
