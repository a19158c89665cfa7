//! A loop's outcome as a prompt turn reads it: rummy's own `run/outcome` ([`LoopEnded`]),
//! whether it came as the notification or as the reply to `ask`, `act` or `run/resolve`
//! (PROTOCOL §2.11's run outcome, whose proposals are [`ProposedRow`]s, their attributes a
//! JSON string); and the ACP stop reason it ends the turn with.

use agent_client_protocol::v1::schema::StopReason;
use serde::Deserialize;
use serde_json::Value;

use crate::acp::error::AcpError;
use crate::agent::outcome::ProposedRow;
use crate::db::enums::RunStatus;
use crate::hub::notifications::LoopEnded;

/// The outcome a reply to `ask`, `act` or `run/resolve` says.
pub(super) fn of_reply(mut reply: Value) -> Result<LoopEnded, AcpError> {
    let rows = reply
        .as_object_mut()
        .and_then(|fields| fields.remove("proposed"));
    let proposed = match rows {
        Some(rows) => Vec::<ProposedRow>::deserialize(&rows)
            .map_err(|_| AcpError::unexpected("an outcome with unreadable proposals", &rows))?,
        None => Vec::new(),
    };
    let mut outcome = LoopEnded::deserialize(&reply)
        .map_err(|_| AcpError::unexpected("an outcome this agent cannot read", &reply))?;
    outcome.proposed = proposed.iter().map(ProposedRow::entry).collect();
    Ok(outcome)
}

/// The outcome a `run/outcome` notification's `params` tell.
pub(super) fn of_notice(params: &Value) -> Result<LoopEnded, AcpError> {
    LoopEnded::deserialize(params)
        .map_err(|_| AcpError::unexpected("a run/outcome this agent cannot read", params))
}

/// How a prompt turn ends, by a loop's outcome: its status and why it ended (`reason`). A
/// loop paused at a spend cap (402) ends the turn `end_turn`, the cap said as the agent's
/// message: it goes on by itself once the cap no longer stands.
pub(super) fn stop_reason(outcome: &LoopEnded) -> Option<StopReason> {
    match (outcome.status, outcome.reason.as_deref()) {
        (RunStatus::Completed, Some("turn_limit")) => Some(StopReason::MaxTurnRequests),
        (RunStatus::Completed, Some("refused")) => Some(StopReason::Refusal),
        (RunStatus::Completed, _) => Some(StopReason::EndTurn),
        (RunStatus::Aborted, _) => Some(StopReason::Cancelled),
        (RunStatus::TooLarge, _) => Some(StopReason::MaxTokens),
        (RunStatus::CapReached, _) => Some(StopReason::EndTurn),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn outcomes_end_the_turn_by_status_and_reason() {
        let ended = |outcome: Value| {
            let mut outcome = outcome;
            outcome["run"] = json!("r");
            stop_reason(&of_notice(&outcome).unwrap())
        };
        let done = json!({"status": 200, "reason": "done"});
        assert_eq!(ended(done), Some(StopReason::EndTurn));
        let stalled = json!({"status": 200, "reason": "stalled"});
        assert_eq!(ended(stalled), Some(StopReason::EndTurn));
        let paused = json!({"status": 402, "error": "the run cap … is reached"});
        assert_eq!(ended(paused), Some(StopReason::EndTurn));
        let rejected = json!({"status": 200, "reason": "rejected"});
        assert_eq!(ended(rejected), Some(StopReason::EndTurn));
        let limit = json!({"status": 200, "reason": "turn_limit"});
        assert_eq!(ended(limit), Some(StopReason::MaxTurnRequests));
        let refused = json!({"status": 200, "reason": "refused"});
        assert_eq!(ended(refused), Some(StopReason::Refusal));
        assert_eq!(ended(json!({"status": 200})), Some(StopReason::EndTurn));
        let aborted = json!({"status": 499, "reason": "aborted"});
        assert_eq!(ended(aborted), Some(StopReason::Cancelled));
        assert_eq!(ended(json!({"status": 413})), Some(StopReason::MaxTokens));
        let failed = json!({"status": 500, "reason": "failed"});
        assert_eq!(ended(failed), None);
    }

    #[test]
    fn a_replys_proposals_read_as_the_notifications_do() {
        let reply = json!({"run": "r", "status": 202, "turn": 1, "proposed": [{
            "path": "sh://turn_1/ls", "body": "ls", "turn": 1,
            "attributes": "{\"command\":\"ls -l\"}",
        }]});
        let outcome = of_reply(reply).unwrap();
        assert_eq!(outcome.status, RunStatus::Proposed);
        let proposed = &outcome.proposed[0];
        assert_eq!(proposed.kind, "sh");
        assert_eq!(proposed.attributes, json!({"command": "ls -l"}));
        assert!(of_reply(json!({"run": "r", "status": 200}))
            .unwrap()
            .proposed
            .is_empty());
        assert!(of_reply(json!({"status": 200})).is_err(), "no run");
    }
}
