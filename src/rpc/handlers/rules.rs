//! `rules/list` and `rules/revoke`: people's command rules ("allow always", `agent::allow`;
//! made by `run/resolve` with `always`). A person sees and revokes their own; an admin (or
//! the operator) everyone's, in the projects they may open.

use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::access::Role;
use crate::agent::allow::{person_key, person_of, RuleError};
use crate::db::ids::ProjectId;
use crate::db::queries::command_rules::{self, CommandRuleRow};
use crate::db::queries::projects;
use crate::error::AppError;
use crate::rpc::call::{CallContext, Reply};

/// `rules/list` params.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ListParams {
    /// A project by name (default: the bound one).
    #[serde(default)]
    project: Option<String>,
}

/// `rules/revoke` params.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RevokeParams {
    id: i64,
}

/// One rule as `rules/list` answers it.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct RuleView {
    id: i64,
    project: String,
    /// Whose rule it is (`null`: the operator's).
    person: Option<String>,
    pattern: String,
    made_by: Option<String>,
    made_at: String,
}

impl RuleView {
    fn of(row: CommandRuleRow, project: &str) -> RuleView {
        RuleView {
            id: row.id,
            project: project.to_owned(),
            person: person_of(&row.person),
            pattern: row.pattern,
            made_by: person_of(&row.made_by),
            made_at: row.made_at,
        }
    }
}

/// The project's rules the caller may see: their own, or an admin's everyone's.
pub(crate) async fn list(context: CallContext, params: ListParams) -> Result<Reply, AppError> {
    let (project, name) = match params.project {
        Some(name) => {
            context.grant()?.open(&name)?;
            let found = name.clone();
            let row = context
                .agent
                .db
                .read(move |conn| projects::find_project(conn, &found))
                .await?
                .ok_or_else(|| AppError::InvalidParam(format!("no project '{name}'")))?;
            (row.id, name)
        }
        None => {
            let binding = context.project()?;
            (binding.id, binding.name.clone())
        }
    };
    let admin = context.grant()?.role() >= Role::Admin;
    let person = (!admin).then(|| person_key(context.caller.person()).to_owned());
    let rows = context
        .agent
        .db
        .read(move |conn| command_rules::of_project(conn, project, person.as_deref()))
        .await?;
    let rules: Vec<RuleView> = rows
        .into_iter()
        .map(|row| RuleView::of(row, &name))
        .collect();
    Reply::of(json!({ "rules": rules }))
}

/// Revokes the rule `id`: the caller's own, or as an admin anyone's in a project they may
/// open.
pub(crate) async fn revoke(context: CallContext, params: RevokeParams) -> Result<Reply, AppError> {
    let id = params.id;
    let found = context
        .agent
        .db
        .read(move |conn| {
            let Some(rule) = command_rules::get(conn, id)? else {
                return Ok(None);
            };
            let project = projects::get_project(conn, ProjectId(rule.project_id))?;
            Ok(Some((rule, project.map(|project| project.name))))
        })
        .await?;
    let Some((rule, project)) = found else {
        return Err(RuleError::Unknown(id).into());
    };
    let grant = context.grant()?;
    grant.open(project.as_deref().unwrap_or_default())?;
    let own = rule.person == person_key(context.caller.person());
    if !own && grant.role() < Role::Admin {
        let whose = person_of(&rule.person).unwrap_or_else(|| "the operator".to_owned());
        return Err(RuleError::NotYours { id, whose }.into());
    }
    let revoked = context
        .agent
        .db
        .call(move |conn| command_rules::revoke(conn, id))
        .await?;
    if !revoked {
        return Err(RuleError::Unknown(id).into());
    }
    Reply::of(json!({ "revoked": id }))
}
