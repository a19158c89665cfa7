//! `getMcpServers`: the configured MCP servers, whether the bound project uses them,
//! whether they are connected (or why not) and the tools they list now.

use crate::error::AppError;
use crate::rpc::call::{CallContext, Reply};
use crate::rpc::params::NoParams;

/// `getMcpServers`: every server of `$RUMMY_HOME/mcp.toml`, in its order.
pub async fn list(context: CallContext, _: NoParams) -> Result<Reply, AppError> {
    let project = context.project()?;
    Reply::of(context.agent.mcp.describe(&project.name))
}
