//! Routing one request to its handler, with the access check, the init gate and the RPC
//! timeout.

use std::time::Duration;

use serde_json::Value;

use crate::error::AppError;
use crate::rpc::call::{CallContext, Reply};
use crate::rpc::methods::{self, Method, ToolCatalogue};

/// Serves one request: method lookup, the caller's role, init gate and the caller's right to
/// the bound project (both looked up now: a reload of the users file applies to the next
/// call), timeout, handler. A refused call changes nothing.
pub async fn call(
    context: CallContext,
    method_name: &str,
    params: Value,
) -> Result<Reply, AppError> {
    let method = Method::from_name(method_name, &ToolCatalogue::of(&context.agent))
        .ok_or_else(|| AppError::MethodNotFound(method_name.to_string()))?;
    let spec = method.spec();
    let grant = context.grant()?;
    grant.require(spec.role, method.name())?;
    if spec.needs_init {
        grant.open(&context.project()?.name)?;
    }
    if spec.long_running {
        return methods::route(context, method, params).await;
    }
    let timeout_ms = context.agent.settings.server.rpc_timeout_ms;
    match tokio::time::timeout(
        Duration::from_millis(timeout_ms),
        methods::route(context, method, params),
    )
    .await
    {
        Ok(outcome) => outcome,
        Err(_) => Err(AppError::Timeout {
            method: method.name().to_string(),
            timeout_ms,
        }),
    }
}
