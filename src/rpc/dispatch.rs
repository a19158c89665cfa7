//! Routing one request to its handler, with the init gate and the RPC timeout.

use std::path::PathBuf;
use std::time::Duration;

use serde::Serialize;
use serde_json::Value;

use crate::app::AppState;
use crate::db::ids::ProjectId;
use crate::error::AppError;
use crate::hub::ConnId;
use crate::rpc::handlers;
use crate::rpc::methods::Method;

/// The project a connection is bound to by `init`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProjectBinding {
    /// Project row id.
    pub id: ProjectId,
    /// Project name.
    pub name: String,
    /// Absolute project root.
    pub root: PathBuf,
}

/// What a handler can see of the server and of the calling connection.
#[derive(Clone)]
pub struct CallContext {
    /// Shared server state.
    pub app: AppState,
    /// The calling connection.
    pub conn: ConnId,
    /// Its project, once `init` has run.
    pub project: Option<ProjectBinding>,
}

impl CallContext {
    /// The bound project, or the reference's "not initialized" error.
    pub fn project(&self) -> Result<&ProjectBinding, AppError> {
        self.project.as_ref().ok_or(AppError::NotInitialized)
    }
}

/// A handler's answer: the result, and a new project binding when `init` ran.
#[derive(Debug)]
pub struct Reply {
    /// The JSON-RPC result.
    pub result: Value,
    /// Bind the connection to this project.
    pub bind: Option<ProjectBinding>,
}

impl Reply {
    /// A plain result.
    pub fn of<T: Serialize>(result: T) -> Result<Reply, AppError> {
        let result = serde_json::to_value(result)
            .map_err(|error| AppError::Internal(format!("cannot encode result: {error}")))?;
        Ok(Reply { result, bind: None })
    }
}

/// Serves one request: method lookup, init gate, timeout, handler.
pub async fn call(
    context: CallContext,
    method_name: &str,
    params: Value,
) -> Result<Reply, AppError> {
    let method = Method::from_name(method_name, &context.app.tool_catalogue())
        .ok_or_else(|| AppError::MethodNotFound(method_name.to_string()))?;
    let spec = method.spec();
    if spec.needs_init && context.project.is_none() {
        return Err(AppError::NotInitialized);
    }
    if spec.long_running {
        return handlers::route(context, method, params).await;
    }
    let timeout_ms = context.app.settings.server.rpc_timeout_ms;
    match tokio::time::timeout(
        Duration::from_millis(timeout_ms),
        handlers::route(context, method, params),
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
