//! A session between prompts: what its run is told while no prompt of the editor's is in
//! flight. A proposal raised on the idle run (a person's `run/revert`, from the console or
//! another client) is shown at once as a pending tool call, and asked about when the editor
//! next prompts, before the prompt is sent (`turn::waiting`). ACP ties a permission request
//! to a prompt turn (the editor answers it `cancelled` when that turn is cancelled, and an
//! editor shows it as part of the turn), so none is sent outside one; a `session/update`
//! may be sent at any time. A waiting proposal another client settles meanwhile is shown
//! settled (who did, and how) and is no longer asked about. The rest of what happens on the
//! run meanwhile is the other clients' business, as before.

use std::path::PathBuf;
use std::sync::Arc;

use agent_client_protocol::v1::schema::{
    ContentBlock, SessionId, SessionNotification, SessionUpdate, ToolCallContent, ToolCallStatus,
    ToolCallUpdate, ToolCallUpdateFields,
};
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::Client;
use serde_json::Value;
use tokio::sync::{watch, Mutex};

use crate::acp::link::Notice;
use crate::acp::permission::Proposal;
use crate::acp::stream::Stream;
use crate::acp::updates;
use crate::hub::notifications::{Act, ProposedEntry, RunActed};

/// Where a session's updates go and what they are about.
pub(super) struct Shown {
    pub cx: ConnectionTo<Client>,
    pub session: SessionId,
    /// The project root, for the tool calls' files.
    pub root: PathBuf,
    /// The session's run.
    pub run: String,
}

/// Holds `stream` and shows what the run is told until `wanted` changes (a prompt, a
/// resume) or the session's connection closes.
pub(super) async fn watch(
    stream: Arc<Mutex<Stream>>,
    mut wanted: watch::Receiver<u64>,
    shown: Shown,
) -> Result<(), agent_client_protocol::Error> {
    let mut stream = stream.lock().await;
    loop {
        tokio::select! {
            biased;
            _ = wanted.changed() => return Ok(()),
            notice = stream.notices.recv() => {
                let Some(notice) = notice else { return Ok(()) };
                for update in take(&mut stream, &notice, &shown.run, &shown.root) {
                    let told = SessionNotification::new(shown.session.clone(), update);
                    if let Err(error) = shown.cx.send_notification(told) {
                        tracing::warn!(%error, "the editor is gone");
                        return Ok(());
                    }
                }
            }
        }
    }
}

/// What the editor is shown of `notice` while no prompt is in flight: a proposal of `run`
/// raised, as a pending tool call it will be asked about (kept in `stream.waiting`); one of
/// those settled by another client, as settled.
pub(super) fn take(
    stream: &mut Stream,
    notice: &Notice,
    run: &str,
    root: &std::path::Path,
) -> Vec<SessionUpdate> {
    if notice.params.get("run").and_then(Value::as_str) != Some(run) {
        return Vec::new();
    }
    match notice.method.as_str() {
        "run/proposal" => {
            let proposed = notice.params.get("proposed").cloned().unwrap_or_default();
            let Ok(proposed) = serde_json::from_value::<Vec<ProposedEntry>>(proposed) else {
                tracing::warn!("rummy sent a run/proposal this agent cannot read");
                return Vec::new();
            };
            proposed
                .into_iter()
                .map(|entry| {
                    let mut proposal = Proposal::of(readable(entry));
                    proposal.id = stream.tracker.proposal_id(&proposal.entry.path);
                    proposal.shown = true;
                    let update = SessionUpdate::ToolCall(proposal.tool_call(root));
                    stream.waiting.push(proposal);
                    update
                })
                .collect()
        }
        "run/action" => {
            let Ok(acted) = serde_json::from_value::<RunActed>(notice.params.clone()) else {
                return Vec::new();
            };
            let (settled, waiting): (Vec<Proposal>, Vec<Proposal>) =
                std::mem::take(&mut stream.waiting)
                    .into_iter()
                    .partition(|proposal| settles(&acted, &proposal.entry.path));
            stream.waiting = waiting;
            settled
                .into_iter()
                .map(|proposal| {
                    let status = settled_status(&acted);
                    let shown = match status {
                        ToolCallStatus::Completed => 200,
                        _ => 499,
                    };
                    stream.tracker.announce(&proposal.entry.path, shown);
                    let said = ContentBlock::from(settled_by(&acted));
                    let fields = ToolCallUpdateFields::new()
                        .status(status)
                        .content(vec![ToolCallContent::from(said)]);
                    SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(proposal.id, fields))
                })
                .collect()
        }
        _ => Vec::new(),
    }
}

/// Whether `acted` settles the proposal at `path`: its resolution, an abort of the run, or a
/// cancel that withdrew it (not the revert that raised it).
fn settles(acted: &RunActed, path: &str) -> bool {
    match acted.action {
        Act::Abort => true,
        Act::Accept | Act::Reject | Act::Error | Act::Cancel => {
            acted.path.as_deref() == Some(path)
                || acted.withdrawn.iter().any(|withdrawn| withdrawn == path)
        }
        Act::Inject | Act::Prompt | Act::Resume | Act::Revert => false,
    }
}

/// What the editor is told of a proposal another client settled.
pub(super) fn settled_by(acted: &RunActed) -> String {
    let by = acted.by.as_deref().unwrap_or("the operator");
    match acted.action {
        Act::Accept => format!("Accepted by {by}."),
        Act::Reject => format!("Rejected by {by}."),
        Act::Error => format!("Reported failed by {by}."),
        Act::Abort => format!("Withdrawn: {by} aborted the run."),
        Act::Cancel => format!("Withdrawn: {by} cancelled the prompt that proposed it."),
        Act::Inject | Act::Prompt | Act::Resume | Act::Revert => format!("Settled by {by}."),
    }
}

/// The status a proposal settled as `acted` tells ends with.
pub(super) fn settled_status(acted: &RunActed) -> ToolCallStatus {
    match acted.status {
        Some(status) => updates::status_of(i64::from(status.code())),
        None => ToolCallStatus::Failed,
    }
}

/// `entry` with its attributes an object (a JSON string of them read).
fn readable(mut entry: ProposedEntry) -> ProposedEntry {
    if let Some(parsed) = entry
        .attributes
        .as_str()
        .and_then(|text| serde_json::from_str::<Value>(text).ok())
    {
        entry.attributes = parsed;
    }
    entry
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use serde_json::json;
    use tokio::sync::mpsc;

    use super::*;
    use crate::acp::plan::PlanTracker;
    use crate::acp::updates::LogTracker;
    use crate::acp::words::Words;

    fn stream() -> Stream {
        Stream {
            notices: mpsc::unbounded_channel().1,
            tracker: LogTracker::default(),
            plan: PlanTracker::default(),
            words: Words::default(),
            seen: 0,
            waiting: Vec::new(),
        }
    }

    fn notice(method: &str, params: Value) -> Notice {
        Notice {
            method: method.into(),
            params,
        }
    }

    fn shown(updates: &[SessionUpdate]) -> Vec<Value> {
        updates
            .iter()
            .map(|update| serde_json::to_value(update).unwrap())
            .collect()
    }

    const PATH: &str = "set://revert/a.txt";

    fn raised(run: &str) -> Notice {
        let merge = crate::plugins::bundled::tools::merge::render("one\nTWO\n", "one\ntwo\n");
        let attributes = json!({"file": "a.txt", "merge": merge, "revert": {"by": "bo"}});
        notice(
            "run/proposal",
            json!({"run": run, "proposed": [{"path": PATH, "type": "set", "body": "one\nTWO\n",
                                             "attributes": attributes.to_string()}]}),
        )
    }

    fn acted(action: &str, path: &str) -> Notice {
        notice(
            "run/action",
            json!({"run": "r", "action": action, "by": "bo", "path": path, "status": 200,
                   "withdrawn": []}),
        )
    }

    #[test]
    fn a_proposal_of_the_idle_run_is_shown_pending_and_waits_until_another_client_settles_it() {
        let mut stream = stream();
        let root = Path::new("/p");
        assert!(take(&mut stream, &raised("other"), "r", root).is_empty());
        assert!(
            stream.waiting.is_empty(),
            "another run's is not this session's"
        );

        let updates = shown(&take(&mut stream, &raised("r"), "r", root));
        assert_eq!(updates.len(), 1, "{updates:?}");
        assert_eq!(updates[0]["sessionUpdate"], json!("tool_call"));
        assert_eq!(updates[0]["toolCallId"], json!(PATH));
        assert!(
            [Value::Null, json!("pending")].contains(&updates[0]["status"]),
            "pending (the default, left out): {}",
            updates[0]
        );
        assert_eq!(updates[0]["kind"], json!("edit"));
        assert_eq!(updates[0]["content"][0]["newText"], json!("one\ntwo\n"));
        assert_eq!(stream.waiting.len(), 1);
        assert!(stream.waiting[0].shown, "not shown again when asked");

        for unsettling in [acted("revert", PATH), acted("accept", "set://b.txt")] {
            assert!(take(&mut stream, &unsettling, "r", root).is_empty());
        }
        assert_eq!(stream.waiting.len(), 1, "still waiting");

        let updates = shown(&take(&mut stream, &acted("accept", PATH), "r", root));
        assert!(stream.waiting.is_empty());
        assert_eq!(updates.len(), 1, "{updates:?}");
        assert_eq!(updates[0]["sessionUpdate"], json!("tool_call_update"));
        assert_eq!(updates[0]["status"], json!("completed"));
        assert_eq!(
            updates[0]["content"][0]["content"]["text"],
            json!("Accepted by bo.")
        );
    }

    #[test]
    fn an_abort_settles_every_waiting_proposal_as_failed() {
        let mut stream = stream();
        take(&mut stream, &raised("r"), "r", Path::new("/p"));
        let abort = notice(
            "run/action",
            json!({"run": "r", "action": "abort", "by": "bo", "withdrawn": []}),
        );
        let updates = shown(&take(&mut stream, &abort, "r", Path::new("/p")));
        assert!(stream.waiting.is_empty());
        assert_eq!(updates[0]["status"], json!("failed"));
    }
}
