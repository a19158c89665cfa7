//! `caps/set`, `caps/clear` and `caps/list`: spend caps admins set at run time for a
//! person, a project or the server, kept in the store (`stored_caps`) so they outlive a
//! restart and hold on every instance (`llm::stored_caps`). A stored cap replaces the
//! configured one of the same scope, subject, period and unit; a raised or cleared one lets
//! the loops it paused go on at once. Each change is audited.

use serde::{Deserialize, Serialize};
use serde_json::json;

use super::admin_changes::record;
use crate::access::valid_name;
use crate::agent::allow::person_of;
use crate::agent::paused::resume_run;
use crate::db::queries::{paused_loops, stored_caps};
use crate::error::AppError;
use crate::rpc::call::{CallContext, Reply};
use crate::usage::{CapLimits, Scope};

/// The longest project name a cap is set for.
const PROJECT_NAME_MAX: usize = 256;

/// `caps/set` params.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct SetParams {
    scope: Scope,
    #[serde(default)]
    subject: Option<String>,
    caps: CapLimits,
}

/// `caps/clear` params.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ClearParams {
    scope: Scope,
    #[serde(default)]
    subject: Option<String>,
}

/// One scope's stored caps as `caps/list` answers them.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct StoredView {
    scope: String,
    subject: String,
    caps: serde_json::Value,
    /// Who set them (`null`: the operator).
    set_by: Option<String>,
    set_at: String,
}

/// The subject's name as stored ('' for the server), refused when it names none.
fn subject(scope: Scope, subject: Option<String>) -> Result<String, AppError> {
    let subject = subject.unwrap_or_default();
    match scope {
        Scope::Run => Err(AppError::InvalidParam(
            "a run's caps are given by ask or act (caps); caps/set takes person, project or \
             server"
                .to_owned(),
        )),
        Scope::Server if !subject.is_empty() => Err(AppError::InvalidParam(
            "the server's caps take no subject".to_owned(),
        )),
        Scope::Project if subject.is_empty() || subject.len() > PROJECT_NAME_MAX => {
            Err(AppError::InvalidParam(format!(
                "a project's caps need its name as subject (1 to {PROJECT_NAME_MAX} bytes)"
            )))
        }
        Scope::Person if !valid_name(&subject) => Err(AppError::InvalidParam(format!(
            "a person's caps need their name as subject (got {subject:?})"
        ))),
        _ => Ok(subject),
    }
}

/// Takes the stored caps again and takes up, for the caller, every paused loop none of
/// whose caps stands now.
async fn changed(context: &CallContext) -> Result<(), AppError> {
    let agent = &context.agent;
    agent.llm.spending().book().stored.reload(&agent.db).await?;
    for row in agent.db.read(paused_loops::all).await? {
        resume_run(agent, row.run_id, context.person()).await?;
    }
    Ok(())
}

/// `caps/set`: the scope's stored caps, replacing those stored before.
pub(crate) async fn set(context: CallContext, params: SetParams) -> Result<Reply, AppError> {
    let scope = params.scope;
    let subject = subject(scope, params.subject)?;
    let limits = params
        .caps
        .checked()
        .map_err(|error| AppError::InvalidParam(format!("caps.{error}")))?;
    if limits.iter().next().is_none() {
        return Err(AppError::InvalidParam(
            "caps names no cap (day_tokens, day_dollars, month_tokens, month_dollars); \
             caps/clear removes a scope's caps"
                .to_owned(),
        ));
    }
    let caps =
        serde_json::to_value(params.caps).map_err(|error| AppError::Internal(error.to_string()))?;
    let by = context.person();
    let (stored_subject, stored_caps) = (subject.clone(), caps.clone());
    context
        .agent
        .db
        .call(move |conn| {
            let text = stored_caps.to_string();
            stored_caps::set(
                conn,
                scope.as_str(),
                &stored_subject,
                &text,
                by.as_deref().unwrap_or(""),
            )?;
            let detail = json!({"scope": scope.as_str(), "caps": stored_caps});
            record(conn, by.as_deref(), "caps/set", &stored_subject, &detail)
        })
        .await?;
    changed(&context).await?;
    Reply::of(json!({"scope": scope.as_str(), "subject": subject, "caps": caps}))
}

/// `caps/clear`: the scope's stored caps removed (the configured ones hold again).
pub(crate) async fn clear(context: CallContext, params: ClearParams) -> Result<Reply, AppError> {
    let scope = params.scope;
    let subject = subject(scope, params.subject)?;
    let by = context.person();
    let cleared_subject = subject.clone();
    let cleared = context
        .agent
        .db
        .call(move |conn| {
            let cleared = stored_caps::clear(conn, scope.as_str(), &cleared_subject)?;
            if cleared {
                let detail = json!({"scope": scope.as_str()});
                record(conn, by.as_deref(), "caps/clear", &cleared_subject, &detail)?;
            }
            Ok(cleared)
        })
        .await?;
    changed(&context).await?;
    Reply::of(json!({"scope": scope.as_str(), "subject": subject, "cleared": cleared}))
}

/// `caps/list`: every stored cap, by scope then subject.
pub(crate) async fn list(
    context: CallContext,
    _: crate::rpc::params::NoParams,
) -> Result<Reply, AppError> {
    let rows = context.agent.db.read(stored_caps::all).await?;
    let caps: Vec<StoredView> = rows
        .into_iter()
        .map(|row| StoredView {
            scope: row.scope,
            subject: row.subject,
            caps: serde_json::from_str(&row.caps).unwrap_or(serde_json::Value::Null),
            set_by: person_of(&row.set_by),
            set_at: row.set_at,
        })
        .collect();
    Reply::of(json!({ "caps": caps }))
}
