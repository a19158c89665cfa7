//! `run/cancel`: the caller's own loops of a run stopped (the `cancel` verb), or the one
//! named; executed, like `run/abort`, by the instance holding the run's lease.

use serde::Deserialize;

use crate::access::Role;
use crate::agent::verbs::cancel::{self, Canceller};
use crate::agent::verbs::VerbError;
use crate::error::AppError;
use crate::rpc::call::{CallContext, Reply};
use crate::rpc::handlers::runs::{find_run, ABORT_TRIES};
use crate::rpc::held_calls;
use crate::rpc::held_calls::HeldMethod;
use crate::rpc::params::Required;

/// `run/cancel` params.
#[derive(Debug, Deserialize)]
pub(crate) struct CancelParams {
    run: Required,
    /// The loop's number in the run (`getRun`'s `loops`); none: the caller's own loops.
    #[serde(default, rename = "loop")]
    which: Option<i32>,
}

/// `run/cancel`: a caller who may abort the run may cancel another's loop too; asked of
/// the instance where the loop runs once more when it turns out to run there after all.
pub(crate) async fn cancel(context: CallContext, params: CancelParams) -> Result<Reply, AppError> {
    let run = find_run(&context, &params.run).await?;
    let may_abort = context
        .grant()?
        .require(Role::TO_ABORT, "run/abort")
        .is_ok();
    let held = HeldMethod::Cancel {
        which: params.which,
        may_abort,
    };
    let canceller = Canceller {
        person: context.person(),
        connection: context.connection(),
        may_abort,
    };
    let mut tries = 0;
    loop {
        if let Some(answer) = held_calls::ask(&context, run.id, held.clone()).await {
            return answer;
        }
        tries += 1;
        let cancelled = cancel::cancel(&context.agent, &run, canceller.clone(), params.which);
        match cancelled.await {
            Err(VerbError::Elsewhere) if tries < ABORT_TRIES => continue,
            answer => return Reply::of(answer?),
        }
    }
}
