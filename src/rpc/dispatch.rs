//! Routing one request to its handler, with the access check, the init gate and the RPC
//! timeout, and the plugins' hook points around it (`rpc.started`, the
//! `rpc.response.result` filters, `rpc.completed` or `rpc.error`).

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tracing::Instrument;

use crate::error::AppError;
use crate::plugins::events::Event;
use crate::plugins::filters::{RpcCall, RpcResult};
use crate::rpc::call::{CallContext, Reply};
use crate::rpc::methods::{self, Method, ToolCatalogue};
use crate::telemetry::TRACE;
use crate::tokens;

/// Serves one request: method lookup, the caller's role, init gate and the caller's right to
/// the bound project (both looked up now: a reload of the users file applies to the next
/// call), timeout, handler. A refused call changes nothing.
pub(crate) async fn call(
    context: CallContext,
    method_name: &str,
    params: Value,
) -> Result<Reply, AppError> {
    let plugins = Arc::clone(&context.agent.plugins);
    let project = context.project.as_ref().map(|binding| binding.id);
    let method = Method::from_name(method_name, &ToolCatalogue::of(&context.agent));
    let span = tracing::info_span!(
        target: TRACE,
        "rpc.request",
        rpc.method = method.map_or("(unknown)", |method| method.name()),
        person = context.caller.person(),
        project.id = project.map(|id| id.0),
    );
    let outcome = match method {
        None => Err(AppError::MethodNotFound(method_name.to_string())),
        Some(method) => {
            let mut outcome = serve(context, method, params).instrument(span).await;
            if let Ok(reply) = &mut outcome {
                let call = RpcCall {
                    method: method.name(),
                    project,
                };
                plugins.filter::<RpcResult>(&mut reply.result, &call).await;
            }
            outcome
        }
    };
    match &outcome {
        Ok(_) => plugins.emit(Event::RpcCompleted {
            method: method_name,
            project,
        }),
        Err(error) => {
            let error = error.to_rpc();
            plugins.emit(Event::RpcError {
                method: method_name,
                project,
                code: error.code.get(),
                message: &error.message,
            });
        }
    }
    outcome
}

async fn serve(context: CallContext, method: Method, params: Value) -> Result<Reply, AppError> {
    let spec = method.spec();
    tokens::check(&context.agent.db, &context.caller, context.client_addr).await?;
    let grant = context.grant()?;
    grant.require(spec.role, method.name())?;
    if spec.needs_init {
        grant.open(&context.project()?.name)?;
    }
    context.agent.plugins.emit(Event::RpcStarted {
        method: method.name(),
        project: context.project.as_ref().map(|binding| binding.id),
    });
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
