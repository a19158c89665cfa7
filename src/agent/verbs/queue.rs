//! The stage every verb that runs a loop shares: the loop inserted in the verb's own unit of
//! work (with this instance as the one waiting for it), then its outcome awaited through the
//! run's actor, which claims it like any other.

use tokio::sync::oneshot;

use crate::agent::outcome::LoopOutcome;
use crate::agent::verbs::{Answer, VerbError};
use crate::agent::AgentContext;
use crate::db::ids::{LoopId, RunId};
use crate::db::models::run::LoopEnqueue;
use crate::db::queries::{instances, loops, runs};
use crate::db::{Conn, DbError};

/// Inserts `enqueue`'s loop, pending, waited for by `instance` (in the caller's unit of
/// work).
pub(super) fn insert(
    conn: &mut Conn,
    enqueue: &LoopEnqueue,
    instance: &str,
) -> Result<LoopId, DbError> {
    let queued = loops::enqueue_loop(conn, enqueue)?;
    instances::wait_for(conn, queued.id, instance)?;
    Ok(queued.id)
}

/// The outcome of loop `id` of `run`, queued by [`insert`], and the run's name then.
pub(super) async fn outcome(
    agent: &AgentContext,
    run: RunId,
    id: LoopId,
) -> Result<Answer, VerbError> {
    let outcome = agent.runs.await_loop(agent, run, id).await;
    answer(agent, run, outcome).await
}

/// The outcome a loop of `run` sends on `outcome`, and the run's name then.
pub(super) async fn answer(
    agent: &AgentContext,
    run: RunId,
    outcome: oneshot::Receiver<LoopOutcome>,
) -> Result<Answer, VerbError> {
    let outcome = outcome.await.map_err(|_| VerbError::LoopLost)?;
    ended(agent, run, outcome).await
}

/// `outcome` of a loop of `run`, answered with the run's name now.
pub(super) async fn ended(
    agent: &AgentContext,
    run: RunId,
    outcome: LoopOutcome,
) -> Result<Answer, VerbError> {
    let row = agent.db.read(move |conn| runs::get_run(conn, run)).await?;
    let alias = row
        .map(|run| run.alias)
        .ok_or_else(|| VerbError::RunGone(run.to_string()))?;
    Ok(Answer::Ended { alias, outcome })
}
