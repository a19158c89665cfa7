//! How a loop ended, and the run-outcome result shapes of PROTOCOL §2.11.

use serde::{Deserialize, Serialize};

use crate::db::enums::RunStatus;
use crate::db::ids::LoopId;
use crate::db::models::entry::UnresolvedRow;
use crate::hub::notifications::{Allowed, LoopEnded, ProposedEntry};
use crate::usage::StandingView;

/// A pending proposal as `ask`/`act`/`run/resolve` report it (attributes as a JSON string).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct ProposedRow {
    /// The proposal's entry path.
    pub path: String,
    /// Its body (command, question, original content).
    pub body: String,
    /// Its attributes, JSON-encoded.
    pub attributes: String,
    /// The turn that proposed it.
    pub turn: i32,
    /// The rule that allows the command without asking (`agent::allow`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allowed: Option<Allowed>,
}

impl ProposedRow {
    /// It as `run/proposal` and `run/outcome` announce it.
    pub(crate) fn entry(&self) -> ProposedEntry {
        ProposedEntry {
            path: self.path.clone(),
            kind: self
                .path
                .split_once("://")
                .map_or("unknown", |(scheme, _)| scheme)
                .to_owned(),
            body: self.body.clone(),
            attributes: serde_json::from_str(&self.attributes).unwrap_or_default(),
            allowed: self.allowed.clone(),
        }
    }
}

impl From<UnresolvedRow> for ProposedRow {
    fn from(row: UnresolvedRow) -> Self {
        ProposedRow {
            path: row.path,
            body: row.body,
            attributes: serde_json::Value::from(row.attributes).to_string(),
            turn: row.turn,
            allowed: None,
        }
    }
}

/// Why a loop ended without proposals or an overflow: its run outcome's `reason`, which
/// tells apart the ways a loop completes (200).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Ending {
    /// The model said it was done (`<summarize>`), or accepting a proposal made with a
    /// summary completed the run.
    Done,
    /// The loop reached its turn limit (`RUMMY_MAX_TURNS`) with the model still working.
    TurnLimit,
    /// The model made no progress: it stalled, cycled or repeated its update.
    Stalled,
    /// The model refused the request: the provider reported a refusal or filtered the reply.
    Refused,
    /// A person rejected a proposal, which stops the run.
    Rejected,
    /// `run/abort` (499).
    Aborted,
    /// An error ended it (500); the run's `error://` entry says which.
    Failed,
    /// A sub-agent's loop met a spend cap (500; its `error://` entry says which): it does
    /// not pause, the loop that delegated to it pauses at its own next call.
    CapReached,
}

impl Ending {
    /// The loop ended on its own and completed its run (200), neither stopped by a person
    /// nor failed.
    pub(crate) fn completes(self) -> bool {
        matches!(
            self,
            Ending::Done | Ending::TurnLimit | Ending::Stalled | Ending::Refused
        )
    }

    /// The run status a loop ending so leaves.
    pub(crate) fn status(self) -> RunStatus {
        match self {
            Ending::Aborted => RunStatus::Aborted,
            Ending::Failed | Ending::CapReached => RunStatus::Failed,
            Ending::Done
            | Ending::TurnLimit
            | Ending::Stalled
            | Ending::Refused
            | Ending::Rejected => RunStatus::Completed,
        }
    }
}

/// How one loop ended.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum LoopOutcome {
    /// Completed (200), aborted (499) or failed (500), and why.
    Ended(Ending),
    /// Paused on proposals the client must resolve.
    Proposed {
        /// The turn that proposed them.
        turn: i32,
        /// Every pending proposal of the run.
        proposed: Vec<ProposedRow>,
        /// The model also said `<summarize>` that turn: accepting completes the run.
        summarized: bool,
    },
    /// Paused at a spend cap (402), before the call that would pass it: the loop keeps its
    /// place and is taken up again where it stopped (`agent::paused`).
    Paused(Box<Paused>),
    /// The context does not fit: 413 with the reason.
    Overflow {
        /// What does not fit, for the client.
        error: String,
    },
    /// The context did not fit: a panic loop frees room, then `retry` runs the prompt again
    /// (whoever waits for this loop waits for the retry).
    Panicked {
        /// The re-enqueued loop.
        retry: LoopId,
    },
    /// A panic loop could not free enough room: it and its pending retry end with 413.
    RecoveryFailed {
        /// What does not fit, for the client.
        error: String,
        /// The retry loop dropped with it.
        retry: Option<LoopId>,
    },
}

impl LoopOutcome {
    /// The status the loop row is finished with.
    pub(crate) fn status(&self) -> RunStatus {
        match self {
            LoopOutcome::Ended(ending) => ending.status(),
            LoopOutcome::Proposed { .. } => RunStatus::Proposed,
            LoopOutcome::Paused(_) => RunStatus::CapReached,
            LoopOutcome::Overflow { .. }
            | LoopOutcome::Panicked { .. }
            | LoopOutcome::RecoveryFailed { .. } => RunStatus::TooLarge,
        }
    }

    /// What `loops.result` keeps of it (read again when the run resumes).
    pub(crate) fn to_record(&self) -> LoopRecord {
        let status = self.status();
        match self {
            LoopOutcome::Ended(_) => LoopRecord::of(status),
            LoopOutcome::Proposed {
                turn, summarized, ..
            } => LoopRecord {
                turn: Some(*turn),
                summarized: Some(*summarized),
                ..LoopRecord::of(status)
            },
            LoopOutcome::Overflow { error } | LoopOutcome::RecoveryFailed { error, .. } => {
                LoopRecord {
                    error: Some(error.clone()),
                    ..LoopRecord::of(status)
                }
            }
            LoopOutcome::Paused(paused) => LoopRecord {
                error: Some(paused.error.clone()),
                ..LoopRecord::of(status)
            },
            LoopOutcome::Panicked { retry } => LoopRecord {
                retry: Some(retry.0),
                ..LoopRecord::of(status)
            },
        }
    }

    /// What every client of run `alias` is told of it (`run/outcome`).
    pub(crate) fn told(&self, alias: &str) -> LoopEnded {
        let result = self.to_result(alias);
        LoopEnded {
            run: alias.to_owned(),
            status: result.status,
            reason: result
                .reason
                .and_then(|reason| serde_json::to_value(reason).ok())
                .and_then(|reason| reason.as_str().map(str::to_owned)),
            error: result.error.map(str::to_owned),
            cap: result.cap.cloned(),
            proposed: result
                .proposed
                .unwrap_or_default()
                .iter()
                .map(ProposedRow::entry)
                .collect(),
        }
    }

    /// The result sent to the client for run `alias`.
    pub(crate) fn to_result<'a>(&'a self, alias: &'a str) -> RunOutcome<'a> {
        let status = self.status();
        match self {
            LoopOutcome::Ended(ending) => RunOutcome {
                reason: Some(*ending),
                ..RunOutcome::of(alias, status)
            },
            LoopOutcome::Panicked { .. } => RunOutcome::of(alias, status),
            LoopOutcome::Proposed { turn, proposed, .. } => RunOutcome {
                turn: Some(*turn),
                proposed: Some(proposed),
                ..RunOutcome::of(alias, status)
            },
            LoopOutcome::Overflow { error } | LoopOutcome::RecoveryFailed { error, .. } => {
                RunOutcome {
                    error: Some(error),
                    ..RunOutcome::of(alias, status)
                }
            }
            LoopOutcome::Paused(paused) => RunOutcome {
                error: Some(&paused.error),
                cap: paused.cap.as_ref(),
                ..RunOutcome::of(alias, status)
            },
        }
    }
}

/// What `loops.result` keeps of a loop's ending.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct LoopRecord {
    /// How the loop ended.
    pub status: RunStatus,
    /// The turn that proposed (202).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn: Option<i32>,
    /// The model also said `<summarize>` that turn (202): accepting completes the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summarized: Option<bool>,
    /// What does not fit (413), or which spend cap was reached (402).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The iteration of the loop a paused loop takes up again (402, while it waits).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iteration: Option<u32>,
    /// The retry loop a panic loop re-enqueued (413).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry: Option<i64>,
}

impl LoopRecord {
    /// Just the status.
    pub(crate) fn of(status: RunStatus) -> LoopRecord {
        LoopRecord {
            status,
            turn: None,
            summarized: None,
            error: None,
            iteration: None,
            retry: None,
        }
    }

    /// The outcome it records, `proposed` being the run's pending proposals (of a 202). A
    /// completed loop's reason is not recorded: it reads as [`Ending::Done`].
    pub(crate) fn outcome(self, proposed: Vec<ProposedRow>) -> LoopOutcome {
        let error = self.error.unwrap_or_default();
        match self.status {
            RunStatus::Proposed => LoopOutcome::Proposed {
                turn: self.turn.unwrap_or_default(),
                proposed,
                summarized: self.summarized.unwrap_or(false),
            },
            RunStatus::CapReached => LoopOutcome::Paused(Box::new(Paused { error, cap: None })),
            RunStatus::TooLarge => LoopOutcome::Overflow { error },
            RunStatus::Aborted => LoopOutcome::Ended(Ending::Aborted),
            RunStatus::Completed => LoopOutcome::Ended(Ending::Done),
            RunStatus::Failed | RunStatus::Queued | RunStatus::Running => {
                LoopOutcome::Ended(Ending::Failed)
            }
        }
    }
}

/// Where a paused loop's request is answered it stopped: the cap's message and the cap as
/// the wire shows it (`None` in a record an earlier version kept, which has only the text).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Paused {
    pub error: String,
    pub cap: Option<StandingView>,
}

/// The result of `ask`, `act`, `run/resolve` and `run/inject` (PROTOCOL §2.11): the run and
/// its status, with why a loop ended (200, 499, 500), the proposals of a 202, the spend cap
/// of a 402 (paused) and what did not fit of a 413.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct RunOutcome<'a> {
    /// Run alias.
    pub run: &'a str,
    /// Completed, proposed, too large, aborted or failed.
    pub status: RunStatus,
    /// The turn that proposed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub turn: Option<i32>,
    /// Pending proposals when no loop started.
    #[serde(rename = "remainingCount", skip_serializing_if = "Option::is_none")]
    pub remaining_count: Option<usize>,
    /// Every pending proposal.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub proposed: Option<&'a [ProposedRow]>,
    /// What does not fit (413), or which spend cap was reached (402).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<&'a str>,
    /// The spend cap a paused loop (402) waits on: `{scope, subject, period, unit, limit,
    /// spent, left, resets}`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cap: Option<&'a StandingView>,
    /// Why the loop ended.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<Ending>,
}

impl<'a> RunOutcome<'a> {
    /// Just the run and its status.
    fn of(run: &'a str, status: RunStatus) -> RunOutcome<'a> {
        RunOutcome {
            run,
            status,
            turn: None,
            remaining_count: None,
            proposed: None,
            error: None,
            cap: None,
            reason: None,
        }
    }
}

/// The reply when a run still has unresolved proposals and no loop starts.
pub(crate) fn blocked_result<'a>(alias: &'a str, proposed: &'a [ProposedRow]) -> RunOutcome<'a> {
    RunOutcome {
        remaining_count: Some(proposed.len()),
        proposed: Some(proposed),
        ..RunOutcome::of(alias, RunStatus::Proposed)
    }
}
