//! Tool-dispatch methods: a client calls a model tool by name on a run.

use serde::Deserialize;
use serde_json::{Map, Value};

use std::sync::Arc;

use crate::agent::loop_config::LoopConfig;
use crate::agent::run_budget::RunBudget;
use crate::agent::Replying;
use crate::budget::WriteGate;
use crate::db::enums::{EntryStatus, LoopMode};

use crate::db::models::run::RunRow;
use crate::db::queries::loops;
use crate::error::AppError;
use crate::llm::CancellationToken;
use crate::plugins::engine::dispatch::{dispatch_call, recordables, CallInput, PreparedWork};
use crate::plugins::filters::Recording;
use crate::plugins::policy::ToolPolicy;
use crate::plugins::tool::{ClientCall, ToolError};
use crate::rpc::call::{CallContext, Reply};
use crate::rpc::handlers::runs::find_run;

/// `{run, path, body?, to?, attributes?}`.
#[derive(Debug, Deserialize)]
pub(crate) struct ToolParams {
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
    pub(crate) fn for_path(path: &str) -> ToolParams {
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
pub(crate) async fn dispatch(
    context: CallContext,
    tool: &'static str,
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
    dispatch_tool(&context, run, tool, params).await?;
    Reply::of(serde_json::json!({"status": "ok"}))
}

/// What a client's call on `run` may do: the client acts for the run's latest loop, its mode
/// and flags (act with no flags before the run's first loop).
pub(crate) async fn client_policy(
    context: &CallContext,
    run: &RunRow,
) -> Result<ToolPolicy, AppError> {
    let search_available = context.agent.settings.search_available();
    let run_id = run.id;
    let latest = context
        .agent
        .db
        .read(move |conn| loops::latest_loop(conn, run_id))
        .await?;
    Ok(match latest {
        Some(lp) => LoopConfig::of(&lp.config).policy(lp.mode, search_available),
        None => LoopConfig::default().policy(LoopMode::Act, search_available),
    })
}

/// Runs one client-issued tool call through the same handler chain as model commands. The
/// client acts for the run's latest loop: its mode and flags decide what is allowed.
pub(crate) async fn dispatch_tool(
    context: &CallContext,
    run: RunRow,
    tool: &'static str,
    params: ToolParams,
) -> Result<(), AppError> {
    let project_root = context.project()?.root.clone();
    let plugins = Arc::clone(&context.agent.plugins);
    let call = ClientCall {
        path: params.path.unwrap_or_default(),
        body: params.body,
        to: params.to,
        attributes: params.attributes.unwrap_or_default(),
    };
    let run_id = run.id;
    let policy = client_policy(context, &run).await?;
    let budget = RunBudget::of(&context.agent, &run, policy).await?;
    let handler = plugins.get(tool).ok_or_else(|| {
        AppError::InvalidParam(ToolError::UnknownTool(tool.to_owned()).to_string())
    })?;
    let recording = Recording {
        run: run_id,
        turn: None,
    };
    let command = handler.command_from_call(&call);
    let mut filtered = recordables(&plugins, vec![command], recording).await;
    let command = filtered.pop().ok_or_else(|| {
        AppError::InvalidParam("the entry.recording filters lost the call".into())
    })?;
    let work = match command.refusal {
        Some(_) => PreparedWork::default(),
        None => {
            let replying = Replying {
                run: run_id,
                loop_row: None,
                policy: &policy,
                cancel: &CancellationToken::new(),
            };
            context
                .agent
                .prepare_work(replying, std::slice::from_ref(&command.command))
                .await
        }
    };
    let outcome = context
        .agent
        .db
        .call_refusable(move |conn| {
            let input = CallInput {
                run_id,
                policy,
                project_root,
                tool: tool.to_string(),
                call,
            };
            let mut guard = budget.guard(conn)?;
            let gate = guard.as_mut().map(|guard| guard as &mut dyn WriteGate);
            work.apply(|gathered| dispatch_call(conn, &plugins, &input, command, gathered, gate))
        })
        .await;
    match outcome {
        Ok(outcome) => match outcome.errors.iter().find(|error| {
            matches!(
                error.status,
                EntryStatus::Unprocessable | EntryStatus::TooLarge
            )
        }) {
            Some(stopped) if stopped.status == EntryStatus::TooLarge => {
                Err(AppError::ContextFull(stopped.message.clone()))
            }
            Some(stopped) => Err(AppError::WorkLimit(stopped.message.clone())),
            None => Ok(()),
        },
        Err(ToolError::Db(error)) => Err(error.into()),
        Err(ToolError::InvalidParams(message)) => Err(AppError::InvalidParam(message)),
        Err(error) => Err(AppError::InvalidParam(error.to_string())),
    }
}
