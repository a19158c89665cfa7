//! `run/replay`: the notifications of a run that a reconnecting client missed.

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use crate::error::AppError;
use crate::hub::replay::{self, ReplayError};
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
struct Sent<'a> {
    #[serde(borrow)]
    method: &'a str,
    #[serde(borrow)]
    params: &'a RawValue,
}

#[derive(Serialize)]
struct Replayed<'a> {
    notifications: Vec<Sent<'a>>,
}

/// `run/replay`: the run's notifications after `since`, in order, read from the event log
/// once the project's hub has handed on what it had (so none published meanwhile falls
/// between the answer and the live ones).
pub(crate) async fn replay(context: CallContext, params: ReplayParams) -> Result<Reply, AppError> {
    let run = find_run(&context, &params.run).await?;
    let agent = &context.agent;
    agent
        .hubs
        .caught_up(run.project_id)
        .await
        .map_err(|error| AppError::Internal(format!("notification hub unavailable: {error}")))?;
    let (run_id, since) = (run.id, params.since);
    let most = match agent.settings.server.replay_per_run {
        0 => u64::MAX,
        most => most,
    };
    let missed = agent
        .db
        .read(move |conn| replay::missed(conn, run_id, since, most))
        .await?;
    let frames = missed.map_err(|error| match error {
        ReplayError::NotKept { since, latest } => AppError::NotificationsNotKept {
            run: run.alias.clone(),
            since,
            latest,
        },
        ReplayError::Ahead { since, latest } => AppError::InvalidParam(format!(
            "since {since} is ahead of run '{}', whose latest seq is {latest}",
            run.alias
        )),
    })?;
    let notifications = frames
        .iter()
        .map(|frame| serde_json::from_str(frame))
        .collect::<Result<Vec<Sent<'_>>, _>>()
        .map_err(|error| AppError::Internal(format!("cannot read a kept notification: {error}")))?;
    Reply::of(Replayed { notifications })
}
