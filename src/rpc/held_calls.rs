//! `run/abort`, `run/resolve` and `run/inject` for a run whose lease another instance
//! holds: asked of that instance (`agent::lease_holder`) once the instance the client sent
//! them to has checked their params and found their run. The instance asked executes them
//! with `handlers::held`.

use crate::agent::lease_holder::{HeldAnswer, HeldCall, HeldMethod};
use crate::db::ids::RunId;
use crate::error::AppError;
use crate::rpc::call::{CallContext, Reply};

/// The answer of the instance holding `run`'s lease to `method`, sent by `context`'s
/// caller; `None` when this instance is to execute it (it runs a loop of the run, or no
/// other instance answers for it).
pub async fn ask(
    context: &CallContext,
    run: RunId,
    method: HeldMethod,
) -> Option<Result<Reply, AppError>> {
    let agent = &context.agent;
    if agent.runs.current(run).is_some() {
        return None;
    }
    let call = HeldCall {
        run,
        person: context.person(),
        method,
    };
    Some(match agent.lease_holder.ask(agent, call).await? {
        HeldAnswer::Result(result) => Ok(Reply { result, bind: None }),
        HeldAnswer::Error(error) => Err(AppError::Relayed(error)),
    })
}
