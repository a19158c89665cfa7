//! Resolving proposals, and what the run does once none is pending (seed SPEC §5.3,
//! PROTOCOL Part A.6): a rejection stops the run; accepting after the model summarized
//! completes it; otherwise the run resumes with the proposing loop's mode and flags.

use std::path::Path;

use crate::db::Conn;

use crate::agent::loop_config::LoopConfig;
use serde::Deserialize;

use crate::agent::outcome::{Ending, LoopRecord};
use crate::db::enums::{LoopMode, LoopPriority, RunAction, RunStatus};
use crate::db::models::entry::UnresolvedRow;
use crate::db::models::run::{LoopEnqueue, LoopRow, RunActionForm, RunRow};
use crate::db::queries::{entries, loops, run_actions, runs};
use crate::db::{DbError, UnitError};
use crate::plugins::engine::resolve::{
    resolve_proposal, resolve_proposal_on_disk, Resolution, ResolveInput,
};
use crate::plugins::gather::Gathered;
use crate::plugins::tool::ToolError;
use crate::plugins::Plugins;

/// What happens after one resolution.
#[derive(Debug)]
pub(crate) enum Decision {
    /// Other proposals of the run are still pending.
    StillPending(Vec<UnresolvedRow>),
    /// The run is complete: [`Ending::Rejected`], or [`Ending::Done`] when the model had
    /// already summarized.
    Completed(Ending),
    /// A loop continues the run.
    Resume(Box<LoopEnqueue>),
    /// The client's mistake (the path is not a pending proposal, …): nothing was resolved,
    /// and the message says why.
    Refused(String),
}

/// Applies one resolution (and, with `disk_root`, an accepted file change under it: the
/// `RUMMY_APPLY_EDITS=server` mode) and decides what the run does next. The error is the
/// store's; the client's mistake is [`Decision::Refused`].
/// `person` is recorded as who resolved it, and as who requested the loop that resumes;
/// `gathered` is what the proposal's tool obtained for accepting it.
pub(crate) fn resolve(
    conn: &mut Conn,
    plugins: &Plugins,
    run: &RunRow,
    input: ResolveInput,
    person: Option<String>,
    disk_root: Option<&Path>,
    gathered: &mut Gathered,
) -> Result<Decision, DbError> {
    let path = input.path.clone();
    let resolution = input.resolution;
    let proposal = entries::get_entry(conn, run.id, &path)?;
    let proposing_turn = proposal.as_ref().map_or(0, |entry| entry.turn);
    let proposing_loop = proposal.and_then(|entry| entry.loop_id);
    let resolved = match disk_root {
        Some(root) => resolve_proposal_on_disk(conn, plugins, &input, gathered, root),
        None => resolve_proposal(conn, plugins, &input, gathered),
    };
    let outcome = match resolved {
        Ok(outcome) => outcome,
        Err(error) => {
            let message = match error.refusal()? {
                ToolError::NotPending(_) => {
                    format!("{path} is not a pending proposal of run '{}'", run.alias)
                }
                refusal => refusal.to_string(),
            };
            return Ok(Decision::Refused(message));
        }
    };
    run_actions::record(
        conn,
        &RunActionForm {
            run_id: run.id,
            loop_id: proposing_loop,
            person: person.clone(),
            action: match resolution {
                Resolution::Accept => RunAction::Accept,
                Resolution::Reject => RunAction::Reject,
                Resolution::Error => RunAction::Error,
            },
            path: Some(path),
        },
    )?;
    if !outcome.remaining.is_empty() {
        return Ok(Decision::StillPending(outcome.remaining));
    }
    let proposing = match proposing_loop {
        Some(id) => loops::get_loop(conn, id)?,
        None => None,
    };
    if let Some(ending) = ending(
        conn,
        plugins,
        run,
        proposing.as_ref(),
        proposing_turn,
        resolution,
    )? {
        runs::set_run_status(conn, run.id, RunStatus::Completed)?;
        return Ok(Decision::Completed(ending));
    }
    let resumed = resumption(conn, run, proposing, person)?;
    Ok(Decision::Resume(Box::new(resumed)))
}

/// How the run ends now that no proposal is pending, if it does: [`Ending::Rejected`] when
/// this resolution or another of the proposing turn rejected, [`Ending::Done`] when the
/// proposing loop had summarized.
fn ending(
    conn: &mut Conn,
    plugins: &Plugins,
    run: &RunRow,
    proposing: Option<&LoopRow>,
    proposing_turn: i32,
    resolution: Resolution,
) -> Result<Option<Ending>, DbError> {
    let rejected = resolution == Resolution::Reject
        || entries::rejected_at_turn(conn, run.id, proposing_turn, &plugins.proposing())?;
    if rejected {
        return Ok(Some(Ending::Rejected));
    }
    let summarized = proposing
        .and_then(|lp| lp.result.as_ref())
        .and_then(|result| LoopRecord::deserialize(&result.0).ok())
        .and_then(|record| record.summarized)
        .unwrap_or(false);
    Ok(summarized.then_some(Ending::Done))
}

/// The loop that continues the run: like the proposing loop, with no prompt. A proposal a
/// client made through a tool method has no loop: the run resumes like the run's latest
/// loop, or as a plain ask when it never ran one.
fn resumption(
    conn: &mut Conn,
    run: &RunRow,
    proposing: Option<LoopRow>,
    person: Option<String>,
) -> Result<LoopEnqueue, DbError> {
    let like = match proposing {
        Some(lp) => Some(lp),
        None => loops::latest_loop(conn, run.id)?,
    };
    let (mode, model, config) = match like {
        Some(lp) => (lp.mode, lp.model, LoopConfig::of(&lp.config).to_json()),
        None => (LoopMode::Ask, None, LoopConfig::default().to_json()),
    };
    Ok(LoopEnqueue {
        run_id: run.id,
        mode,
        model: model.or_else(|| run.model.clone()),
        prompt: String::new(),
        priority: LoopPriority::Normal,
        config,
        requested_by: person,
    })
}
