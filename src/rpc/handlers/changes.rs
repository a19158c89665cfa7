//! `run/changes` (what a run changed in its project's files, per loop or overall:
//! `agent::changes`) and `run/revert` (a proposal putting one back: the `revert` verb).

use serde::{Deserialize, Serialize};

use crate::agent::changes::{combined, ChangedFile};
use crate::agent::verbs::revert::{self, Reverting};
use crate::agent::verbs::VerbError;
use crate::db::queries::{file_changes, loops, run_actions};
use crate::error::AppError;
use crate::rpc::call::{CallContext, Reply};
use crate::rpc::handlers::runs::find_run;
use crate::rpc::params::Required;

/// `run/changes` params.
#[derive(Debug, Deserialize)]
pub(crate) struct ChangesParams {
    run: Required,
    /// The loop's number in the run (`getRun`'s `loops`); none: the whole run.
    #[serde(default, rename = "loop")]
    which: Option<i32>,
}

/// `run/changes`' answer.
#[derive(Serialize)]
struct Changes {
    run: String,
    /// The loop asked for, `null`: the whole run.
    #[serde(rename = "loop")]
    which: Option<i32>,
    files: Vec<ChangedFile>,
    /// The loops (by number) that changed a file, in order.
    loops: Vec<i32>,
}

/// `run/changes`: the files the run (or one loop of it) changed, each combined from its
/// content before the first change to after the last.
pub(crate) async fn changes(
    context: CallContext,
    params: ChangesParams,
) -> Result<Reply, AppError> {
    let run = find_run(&context, &params.run).await?;
    let (alias, which) = (run.alias.clone(), params.which);
    let answer = context
        .agent
        .db
        .read(move |conn| {
            let rows = file_changes::of_run(conn, run.id)?;
            let numbered = run_actions::loops_of_run(conn, run.id)?;
            let scope = match which {
                Some(sequence) => match loops::by_sequence(conn, run.id, sequence)? {
                    Some(lp) => Some(Some(lp.id)),
                    None => None,
                },
                None => Some(None),
            };
            let mut changing: Vec<i32> = numbered
                .iter()
                .filter(|lp| rows.iter().any(|row| row.loop_id == Some(lp.id)))
                .map(|lp| lp.sequence)
                .collect();
            changing.dedup();
            Ok(scope.map(|scope| {
                let files = combined(&rows, scope)
                    .into_iter()
                    .filter_map(ChangedFile::of)
                    .collect();
                (files, changing)
            }))
        })
        .await?;
    let Some((files, changing)) = answer else {
        return Err(VerbError::NoSuchLoop {
            run: alias,
            sequence: which.unwrap_or_default(),
        }
        .into());
    };
    Reply::of(Changes {
        run: alias,
        which,
        files,
        loops: changing,
    })
}

/// `run/revert` params.
#[derive(Debug, Deserialize)]
pub(crate) struct RevertParams {
    run: Required,
    /// The file, as `run/changes` names it.
    path: Required,
    /// The loop whose change to undo (its number); none: the whole run's.
    #[serde(default, rename = "loop")]
    which: Option<i32>,
}

/// `run/revert`: a proposal putting the file back, attributed to the caller.
pub(crate) async fn revert(context: CallContext, params: RevertParams) -> Result<Reply, AppError> {
    let run = find_run(&context, &params.run).await?;
    let reverting = Reverting {
        file: params.path.0,
        sequence: params.which,
    };
    let raised = revert::revert(&context.agent, run, reverting, context.person()).await?;
    Reply::of(raised)
}
