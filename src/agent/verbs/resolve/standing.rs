//! Where a proposal stands for a request that did not find it pending, and what that
//! request is told.

use crate::agent::machine::ProposalState;
use crate::agent::verbs::{ProposalView, VerbError};
use crate::db::enums::{EntryStatus, RunAction};
use crate::db::ids::RunId;
use crate::db::models::run::RunRow;
use crate::db::queries::proposals;
use crate::db::{Conn, DbError};

/// Where the run's entry at `path` stands, read in the store.
pub(super) fn proposal_state(
    conn: &mut Conn,
    run: RunId,
    path: &str,
) -> Result<ProposalState, DbError> {
    let found = proposals::found(conn, run, path)?;
    let (action, by) = match found.action {
        Some((action, by)) => (Some(action), by),
        None => (None, None),
    };
    Ok(match (found.status, found.claimed_by) {
        (None, _) => ProposalState::Unknown,
        (Some(EntryStatus::Proposed), Some(by)) => ProposalState::Claimed { by },
        (Some(EntryStatus::Proposed), None) => ProposalState::Pending,
        (Some(EntryStatus::Withdrawn), _) => ProposalState::Withdrawn {
            action: action.unwrap_or(RunAction::Abort),
            by,
        },
        // An entry no resolution was recorded for was never a proposal.
        (Some(_), _) if action.is_none() => ProposalState::Unknown,
        (Some(status), _) => ProposalState::Resolved { status, action, by },
    })
}

/// The error for a proposal of `run` at `path` found in `state`.
pub(super) fn not_pending(run: &RunRow, path: &str, state: ProposalState) -> VerbError {
    let claimed = matches!(state, ProposalState::Claimed { .. });
    match ProposalView::of(&run.alias, path, state) {
        Some(view) if claimed => VerbError::BeingResolved(Box::new(view)),
        Some(view) => VerbError::NoLongerPending(Box::new(view)),
        None => VerbError::NotAProposal {
            run: run.alias.clone(),
            path: path.to_owned(),
        },
    }
}
