//! `run/abort`, `run/cancel`, `run/resolve` and `run/inject` that another instance's client
//! sent for a run whose lease this instance holds (`rpc::held_calls` asked them): the run's
//! verbs executed as for this instance's own client, with the run and its project's root
//! read from the store.

use std::path::PathBuf;

use crate::agent::verbs::cancel::{self, Canceller};
use crate::agent::verbs::{abort, inject, resolve};
use crate::agent::AgentContext;
use crate::db::ids::RunId;
use crate::db::models::run::RunRow;
use crate::db::queries::{projects, runs};
use crate::error::AppError;
use crate::plugins::gather::RunPlace;
use crate::rpc::call::Reply;
use crate::rpc::held_calls::{HeldAnswer, HeldCall, HeldMethod};

/// Executes `call`, which another instance's client sent, and answers as a client of this
/// instance would have been answered.
pub(crate) async fn execute(agent: AgentContext, call: HeldCall) -> HeldAnswer {
    match execute_call(&agent, call).await {
        Ok(reply) => HeldAnswer::Result(reply.result),
        Err(error) => HeldAnswer::Error(error.to_rpc()),
    }
}

async fn execute_call(agent: &AgentContext, call: HeldCall) -> Result<Reply, AppError> {
    let HeldCall {
        run,
        person,
        connection,
        method,
    } = call;
    let answer = match method {
        HeldMethod::Abort => {
            let (run, _) = stored_run(agent, run).await?;
            abort::abort(agent, &run, person).await?
        }
        HeldMethod::Cancel { which, may_abort } => {
            let (run, _) = stored_run(agent, run).await?;
            let canceller = Canceller {
                person,
                connection: connection.unwrap_or_default(),
                may_abort,
            };
            cancel::cancel(agent, &run, canceller, which).await?
        }
        HeldMethod::Inject { message } => {
            let (run, _) = stored_run(agent, run).await?;
            inject::inject(agent, run, person, connection, message).await?
        }
        HeldMethod::Resolve(resolving) => {
            let (run, place) = stored_run(agent, run).await?;
            resolve::resolve(agent, run, resolving, person, connection, &place).await?
        }
    };
    Reply::of(answer)
}

/// The run as the store has it, and where it is.
async fn stored_run(agent: &AgentContext, run: RunId) -> Result<(RunRow, RunPlace), AppError> {
    let stored = agent
        .db
        .read(move |conn| {
            let Some(run) = runs::get_run(conn, run)? else {
                return Ok(None);
            };
            let Some(project) = projects::get_project(conn, run.project_id)? else {
                return Ok(None);
            };
            let place = RunPlace {
                alias: run.alias.clone(),
                project: project.name,
                root: project.project_root.map(PathBuf::from).unwrap_or_default(),
            };
            Ok(Some((run, place)))
        })
        .await?;
    stored.ok_or_else(|| AppError::Internal("the run disappeared".into()))
}
