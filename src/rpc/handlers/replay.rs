//! `run/replay`: the notifications of a run that a reconnecting client missed.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::AppError;
use crate::hub::replay::ReplayError;
use crate::rpc::call::{CallContext, Reply};
use crate::rpc::handlers::runs::find_run;
use crate::rpc::params::Required;

/// `run/replay` params.
#[derive(Debug, Deserialize)]
pub(crate) struct ReplayParams {
    run: Required,
    /// The latest seq of the run the client received; 0 for none.
    since: u64,
}

/// One notification as it was sent, without `jsonrpc`.
#[derive(Deserialize, Serialize)]
struct Sent {
    method: String,
    params: Value,
}

#[derive(Serialize)]
struct Replayed {
    notifications: Vec<Sent>,
}

/// `run/replay`: the run's notifications after `since`, in order, asked of its project's hub
/// (so none published meanwhile falls between the answer and the live ones).
pub(crate) async fn replay(context: CallContext, params: ReplayParams) -> Result<Reply, AppError> {
    let run = find_run(&context, &params.run).await?;
    let kept = context
        .agent
        .hubs
        .replay(run.project_id, run.id, params.since)
        .await
        .map_err(|error| AppError::Internal(format!("notification hub unavailable: {error}")))?;
    let frames = kept.map_err(|error| match error {
        ReplayError::NotKept { since } => AppError::NotificationsNotKept {
            run: run.alias.clone(),
            since,
        },
        ReplayError::Ahead { since, latest } => AppError::InvalidParam(format!(
            "since {since} is ahead of run '{}', whose latest seq is {latest}",
            run.alias
        )),
    })?;
    let notifications = frames
        .iter()
        .map(|frame| serde_json::from_str(frame))
        .collect::<Result<Vec<Sent>, _>>()
        .map_err(|error| AppError::Internal(format!("cannot read a kept notification: {error}")))?;
    Reply::of(Replayed { notifications })
}
