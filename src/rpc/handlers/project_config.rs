//! `project/config`: the bound project's own settings — where its accepted commands run and
//! the limits of their sandbox — read by anyone who may open the project and set by admins,
//! within the server's maxima.

use serde::Deserialize;
use serde_json::json;

use crate::access::Role;
use crate::config::RunCommands;
use crate::db::queries::project_settings;
use crate::error::AppError;
use crate::rpc::call::{CallContext, Reply};
use crate::sandbox::policy::{ProjectChoice, SandboxChoice};

/// `project/config` params: none to read; `commands` and/or `sandbox` to set (each replaces
/// what the project had).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct ProjectConfigParams {
    #[serde(default)]
    commands: Option<RunCommands>,
    #[serde(default)]
    sandbox: Option<SandboxChoice>,
}

/// Reads, or (admins) sets, the project's settings; answers the project's own choice and
/// what is in effect.
pub(crate) async fn config(
    context: CallContext,
    params: ProjectConfigParams,
) -> Result<Reply, AppError> {
    let project = context.project()?.id;
    let agent = &context.agent;
    let server = &agent.settings.commands;
    let mut choice = ProjectChoice::load(&agent.db, project).await?;
    if params.commands.is_some() || params.sandbox.is_some() {
        context.grant()?.require(Role::Admin, "project/config")?;
        if let Some(commands) = params.commands {
            choice.commands = Some(commands);
        }
        if let Some(sandbox) = params.sandbox {
            choice.sandbox = sandbox;
        }
        choice.check(server).map_err(AppError::InvalidParam)?;
        if choice.policy(server).commands == RunCommands::Server {
            agent.commands.probe().await.map_err(|reason| {
                AppError::InvalidParam(format!("commands cannot run on this server: {reason}"))
            })?;
        }
        let stored = serde_json::to_string(&choice)
            .map_err(|error| AppError::Internal(error.to_string()))?;
        let person = context.person();
        agent
            .db
            .call(move |conn| project_settings::put(conn, project, &stored, person.as_deref()))
            .await?;
    }
    Reply::of(json!({"own": choice, "effective": choice.policy(server)}))
}
