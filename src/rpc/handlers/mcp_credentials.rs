//! `mcpCredentials/set`, `mcpCredentials/list`, `mcpCredentials/remove`: a person's own
//! credentials for the MCP servers that take each person's own (`personal` in `mcp.toml`),
//! sealed in the store (`crate::secrets`, kind `mcp`, named by the server); never returned.
//! The runs they start reach those servers on a connection of theirs made with it
//! (`crate::mcp::personal`); a change or removal closes that connection at once. Each change
//! is in the audit (`admin/changes`: who, when, which server; never the value), as is each
//! connection made with it (`mcp/credential`).

use serde::Deserialize;
use serde_json::json;

use super::own_secrets::{self, detail, secret, Audit};
use crate::error::AppError;
use crate::rpc::call::{CallContext, Reply};
use crate::secrets::{ExposeSecret, SecretString, MCP_CREDENTIAL};

/// The longest credential taken.
const VALUE_MAX_CHARS: usize = 4096;

/// `mcpCredentials/set` params.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct SetParams {
    server: String,
    #[serde(deserialize_with = "secret")]
    value: SecretString,
}

impl std::fmt::Debug for SetParams {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SetParams({}, <the value>)", self.server)
    }
}

/// `mcpCredentials/remove` params.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RemoveParams {
    server: String,
}

/// The calling person: MCP credentials are a person's own; the operator's runs have none.
fn person(context: &CallContext) -> Result<String, AppError> {
    own_secrets::person(
        context,
        "MCP credentials belong to a person of the users file; the operator's runs reach \
         no server that takes each person's own",
    )
}

/// `name`, when it is a running server that takes each person's own credential.
fn personal_server(context: &CallContext, name: &str) -> Result<(), AppError> {
    let servers = context.agent.mcp.personal_servers();
    if servers.iter().any(|server| server == name) {
        return Ok(());
    }
    Err(AppError::InvalidParam(format!(
        "server: {name:?} is no MCP server that takes each person's own credential (those \
         that do: {})",
        if servers.is_empty() {
            "none".to_owned()
        } else {
            servers.join(", ")
        }
    )))
}

/// `mcpCredentials/set`: seals and stores the caller's credential for a server, replacing
/// theirs (and closing their connection made with the old one).
pub(crate) async fn set(context: CallContext, params: SetParams) -> Result<Reply, AppError> {
    let person = person(&context)?;
    personal_server(&context, &params.server)?;
    let value = params.value.expose_secret();
    let visible = value
        .chars()
        .all(|c| !c.is_control() && (c == ' ' || !c.is_whitespace()));
    if value.trim().is_empty() || value.chars().count() > VALUE_MAX_CHARS || !visible {
        return Err(AppError::InvalidParam(format!(
            "value: 1 to {VALUE_MAX_CHARS} visible characters"
        )));
    }
    let server = params.server;
    let audit = Audit {
        action: "mcpCredentials/set",
        detail: detail("server", &server),
    };
    let named = (MCP_CREDENTIAL, server.as_str());
    own_secrets::store(&context, &person, named, &params.value, audit).await?;
    context.agent.mcp.forget_credential(&person, &server);
    Reply::of(json!({ "server": server }))
}

/// `mcpCredentials/list`: the servers that take each person's own credential, and those
/// the caller has one for, when set and last used.
pub(crate) async fn list(
    context: CallContext,
    _params: crate::rpc::params::NoParams,
) -> Result<Reply, AppError> {
    let person = person(&context)?;
    let credentials = own_secrets::listed(&context, &person, MCP_CREDENTIAL, "server").await?;
    let servers = context.agent.mcp.personal_servers();
    Reply::of(json!({ "servers": servers, "credentials": credentials }))
}

/// `mcpCredentials/remove`: forgets the caller's credential for a server (closing their
/// connection to it); whether there was one.
pub(crate) async fn remove(context: CallContext, params: RemoveParams) -> Result<Reply, AppError> {
    let person = person(&context)?;
    let server = params.server;
    let audit = Audit {
        action: "mcpCredentials/remove",
        detail: detail("server", &server),
    };
    let named = (MCP_CREDENTIAL, server.as_str());
    let removed = own_secrets::forget(&context, &person, named, audit).await?;
    context.agent.mcp.forget_credential(&person, &server);
    Reply::of(json!({"server": server, "removed": removed}))
}
