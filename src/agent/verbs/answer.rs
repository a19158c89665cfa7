//! [`Answer`]: what a verb did, as its caller is answered (PROTOCOL §2.11's run outcomes).

use serde::{Serialize, Serializer};

use crate::agent::outcome::{blocked_result, LoopOutcome, ProposedRow};
use crate::db::enums::RunStatus;

/// What a verb did.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Answer {
    /// A loop ran (or was stopped) and ended so; `alias` is the run's name now.
    Ended { alias: String, outcome: LoopOutcome },
    /// The run waits on proposals: nothing was queued (or, after a resolution, others are
    /// still pending).
    Blocked {
        alias: String,
        proposed: Vec<ProposedRow>,
    },
    /// The message joins the running loop at its next turn.
    Injected { alias: String },
    /// The run is stopped (its 499 stored).
    Aborted,
    /// These loops of the run (their numbers) are stopped, these proposals withdrawn; none
    /// when nothing of the caller's was in flight.
    Cancelled {
        alias: String,
        cancelled: Vec<i32>,
        withdrawn: Vec<String>,
    },
}

/// `run/inject`'s answer when the message joins the running loop.
#[derive(Serialize)]
struct Joined<'a> {
    run: &'a str,
    status: RunStatus,
    injected: &'static str,
}

/// `run/cancel`'s answer.
#[derive(Serialize)]
struct Stopped<'a> {
    run: &'a str,
    cancelled: &'a [i32],
    withdrawn: &'a [String],
}

/// `run/abort`'s answer.
#[derive(Serialize)]
struct Done {
    status: &'static str,
}

impl Serialize for Answer {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Answer::Ended { alias, outcome } => outcome.to_result(alias).serialize(serializer),
            Answer::Blocked { alias, proposed } => {
                blocked_result(alias, proposed).serialize(serializer)
            }
            Answer::Injected { alias } => Joined {
                run: alias,
                status: RunStatus::Running,
                injected: "next_turn",
            }
            .serialize(serializer),
            Answer::Aborted => Done { status: "ok" }.serialize(serializer),
            Answer::Cancelled {
                alias,
                cancelled,
                withdrawn,
            } => Stopped {
                run: alias,
                cancelled,
                withdrawn,
            }
            .serialize(serializer),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::agent::outcome::Ending;

    #[test]
    fn each_answer_has_the_reference_s_shape() {
        let wire = |answer: Answer| serde_json::to_value(answer).unwrap();
        assert_eq!(wire(Answer::Aborted), json!({"status": "ok"}));
        assert_eq!(
            wire(Answer::Cancelled {
                alias: "r".into(),
                cancelled: vec![2],
                withdrawn: vec!["sh://turn_1/ls".into()]
            }),
            json!({"run": "r", "cancelled": [2], "withdrawn": ["sh://turn_1/ls"]})
        );
        assert_eq!(
            wire(Answer::Injected { alias: "r".into() }),
            json!({"run": "r", "status": 102, "injected": "next_turn"})
        );
        assert_eq!(
            wire(Answer::Ended {
                alias: "r".into(),
                outcome: LoopOutcome::Ended(Ending::Rejected)
            }),
            json!({"run": "r", "status": 200, "reason": "rejected"})
        );
        let proposed = vec![ProposedRow {
            path: "sh://turn_1/ls".into(),
            body: "ls".into(),
            attributes: "{}".into(),
            turn: 1,
            allowed: None,
        }];
        assert_eq!(
            wire(Answer::Blocked {
                alias: "r".into(),
                proposed
            }),
            json!({"run": "r", "status": 202, "remainingCount": 1,
                   "proposed": [{"path": "sh://turn_1/ls", "body": "ls", "attributes": "{}", "turn": 1}]})
        );
    }
}
