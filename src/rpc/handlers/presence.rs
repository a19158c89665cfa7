//! `run/watch`, `run/unwatch`: a connection enters or leaves a run's presence (`presence`),
//! and with it the run's deltas when it asks for them (`live`).

use serde::{Deserialize, Serialize};

use crate::error::AppError;
use crate::hub::notifications::Present;
use crate::presence::Presence;
use crate::rpc::call::{CallContext, Reply};
use crate::rpc::handlers::runs::find_run;
use crate::rpc::params::Required;

/// `run/watch` params.
#[derive(Debug, Deserialize)]
pub(crate) struct WatchParams {
    run: Required,
    /// Send the connection the model's words as they come (`run/delta`).
    #[serde(default)]
    deltas: bool,
}

/// `run/unwatch` params.
#[derive(Debug, Deserialize)]
pub(crate) struct UnwatchParams {
    run: Required,
}

/// `run/watch`'s result: who is in the run now, the caller among them.
#[derive(Serialize)]
struct Watching {
    run: String,
    present: Vec<Present>,
}

/// `run/watch`: the connection is in the run (of its project) until it leaves it, watches
/// another or closes; every client of the run is told.
pub(crate) async fn watch(context: CallContext, params: WatchParams) -> Result<Reply, AppError> {
    let run = find_run(&context, &params.run).await?;
    let someone = context.someone()?;
    context.agent.presence.watch(&someone, run.id).await?;
    match params.deltas {
        true => context
            .agent
            .live
            .watch(context.conn, run.id, context.outbound.clone()),
        false => context.agent.live.leave(context.conn),
    }
    let run_id = run.id;
    let present = context
        .agent
        .db
        .read(move |conn| Presence::read(conn, run_id))
        .await?;
    Reply::of(Watching {
        run: run.alias,
        present,
    })
}

/// `run/unwatch`'s result: whether the connection was in the run.
#[derive(Serialize)]
struct Unwatched {
    run: String,
    left: bool,
}

/// `run/unwatch`: the connection leaves the run, if it was in it.
pub(crate) async fn unwatch(
    context: CallContext,
    params: UnwatchParams,
) -> Result<Reply, AppError> {
    let run = find_run(&context, &params.run).await?;
    let left = context.agent.presence.unwatch(context.conn, run.id).await?;
    context.agent.live.unwatch(context.conn, run.id);
    Reply::of(Unwatched {
        run: run.alias,
        left,
    })
}
