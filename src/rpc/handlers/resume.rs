//! `run/resume`: an admin takes up again a run's loop paused at a spend cap
//! (`agent::paused`), which the server otherwise does by itself once none of its caps
//! stands. No override: while a cap stands the answer is `-32011` naming it (the same
//! `data` as a refused `ask`) and the loop stays paused, since its next model call would be
//! refused at the same cap.

use serde::Serialize;

use crate::agent::paused::{resume_run, Resumed};
use crate::db::enums::RunStatus;
use crate::error::AppError;
use crate::rpc::call::{CallContext, Reply};
use crate::rpc::handlers::runs::{find_run, RunParams};

/// `run/resume`'s answer: the run, running again (its paused loop queued first).
#[derive(Serialize)]
struct ResumedRun {
    run: String,
    status: RunStatus,
}

/// `run/resume`: the run's paused loop taken up again, or why not.
pub(crate) async fn resume(context: CallContext, params: RunParams) -> Result<Reply, AppError> {
    let run = find_run(&context, &params.run.0).await?;
    match resume_run(&context.agent, run.id, context.person()).await? {
        Resumed::TakenUp => Reply::of(ResumedRun {
            run: run.alias,
            status: RunStatus::Running,
        }),
        Resumed::Still(cap) => Err(AppError::CapReached(cap)),
        Resumed::NotPaused => Err(AppError::InvalidParam(format!(
            "run '{}' is not paused at a spend cap (it is at {})",
            run.alias, run.status
        ))),
    }
}
