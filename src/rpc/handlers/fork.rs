//! `run/fork`: a copy of a run, to continue apart from it, without a prompt (`ask`/`act`
//! with `fork` makes one and runs a loop in it at once).

use serde::{Deserialize, Serialize};

use crate::db::queries::runs::{self, now_ms};
use crate::error::AppError;
use crate::rpc::call::{CallContext, Reply};
use crate::rpc::handlers::runs::find_run;
use crate::rpc::params::Required;

/// `run/fork` params.
#[derive(Debug, Deserialize)]
pub(crate) struct ForkParams {
    /// The run to copy.
    run: Required,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Forked {
    /// The new run's alias.
    run: String,
    forked_from: String,
}

/// `run/fork`: in one unit of work, a new run of the project with the named run's settings
/// and a copy of its entries, started by the caller.
pub(crate) async fn fork(context: CallContext, params: ForkParams) -> Result<Reply, AppError> {
    let parent = find_run(&context, &params.run).await?;
    let person = context.person();
    let forked = context
        .agent
        .db
        .call(move |conn| runs::fork_run(conn, parent.id, person, now_ms()))
        .await?;
    Reply::of(Forked {
        run: forked.alias,
        forked_from: parent.alias,
    })
}
