//! `people/add`, `people/update`, `people/remove` and `people/token`: admins change the
//! people of the users file from a client (the console's Admin page). The file stays the
//! source of truth (`access::Access::change` edits it, comments kept, and writes it
//! atomically); the change holds at once on every connection of this server, and on every
//! other instance sharing the file once its watch reads it. A new token is drawn by the
//! server, answered once and stored only as its SHA-256. Each change is audited.

use serde::Deserialize;
use serde_json::{json, Value};

use super::admin_changes::record;
use super::blocking::blocking;
use crate::access::{hash_token, PersonChange, Role};
use crate::error::AppError;
use crate::rpc::call::{CallContext, Reply};

/// `people/add` params.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct AddParams {
    name: String,
    /// Read by [`role`], which says what a wrong one must be.
    role: String,
    #[serde(default)]
    projects: Vec<String>,
}

/// `people/update` params.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct UpdateParams {
    name: String,
    #[serde(default)]
    role: Option<String>,
    #[serde(default)]
    projects: Option<Vec<String>>,
}

/// `people/remove` and `people/token` params.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct NameParams {
    name: String,
}

/// The role called `name`, refused saying which there are.
fn role(name: &str) -> Result<Role, AppError> {
    match name {
        "viewer" => Ok(Role::Viewer),
        "member" => Ok(Role::Member),
        "admin" => Ok(Role::Admin),
        other => Err(AppError::InvalidParam(format!(
            "role must be viewer, member or admin (got {other:?})"
        ))),
    }
}

/// A token for a person: 32 random bytes in hex.
fn new_token() -> Result<String, AppError> {
    crate::random::random_hex(32)
        .map_err(|error| AppError::Internal(format!("cannot draw a token: {error}")))
}

/// Makes `change` to the users file, audits it as `action` with `detail`, and lets the
/// paused loops be looked at again (a person's caps may have gone with them).
async fn apply(
    context: &CallContext,
    change: PersonChange,
    action: &'static str,
    detail: Value,
) -> Result<(), AppError> {
    let access = context.access.clone();
    let name = match &change {
        PersonChange::Add { name, .. }
        | PersonChange::Update { name, .. }
        | PersonChange::Remove { name }
        | PersonChange::Token { name, .. } => name.clone(),
    };
    blocking(move || Ok(access.change(&change)?)).await?;
    context.agent.paused.poke();
    let by = context.person();
    context
        .agent
        .db
        .call(move |conn| record(conn, by.as_deref(), action, &name, &detail))
        .await?;
    Ok(())
}

/// `people/add`: a new person with a new token, answered this once.
pub(crate) async fn add(context: CallContext, params: AddParams) -> Result<Reply, AppError> {
    let role = role(&params.role)?;
    let token = new_token()?;
    let detail = json!({"role": role, "projects": params.projects});
    let change = PersonChange::Add {
        name: params.name.clone(),
        role,
        projects: params.projects.clone(),
        token_sha256: hash_token(&token),
    };
    apply(&context, change, "people/add", detail).await?;
    Reply::of(json!({
        "name": params.name,
        "role": role,
        "projects": params.projects,
        "token": token,
    }))
}

/// `people/update`: another role, other projects, or both.
pub(crate) async fn update(context: CallContext, params: UpdateParams) -> Result<Reply, AppError> {
    if params.role.is_none() && params.projects.is_none() {
        return Err(AppError::InvalidParam(
            "people/update needs role, projects or both".to_owned(),
        ));
    }
    let role = params.role.as_deref().map(role).transpose()?;
    let mut detail = serde_json::Map::new();
    if let Some(role) = role {
        detail.insert("role".into(), json!(role));
    }
    if let Some(projects) = &params.projects {
        detail.insert("projects".into(), json!(projects));
    }
    let name = params.name.clone();
    let change = PersonChange::Update {
        name: params.name,
        role,
        projects: params.projects,
    };
    apply(&context, change, "people/update", Value::Object(detail)).await?;
    person_view(&context, &name)
}

/// `people/remove`: the person's table gone; their connections can do nothing more.
pub(crate) async fn remove(context: CallContext, params: NameParams) -> Result<Reply, AppError> {
    let change = PersonChange::Remove {
        name: params.name.clone(),
    };
    apply(&context, change, "people/remove", json!({})).await?;
    Reply::of(json!({ "removed": params.name }))
}

/// `people/token`: a new token for the person, answered this once; the old one opens
/// nothing more.
pub(crate) async fn token(context: CallContext, params: NameParams) -> Result<Reply, AppError> {
    let token = new_token()?;
    let change = PersonChange::Token {
        name: params.name.clone(),
        token_sha256: hash_token(&token),
    };
    apply(&context, change, "people/token", json!({})).await?;
    Reply::of(json!({ "name": params.name, "token": token }))
}

/// The person as `getPeople` shows them, as the file says now.
fn person_view(context: &CallContext, name: &str) -> Result<Reply, AppError> {
    let person = context
        .access
        .people()
        .named(name)
        .ok_or_else(|| AppError::Internal(format!("{name} is gone from the users file")))?;
    Reply::of(json!({
        "name": person.name,
        "role": person.role,
        "projects": person.patterns(),
    }))
}
