//! `mcp/add`, `mcp/remove` and `mcp/restart`: admins change the configured MCP servers from
//! a client (the console's Admin page). `mcp.toml` stays the source of truth (its comments
//! kept, written atomically: `mcp::edit`); what each change does to the running servers is
//! `mcp::changes`'. Each change is audited with the names of the env keys and headers it
//! set, never their values.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::{json, Value};

use super::admin_changes::record;
use super::blocking::blocking;
use crate::config::Secret;
use crate::db::models::SchemeRow;
use crate::db::queries::schemes::register_scheme;
use crate::error::AppError;
use crate::mcp::config::PersonalEntry;
use crate::mcp::edit::NewServer;
use crate::rpc::call::{CallContext, Reply};

/// `mcp/add` params: the fields of a `[[server]]` table of `mcp.toml`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct AddParams {
    name: String,
    #[serde(default)]
    command: Option<String>,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    env: BTreeMap<String, Secret>,
    #[serde(default)]
    url: Option<String>,
    #[serde(default)]
    headers: BTreeMap<String, Secret>,
    #[serde(default)]
    trusted: Option<bool>,
    #[serde(default)]
    timeout_secs: Option<u64>,
    #[serde(default)]
    max_output_bytes: Option<u64>,
    #[serde(default)]
    projects: Option<Vec<String>>,
    #[serde(default)]
    personal: Option<PersonalEntry>,
}

/// `mcp/remove` and `mcp/restart` params.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct NameParams {
    name: String,
}

/// Audits `action` on the server `name`, after registering `scheme` (an added server's).
async fn audit(
    context: &CallContext,
    action: &'static str,
    name: &str,
    detail: Value,
    scheme: Option<SchemeRow>,
) -> Result<(), AppError> {
    let by = context.person();
    let name = name.to_owned();
    context
        .agent
        .db
        .call(move |conn| {
            if let Some(scheme) = &scheme {
                register_scheme(conn, scheme)?;
            }
            record(conn, by.as_deref(), action, &name, &detail)
        })
        .await?;
    Ok(())
}

/// `mcp/add`: the server written to `mcp.toml`, started and offered from the loops' next
/// turns; `{name, tag}`.
pub(crate) async fn add(context: CallContext, params: AddParams) -> Result<Reply, AppError> {
    let detail = json!({
        "command": params.command,
        "args": params.args,
        "url": params.url,
        "envKeys": params.env.keys().collect::<Vec<_>>(),
        "headerNames": params.headers.keys().collect::<Vec<_>>(),
        "trusted": params.trusted.unwrap_or(false),
        "projects": params.projects,
        "personal": params.personal.as_ref().map(|personal| json!({
            "header": personal.header,
            "env": personal.env,
        })),
    });
    let server = NewServer {
        name: params.name,
        command: params.command,
        args: params.args,
        env: params.env,
        url: params.url,
        headers: params.headers,
        trusted: params.trusted,
        timeout_secs: params.timeout_secs,
        max_output_bytes: params.max_output_bytes,
        projects: params.projects,
        personal: params.personal,
    };
    let name = server.name.clone();
    let mcp = context.agent.mcp.clone();
    let config = blocking(move || mcp.add_blocking(&server).map_err(AppError::from)).await?;
    let tag = config.tag();
    let scheme = context.agent.mcp.start_added(config);
    audit(&context, "mcp/add", &name, detail, Some(scheme)).await?;
    Reply::of(json!({ "name": name, "tag": tag }))
}

/// `mcp/remove`: the server gone from `mcp.toml` and closed; `{removed: name}`.
pub(crate) async fn remove(context: CallContext, params: NameParams) -> Result<Reply, AppError> {
    let mcp = context.agent.mcp.clone();
    let name = params.name.clone();
    blocking(move || mcp.remove_blocking(&name).map_err(AppError::from)).await?;
    audit(&context, "mcp/remove", &params.name, json!({}), None).await?;
    Reply::of(json!({ "removed": params.name }))
}

/// `mcp/restart`: the server's session ended and made again; `{restarted: name}`.
pub(crate) async fn restart(context: CallContext, params: NameParams) -> Result<Reply, AppError> {
    context.agent.mcp.restart(&params.name)?;
    audit(&context, "mcp/restart", &params.name, json!({}), None).await?;
    Reply::of(json!({ "restarted": params.name }))
}
