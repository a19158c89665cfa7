//! `getMcpServers`: the configured MCP servers, whether the bound project uses them,
//! whether they are connected (or why not) and the tools they list now (a server taking
//! each person's own credential: the caller's own connection to it). `run/mcp`: the
//! servers this connection attaches to a run.

use serde::Deserialize;

use crate::error::AppError;
use crate::mcp::attached::ClientServer;
use crate::rpc::call::{CallContext, Reply};
use crate::rpc::handlers::runs::find_run;
use crate::rpc::params::NoParams;
use crate::web::NetFilter;

/// `getMcpServers`: every server of `$RUMMY_HOME/mcp.toml`, in its order.
pub(crate) async fn list(context: CallContext, _: NoParams) -> Result<Reply, AppError> {
    let project = context.project()?;
    let person = context.person();
    Reply::of(context.agent.mcp.describe(&project.name, person.as_deref()))
}

/// `run/mcp` params.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct AttachParams {
    pub run: String,
    pub servers: Vec<ClientServer>,
}

/// `run/mcp`: makes `servers` the ones this connection attaches to the run, replacing what
/// it attached before (an empty list detaches them); they live until it closes. Answers
/// each one's state once it has connected or failed (or is still connecting after
/// [`crate::mcp::ATTACH_PATIENCE`]).
pub(crate) async fn attach(context: CallContext, params: AttachParams) -> Result<Reply, AppError> {
    let run = find_run(&context, &params.run).await?;
    let settings = &context.agent.settings;
    let filter = NetFilter::new(settings.web.allow_nets.clone());
    let servers = context
        .agent
        .mcp
        .attach(
            run.id,
            context.conn,
            params.servers,
            settings.agent.client_mcp,
            &filter,
        )
        .await?;
    Reply::of(serde_json::json!({ "servers": servers }))
}
