//! What the methods of a person's own secrets share (`keys/*`, `hostCredentials/*`,
//! `mcpCredentials/*`): the secret param kept as a [`SecretString`] from the moment it is
//! read, the calling person (the operator has none), and storing (sealed), listing (never
//! the value) and removing one of theirs by kind and name, each change audited in the same
//! unit of work (`admin/changes`: who, what, the detail given; never the value).

use serde::Deserialize;
use serde_json::{json, Map, Value};

use super::admin_changes::record;
use crate::error::AppError;
use crate::rpc::call::CallContext;
use crate::secrets::{SecretString, SecretsError};

/// A secret param, kept as a [`SecretString`] from the moment it is read.
pub(crate) fn secret<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<SecretString, D::Error> {
    String::deserialize(deserializer).map(SecretString::from)
}

/// The calling person, or `refusal` for the operator (whose runs have none of their own).
pub(super) fn person(context: &CallContext, refusal: &str) -> Result<String, AppError> {
    context
        .person()
        .ok_or_else(|| AppError::InvalidParam(refusal.to_owned()))
}

/// The store's failure as the store's error; any other as an internal error (its message
/// names the value, never holds it).
fn stored(error: SecretsError) -> AppError {
    match error {
        SecretsError::Db(error) => error.into(),
        other => AppError::Internal(other.to_string()),
    }
}

/// What a change is audited as: its action, and the detail (an object).
pub(super) struct Audit {
    pub action: &'static str,
    pub detail: Map<String, Value>,
}

/// Seals `value` and stores it as `person`'s `kind` `name`, replacing theirs; audited with
/// `replaced` added to the detail.
pub(super) async fn store(
    context: &CallContext,
    person: &str,
    (kind, name): (&str, &str),
    value: &SecretString,
    audit: Audit,
) -> Result<(), AppError> {
    let by = person.to_owned();
    let Audit { action, mut detail } = audit;
    context
        .agent
        .secrets
        .put(person, kind, name, value, move |conn, replaced| {
            detail.insert("replaced".into(), Value::Bool(replaced));
            record(conn, Some(&by), action, &by, &Value::Object(detail))
        })
        .await
        .map_err(stored)
}

/// `person`'s secrets of `kind`, each `{<named>: name, setAt, updatedAt, lastUsedAt}`
/// (`YYYY-MM-DD HH:MM:SS` UTC), never a value.
pub(super) async fn listed(
    context: &CallContext,
    person: &str,
    kind: &str,
    named: &str,
) -> Result<Vec<Value>, AppError> {
    let rows = context
        .agent
        .secrets
        .list(person, kind)
        .await
        .map_err(stored)?;
    Ok(rows
        .into_iter()
        .map(|row| {
            json!({
                named: row.name,
                "setAt": row.created_at,
                "updatedAt": row.updated_at,
                "lastUsedAt": row.last_used_at,
            })
        })
        .collect())
}

/// Removes `person`'s `kind` `name`; whether there was one (then audited).
pub(super) async fn forget(
    context: &CallContext,
    person: &str,
    (kind, name): (&str, &str),
    audit: Audit,
) -> Result<bool, AppError> {
    let by = person.to_owned();
    let Audit { action, detail } = audit;
    context
        .agent
        .secrets
        .remove(person, kind, name, move |conn| {
            record(conn, Some(&by), action, &by, &Value::Object(detail))
        })
        .await
        .map_err(stored)
}

/// A detail object of one field.
pub(super) fn detail(field: &str, value: &str) -> Map<String, Value> {
    let mut detail = Map::new();
    detail.insert(field.to_owned(), Value::String(value.to_owned()));
    detail
}
