//! Tool-dispatch methods: a client calls a model tool by name on a run.

use serde::Deserialize;
use serde_json::{Map, Value};

use crate::db::models::run::RunRow;
use crate::error::AppError;
use crate::rpc::dispatch::{CallContext, Reply};
use crate::rpc::handlers::runs::find_run;
use crate::rpc::methods::ToolMethod;

/// `{run, path, body?, to?, attributes?}`.
#[derive(Debug, Deserialize)]
pub struct ToolParams {
    #[serde(default)]
    run: Option<String>,
    #[serde(default)]
    path: Option<String>,
    #[serde(default)]
    body: Option<String>,
    #[serde(default)]
    to: Option<String>,
    #[serde(default)]
    attributes: Option<Map<String, Value>>,
}

impl ToolParams {
    /// The params of a tool call that names only a path (the `get` method).
    pub fn for_path(path: &str) -> ToolParams {
        ToolParams {
            run: None,
            path: Some(path.to_string()),
            body: None,
            to: None,
            attributes: None,
        }
    }
}

/// A tool method: validate in the reference's order, then run the tool's handler chain.
pub async fn dispatch(
    context: CallContext,
    tool: ToolMethod,
    params: ToolParams,
) -> Result<Reply, AppError> {
    if params.path.as_deref().is_none_or(str::is_empty) {
        return Err(AppError::MissingParam("path".into()));
    }
    let alias = params
        .run
        .clone()
        .filter(|run| !run.is_empty())
        .ok_or_else(|| AppError::MissingParam("run".into()))?;
    let run = find_run(&context, &alias).await?;
    dispatch_tool(&context, run, tool.name(), params).await?;
    Reply::of(serde_json::json!({"status": "ok"}))
}

/// Runs one client-issued tool call through the same handler chain as model commands.
pub async fn dispatch_tool(
    context: &CallContext,
    run: RunRow,
    tool: &'static str,
    params: ToolParams,
) -> Result<(), AppError> {
    let _ = (context, run, tool, params);
    Err(AppError::Internal("tool dispatch is not wired yet".into()))
}
