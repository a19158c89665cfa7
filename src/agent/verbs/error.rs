//! [`VerbError`]: why a verb did nothing, mapped to JSON-RPC once in `crate::error`.

use serde::{Deserialize, Serialize};

use crate::agent::admission::NotAdmitted;
use crate::agent::allow::RuleError;
use crate::agent::machine::{Illegal, ProposalState, TakeError};
use crate::db::enums::{EntryStatus, RunAction};
use crate::db::DbError;
use crate::usage::Standing;

/// Why a verb was refused or failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum VerbError {
    /// The run has no proposal at the path (or never had).
    #[error("{path} is not a pending proposal of run '{run}'")]
    NotAProposal { run: String, path: String },
    /// The proposal was pending once and no longer is: resolved by someone, or withdrawn
    /// by an abort or a cancel. The first resolution won; this one changed nothing.
    #[error("{} of run '{}' is no longer pending: {}", .0.path, .0.run, .0.what())]
    NoLongerPending(Box<ProposalView>),
    /// Another request is carrying out the proposal's acceptance (a command on the server,
    /// a tool's call): its outcome is its resolution.
    #[error("{} of run '{}' is being resolved: {}", .0.path, .0.run, .0.what())]
    BeingResolved(Box<ProposalView>),
    /// A command of the run runs on the server: nothing else of the run is resolved until
    /// it ends (an abort stops it).
    #[error("{running} is running on the server; abort the run to stop it")]
    CommandRunning { running: String },
    /// The proposal's tool refused the resolution (a readonly file, bad output …).
    #[error("{0}")]
    Refused(String),
    /// The run's state machine does not allow the move.
    #[error("run '{run}': {illegal}")]
    Illegal { run: String, illegal: Illegal },
    /// The loop a verb queued was lost (the server is stopping).
    #[error("the run stopped before its loop ended")]
    LoopLost,
    /// The run's row is gone.
    #[error("run '{0}' no longer exists")]
    RunGone(String),
    /// The run's loop is running on another instance, which executes the verb.
    #[error("the run's loop runs on another instance")]
    Elsewhere,
    /// The run has no loop of that number.
    #[error("run '{run}' has no loop {sequence}")]
    NoSuchLoop { run: String, sequence: i32 },
    /// The loop named is another's, and the caller may not abort the run.
    #[error(
        "loop {sequence} of run '{run}' was started by {}; only someone who may abort the \
         run cancels another's loop",
        .by.as_deref().unwrap_or("the operator")
    )]
    NotYours {
        run: String,
        sequence: i32,
        by: Option<String>,
    },
    /// A loop past a bound on active loops, refused.
    #[error(transparent)]
    NotAdmitted(#[from] NotAdmitted),
    /// The run changed no such file (in that loop), or the file is already as it was.
    #[error("run '{run}' has no change of {file} to revert")]
    NothingToRevert { run: String, file: String },
    /// A revert is raised only on an idle run: not while a loop runs, waits on the model's
    /// proposals or is paused at a cap.
    #[error("run '{run}' is busy (status {status}): a file is reverted once no loop runs and none waits; abort it or wait for its end")]
    Busy {
        run: String,
        status: crate::db::enums::RunStatus,
    },
    /// A revert of that file is already waiting for approval.
    #[error("{path} of run '{run}' already waits for approval")]
    RevertPending { run: String, path: String },
    /// A spend cap the loop would count against is reached.
    #[error("{}", .0.describe())]
    CapReached(Box<Standing>),
    /// An accepted command's `always` that makes no rule.
    #[error(transparent)]
    Rule(#[from] RuleError),
    #[error(transparent)]
    Db(#[from] DbError),
}

impl VerbError {
    /// The error of a move the machine refused on run `run`.
    pub(crate) fn taking(run: &str, error: TakeError) -> VerbError {
        match error {
            TakeError::Illegal(illegal) => VerbError::Illegal {
                run: run.to_owned(),
                illegal,
            },
            TakeError::Db(error) => VerbError::Db(error),
        }
    }

    /// What a client is told of a proposal that is not pending (`None` for any other
    /// error): its `data`.
    pub(crate) fn proposal(&self) -> Option<&ProposalView> {
        match self {
            VerbError::NoLongerPending(view) | VerbError::BeingResolved(view) => Some(view),
            _ => None,
        }
    }
}

/// A proposal a request found not pending, as its client is told (the error's `data`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct ProposalView {
    pub run: String,
    pub path: String,
    /// Its entry's status now: 202 while it is being resolved, 200, 403 or 500 once
    /// resolved, 499 once withdrawn.
    pub status: EntryStatus,
    /// What settled it: `accept`, `reject`, `error`, `abort` or `cancel`.
    pub action: Option<RunAction>,
    /// Who did (`null`: the operator, or nobody recorded).
    pub by: Option<String>,
}

impl ProposalView {
    /// The view of a proposal of `run` at `path` in `state`; `None` while it is pending or
    /// when there is none.
    pub(crate) fn of(run: &str, path: &str, state: ProposalState) -> Option<ProposalView> {
        let (status, action, by) = match state {
            ProposalState::Pending | ProposalState::Unknown => return None,
            ProposalState::Claimed { by } => (EntryStatus::Proposed, Some(RunAction::Accept), by),
            ProposalState::Resolved { status, action, by } => (status, action, by),
            ProposalState::Withdrawn { action, by } => (EntryStatus::Withdrawn, Some(action), by),
        };
        Some(ProposalView {
            run: run.to_owned(),
            path: path.to_owned(),
            status,
            action,
            by,
        })
    }

    /// What happened to it, in words.
    fn what(&self) -> String {
        let by = match &self.by {
            Some(person) => format!(" by {person}"),
            None => String::new(),
        };
        match (self.status, self.action) {
            (EntryStatus::Proposed, _) => format!("it was accepted{by} and is being carried out"),
            (EntryStatus::Withdrawn, Some(RunAction::Cancel)) => {
                format!("the loop that proposed it was cancelled{by}")
            }
            (EntryStatus::Withdrawn, _) => format!("the run was aborted{by}"),
            (_, Some(RunAction::Accept)) => format!("it was accepted{by}"),
            (_, Some(RunAction::Reject)) => format!("it was rejected{by}"),
            (_, Some(RunAction::Error)) => format!("it was reported failed{by}"),
            (status, _) => format!("it was resolved with {status}{by}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view(status: EntryStatus, action: Option<RunAction>, by: Option<&str>) -> VerbError {
        VerbError::NoLongerPending(Box::new(ProposalView {
            run: "r".into(),
            path: "sh://turn_1/ls".into(),
            status,
            action,
            by: by.map(str::to_owned),
        }))
    }

    #[test]
    fn a_settled_proposal_says_what_settled_it_and_who() {
        let said = |error: VerbError| error.to_string();
        assert_eq!(
            said(view(
                EntryStatus::Withdrawn,
                Some(RunAction::Abort),
                Some("ann")
            )),
            "sh://turn_1/ls of run 'r' is no longer pending: the run was aborted by ann"
        );
        assert_eq!(
            said(view(EntryStatus::Ok, Some(RunAction::Accept), None)),
            "sh://turn_1/ls of run 'r' is no longer pending: it was accepted"
        );
        assert_eq!(
            said(view(
                EntryStatus::Forbidden,
                Some(RunAction::Reject),
                Some("bo")
            )),
            "sh://turn_1/ls of run 'r' is no longer pending: it was rejected by bo"
        );
        assert_eq!(
            said(view(EntryStatus::Failed, Some(RunAction::Error), None)),
            "sh://turn_1/ls of run 'r' is no longer pending: it was reported failed"
        );
        assert_eq!(
            said(view(EntryStatus::Forbidden, None, None)),
            "sh://turn_1/ls of run 'r' is no longer pending: it was resolved with 403"
        );
        let claimed = ProposalView::of(
            "r",
            "sh://turn_1/ls",
            ProposalState::Claimed {
                by: Some("ann".into()),
            },
        )
        .unwrap();
        assert_eq!(
            VerbError::BeingResolved(Box::new(claimed)).to_string(),
            "sh://turn_1/ls of run 'r' is being resolved: it was accepted by ann and is being \
             carried out"
        );
    }
}
