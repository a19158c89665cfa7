//! A project's webhooks (`webhooks/*`, the `webhooks` module): each a URL, the events it is
//! sent, its payload's format and its signing secret, which only [`deliveries`] reads back
//! (to sign) and no list shows. A run's end becomes deliveries in the store's trigger on
//! the event log (migration `2026-12-14-000000_webhooks`); a cap's warning in [`cap_warned`],
//! from the ledger's unit of work.

pub(crate) mod deliveries;

use diesel::prelude::*;
use diesel::sql_types::{BigInt, Nullable, Text};

use crate::db::ids::{ProjectId, RunId};
use crate::db::statement::statement;
use crate::db::{Conn, DbError};

/// A webhook as it is stored.
pub(crate) struct NewWebhook<'a> {
    pub id: &'a str,
    pub project: ProjectId,
    pub url: &'a str,
    /// Its events, each between commas.
    pub events: &'a str,
    pub format: &'a str,
    pub secret: &'a str,
    pub created_by: Option<&'a str>,
    pub created_ms: i64,
}

/// A webhook as lists show it: never its secret.
#[derive(Debug, Clone, PartialEq, Eq, QueryableByName)]
pub(crate) struct WebhookRow {
    #[diesel(sql_type = Text)]
    pub id: String,
    #[diesel(sql_type = Text)]
    pub url: String,
    /// Its events, each between commas.
    #[diesel(sql_type = Text)]
    pub events: String,
    #[diesel(sql_type = Text)]
    pub format: String,
    #[diesel(sql_type = Nullable<Text>)]
    pub created_by: Option<String>,
    #[diesel(sql_type = BigInt)]
    pub created_ms: i64,
}

/// Stores `hook`.
pub(crate) fn add(conn: &mut Conn, hook: &NewWebhook<'_>) -> Result<(), DbError> {
    statement(
        "INSERT INTO webhooks (id, project_id, url, events, format, secret, created_by, created_ms)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
    )
    .bind::<Text, _>(hook.id)
    .bind::<BigInt, _>(hook.project.0)
    .bind::<Text, _>(hook.url)
    .bind::<Text, _>(hook.events)
    .bind::<Text, _>(hook.format)
    .bind::<Text, _>(hook.secret)
    .bind::<Nullable<Text>, _>(hook.created_by)
    .bind::<BigInt, _>(hook.created_ms)
    .execute(conn)?;
    Ok(())
}

/// The webhooks of `project`, oldest first.
pub(crate) fn of_project(conn: &mut Conn, project: ProjectId) -> Result<Vec<WebhookRow>, DbError> {
    Ok(statement(
        "SELECT id, url, events, format, created_by, created_ms FROM webhooks
          WHERE project_id = ? ORDER BY created_ms, id",
    )
    .bind::<BigInt, _>(project.0)
    .load(conn)?)
}

/// Whether `project` has the webhook `id`.
pub(crate) fn exists(conn: &mut Conn, project: ProjectId, id: &str) -> Result<bool, DbError> {
    #[derive(QueryableByName)]
    struct Found {
        #[diesel(sql_type = BigInt)]
        found: i64,
    }
    let found: Found =
        statement("SELECT COUNT(*) AS found FROM webhooks WHERE project_id = ? AND id = ?")
            .bind::<BigInt, _>(project.0)
            .bind::<Text, _>(id)
            .get_result(conn)?;
    Ok(found.found > 0)
}

/// Removes the webhook `id` of `project` with its deliveries; false when it has none such.
pub(crate) fn remove(conn: &mut Conn, project: ProjectId, id: &str) -> Result<bool, DbError> {
    let removed = statement("DELETE FROM webhooks WHERE project_id = ? AND id = ?")
        .bind::<BigInt, _>(project.0)
        .bind::<Text, _>(id)
        .execute(conn)?;
    Ok(removed > 0)
}

/// In the ledger's unit of work that noted a cap's first warning in its period: a delivery
/// of `cap.warning` (`standing`: the cap's standing as JSON) for each webhook of `project`
/// sent it, about `run`. A statement only when a cap warns, once per cap and period.
pub(crate) fn cap_warned(
    conn: &mut Conn,
    project: ProjectId,
    run: RunId,
    standing: &str,
    now_ms: i64,
) -> Result<usize, DbError> {
    Ok(statement(
        "INSERT INTO webhook_deliveries (webhook_id, run_id, event, detail, title, who, created_ms, next_ms)
         SELECT w.id, r.id, 'cap.warning', ?,
                (SELECT substr(prompt, 1, 200) FROM loops WHERE run_id = r.id ORDER BY sequence LIMIT 1),
                r.created_by, ?, ?
           FROM webhooks w JOIN runs r ON r.id = ?
          WHERE w.project_id = ? AND w.events LIKE '%,cap.warning,%'",
    )
    .bind::<Text, _>(standing)
    .bind::<BigInt, _>(now_ms)
    .bind::<BigInt, _>(now_ms)
    .bind::<BigInt, _>(run)
    .bind::<BigInt, _>(project.0)
    .execute(conn)?)
}

/// Whether the store has any webhook, or any delivery still pending: whether a worker has
/// anything to look for.
pub(crate) fn any(conn: &mut Conn) -> Result<bool, DbError> {
    #[derive(QueryableByName)]
    struct Any {
        #[diesel(sql_type = BigInt)]
        hooks: i64,
        #[diesel(sql_type = BigInt)]
        pending: i64,
    }
    let any: Any = statement(
        "SELECT (SELECT COUNT(*) FROM (SELECT 1 FROM webhooks LIMIT 1) AS h) AS hooks,
                (SELECT COUNT(*) FROM (SELECT 1 FROM webhook_deliveries WHERE state = 0 LIMIT 1) AS d) AS pending",
    )
    .get_result(conn)?;
    Ok(any.hooks > 0 || any.pending > 0)
}
