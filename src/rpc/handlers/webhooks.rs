//! `webhooks/add`, `webhooks/list`, `webhooks/remove` and `webhooks/deliveries`: the bound
//! project's webhooks, for admins (the method table says so). The secret a webhook signs
//! with is answered once, by `webhooks/add`; no list shows it, and the audit log keeps no
//! text of that call (`ws::audit`).

use serde::{Deserialize, Serialize};

use crate::db::queries::runs::now_ms;
use crate::db::queries::webhooks::deliveries::{self, LoggedAttempt, DELIVERED, GIVEN_UP};
use crate::db::queries::webhooks::{self, NewWebhook, WebhookRow};
use crate::error::AppError;
use crate::random::random_hex;
use crate::rpc::call::{CallContext, Reply};
use crate::usage::UtcTime;
use crate::webhooks::payload::delivery_id;
use crate::webhooks::{target, Event, Format};

/// The fewest and most characters of a secret an admin gives.
const SECRET_CHARS: std::ops::RangeInclusive<usize> = 16..=256;

/// Deliveries `webhooks/deliveries` answers unless asked for fewer, and the most it does.
const DELIVERIES_DEFAULT: i64 = 20;
const DELIVERIES_MAX: i64 = 200;

/// `webhooks/add` params.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct AddParams {
    url: String,
    events: Vec<String>,
    #[serde(default)]
    format: Option<Format>,
    #[serde(default)]
    secret: Option<String>,
}

/// `webhooks/remove` params.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct RemoveParams {
    id: String,
}

/// `webhooks/deliveries` params.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct DeliveriesParams {
    id: String,
    #[serde(default)]
    limit: Option<i64>,
}

/// A webhook as answered.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct WebhookView {
    id: String,
    url: String,
    events: Vec<String>,
    format: String,
    created_by: Option<String>,
    created: String,
    /// Only in `webhooks/add`'s answer.
    #[serde(skip_serializing_if = "Option::is_none")]
    secret: Option<String>,
}

impl WebhookView {
    fn of(row: WebhookRow) -> WebhookView {
        WebhookView {
            events: Event::listed(&row.events)
                .into_iter()
                .map(str::to_owned)
                .collect(),
            id: row.id,
            url: row.url,
            format: row.format,
            created_by: row.created_by,
            created: iso(row.created_ms),
            secret: None,
        }
    }
}

fn iso(ms: i64) -> String {
    UtcTime(ms.div_euclid(1000)).iso()
}

/// Adds a webhook to the bound project; answers it with its secret, shown this once.
pub(crate) async fn add(context: CallContext, params: AddParams) -> Result<Reply, AppError> {
    let project = context.project()?.id;
    let url = target::checked(params.url.trim())
        .map_err(AppError::InvalidParam)?
        .to_string();
    if params.events.is_empty() {
        return Err(AppError::InvalidParam(format!(
            "events must name at least one of {}",
            event_names()
        )));
    }
    let events = Event::stored(&params.events).map_err(|unknown| {
        AppError::InvalidParam(format!(
            "'{unknown}' is no webhook event; events are {}",
            event_names()
        ))
    })?;
    let secret = match params.secret {
        Some(secret) => {
            let chars = secret.chars().count();
            if !SECRET_CHARS.contains(&chars) || secret.chars().any(char::is_control) {
                return Err(AppError::InvalidParam(format!(
                    "secret must be {} to {} characters, none a control character",
                    SECRET_CHARS.start(),
                    SECRET_CHARS.end()
                )));
            }
            secret
        }
        None => format!("whsec_{}", random(24)?),
    };
    let format = params.format.unwrap_or_default();
    let row = WebhookRow {
        id: format!("wh_{}", random(8)?),
        url,
        events,
        format: format.name().to_owned(),
        created_by: context.person(),
        created_ms: now_ms(),
    };
    let stored = row.clone();
    let stored_secret = secret.clone();
    context
        .agent
        .db
        .call(move |conn| {
            webhooks::add(
                conn,
                &NewWebhook {
                    id: &stored.id,
                    project,
                    url: &stored.url,
                    events: &stored.events,
                    format: &stored.format,
                    secret: &stored_secret,
                    created_by: stored.created_by.as_deref(),
                    created_ms: stored.created_ms,
                },
            )
        })
        .await?;
    context.agent.webhooks.learnt(true);
    Reply::of(WebhookView {
        secret: Some(secret),
        ..WebhookView::of(row)
    })
}

/// The bound project's webhooks, never their secrets.
pub(crate) async fn list(
    context: CallContext,
    _: crate::rpc::params::NoParams,
) -> Result<Reply, AppError> {
    let project = context.project()?.id;
    let rows = context
        .agent
        .db
        .read(move |conn| webhooks::of_project(conn, project))
        .await?;
    Reply::of(serde_json::json!({
        "webhooks": rows.into_iter().map(WebhookView::of).collect::<Vec<_>>()
    }))
}

/// Removes a webhook of the bound project, with its pending deliveries and its log.
pub(crate) async fn remove(context: CallContext, params: RemoveParams) -> Result<Reply, AppError> {
    let binding = context.project()?;
    let (project, name) = (binding.id, binding.name.clone());
    let id = params.id.clone();
    let (removed, any) = context
        .agent
        .db
        .call(move |conn| Ok((webhooks::remove(conn, project, &id)?, webhooks::any(conn)?)))
        .await?;
    if !removed {
        return Err(not_found(&params.id, &name));
    }
    context.agent.webhooks.learnt(any);
    Reply::of(serde_json::json!({ "removed": params.id }))
}

/// The latest deliveries of a webhook of the bound project, newest first, each with its
/// attempts.
pub(crate) async fn deliveries(
    context: CallContext,
    params: DeliveriesParams,
) -> Result<Reply, AppError> {
    let binding = context.project()?;
    let (project, name) = (binding.id, binding.name.clone());
    let limit = params.limit.unwrap_or(DELIVERIES_DEFAULT);
    if !(1..=DELIVERIES_MAX).contains(&limit) {
        return Err(AppError::InvalidParam(format!(
            "limit must be from 1 to {DELIVERIES_MAX}"
        )));
    }
    let id = params.id.clone();
    let found = context
        .agent
        .db
        .read(move |conn| {
            if !webhooks::exists(conn, project, &id)? {
                return Ok(None);
            }
            deliveries::log(conn, &id, limit).map(Some)
        })
        .await?;
    let Some((logged, attempts)) = found else {
        return Err(not_found(&params.id, &name));
    };
    let views: Vec<serde_json::Value> = logged
        .into_iter()
        .map(|delivery| {
            let tried: Vec<serde_json::Value> = attempts
                .iter()
                .filter(|attempt| attempt.delivery_id == delivery.id)
                .map(attempt_view)
                .collect();
            let state = match delivery.state {
                DELIVERED => "delivered",
                GIVEN_UP => "failed",
                _ => "pending",
            };
            let mut view = serde_json::json!({
                "id": delivery_id(delivery.id),
                "event": delivery.event,
                "run": delivery.run,
                "state": state,
                "created": iso(delivery.created_ms),
                "attempts": tried,
            });
            if state == "pending" {
                view["next"] = serde_json::json!(iso(delivery.next_ms));
            }
            view
        })
        .collect();
    Reply::of(serde_json::json!({ "deliveries": views }))
}

fn attempt_view(attempt: &LoggedAttempt) -> serde_json::Value {
    let mut view = serde_json::json!({
        "attempt": attempt.attempt,
        "at": iso(attempt.at_ms),
        "atMs": attempt.at_ms,
        "durationMs": attempt.duration_ms,
    });
    if let Some(status) = attempt.status {
        view["status"] = serde_json::json!(status);
    }
    if let Some(error) = &attempt.error {
        view["error"] = serde_json::json!(error);
    }
    view
}

fn not_found(id: &str, project: &str) -> AppError {
    AppError::InvalidParam(format!("no webhook '{id}' in project '{project}'"))
}

fn event_names() -> String {
    Event::ALL.map(Event::name).join(", ")
}

fn random(bytes: usize) -> Result<String, AppError> {
    random_hex(bytes).map_err(|error| AppError::Internal(format!("no randomness: {error}")))
}
