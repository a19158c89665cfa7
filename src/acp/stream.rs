//! A session's notifications from rummy and what its editor was shown of them: each
//! `run/delta` shows the model's words as they come (`words`), each `run/state` (rummy's own
//! [`RunState`]) brings the editor's log, plan and usage up to the run's, and the seq of the
//! latest notification of the run shown is where a `session/resume` catches up from.

use std::path::Path;

use agent_client_protocol::v1::schema::{ContentBlock, ContentChunk, SessionUpdate};
use serde::Deserialize;
use serde_json::Value;
use tokio::sync::mpsc;

use crate::acp::link::Notice;
use crate::acp::plan::PlanTracker;
use crate::acp::updates::LogTracker;
use crate::acp::usage::usage_update;
use crate::acp::words::Words;
use crate::hub::notifications::RunState;

/// A session's notifications from rummy and what the editor was shown of its run.
pub(super) struct Stream {
    pub notices: mpsc::UnboundedReceiver<Notice>,
    pub tracker: LogTracker,
    pub plan: PlanTracker,
    /// The model's words streamed and not yet recorded.
    pub words: Words,
    /// The seq of the latest notification of the run shown (0: none): where a
    /// `session/resume` catches up from.
    pub seen: u64,
}

impl Stream {
    /// The updates that bring the editor to the run's `state`: its log (the model's words
    /// less what streamed of them), its plan, its usage.
    pub(super) fn updates(&mut self, state: &RunState, root: &Path) -> Vec<SessionUpdate> {
        let turn = i64::from(state.turn);
        let mut updates: Vec<SessionUpdate> = self
            .tracker
            .updates(&state.history, root)
            .into_iter()
            .filter_map(|update| match update {
                SessionUpdate::AgentMessageChunk(ContentChunk {
                    content: ContentBlock::Text(text),
                    ..
                }) => self.words.recorded(turn, &text.text).map(message),
                update => Some(update),
            })
            .collect();
        self.words.settled(turn);
        updates.extend(self.plan.update(&state.unknowns));
        updates.push(usage_update(&state.telemetry));
        updates
    }

    /// The update showing the words a `run/delta` (its params) adds, if it adds any.
    pub(super) fn delta(&mut self, params: &Value) -> Option<SessionUpdate> {
        self.words.delta(params).map(message)
    }

    /// Notes that the notification of the run numbered `seq` was shown.
    pub(super) fn saw(&mut self, seq: u64) {
        self.seen = self.seen.max(seq);
    }
}

/// The model's words `text`, as the editor is shown them.
fn message(text: String) -> SessionUpdate {
    SessionUpdate::AgentMessageChunk(ContentChunk::new(ContentBlock::from(text)))
}

/// A `run/state`'s params as the server made them; `None` (logged) for one this agent
/// cannot read.
pub(super) fn state_of(params: &Value) -> Option<RunState> {
    match RunState::deserialize(params) {
        Ok(state) => Some(state),
        Err(error) => {
            tracing::warn!(%error, "rummy sent a run/state this agent cannot read");
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::agent::state::paused_state;
    use crate::context::packet::Bucket;
    use crate::context::BucketShare;
    use crate::db::enums::{CallPurpose, EntryStatus};
    use crate::db::models::entry::EntryUpsertForm;
    use crate::db::models::run::ModelCallForm;
    use crate::db::queries::{entries, usage};
    use crate::db::testing::{sample_run, TestDb};
    use crate::hub::notifications::{Notification, Telemetry, UsageTotals};
    use crate::usage::{Micros, Tokens};

    #[test]
    fn a_run_state_the_server_made_reads_back_whole_and_shows_its_log_plan_and_usage() {
        let mut db = TestDb::new();
        let conn = &mut db.conn;
        let run = sample_run(conn);
        let entry = |path: &str, body: &str, status, attributes| EntryUpsertForm {
            status,
            attributes: Some(attributes),
            ..EntryUpsertForm::new(run.id, None, 1, path, body)
        };
        for written in [
            entry(
                "prompt://1",
                "fix a",
                EntryStatus::Ok,
                json!({"mode": "act"}),
            ),
            entry(
                "sh://turn_1/ls",
                "a.txt\n",
                EntryStatus::Ok,
                json!({"command": "ls"}),
            ),
            entry("unknown://port", "which port?", EntryStatus::Ok, json!({})),
            entry(
                "set://a.txt",
                "one\n",
                EntryStatus::Proposed,
                json!({"file": "a.txt"}),
            ),
        ] {
            entries::upsert_entry(conn, &written).unwrap();
        }
        let tokens = Tokens {
            prompt_tokens: 1200,
            completion_tokens: 34,
            total_tokens: 1234,
            ..Tokens::default()
        };
        let call = ModelCallForm {
            run_id: run.id,
            loop_id: None,
            turn: 1,
            purpose: CallPurpose::Turn,
            model: "openai/m".into(),
            tokens,
            cost: Micros(250_000),
            at: crate::usage::UtcTime::parse_stored("2026-06-01 10:00:00").unwrap(),
            key_of: None,
        };
        usage::record_call(conn, &call).unwrap();
        let telemetry = Telemetry {
            model_alias: "m".into(),
            model: "openai/m".into(),
            temperature: Some(0.5),
            context_size: 32768,
            context_tokens: 0,
            usage: UsageTotals::of(&[]),
            context_distribution: vec![BucketShare {
                bucket: Bucket::Data,
                tokens: 900,
                entries: 3,
            }],
        };
        let made = paused_state(conn, run.id, &run.alias, 1, telemetry).unwrap();
        let frame = Notification::State(Box::new(made.clone()))
            .unnumbered()
            .unwrap()
            .numbered(41);
        let frame: Value = serde_json::from_str(&frame).unwrap();

        let read = state_of(&frame["params"]).expect("the server's run/state reads back");
        assert_eq!(read, made, "nothing lost or changed on the way");
        assert_eq!(
            read.history.len(),
            3,
            "the log, the proposal apart: {read:?}"
        );
        assert_eq!(read.unknowns.len(), 1, "{read:?}");
        assert_eq!(read.proposed.len(), 1, "{read:?}");
        assert_eq!(read.telemetry.usage.cost.cost_micros, 250_000);

        let (_, notices) = mpsc::unbounded_channel();
        let mut stream = Stream {
            notices,
            tracker: LogTracker::default(),
            plan: PlanTracker::default(),
            words: Words::default(),
            seen: 0,
        };
        let shown: Vec<Value> = stream
            .updates(&read, Path::new("/p"))
            .iter()
            .map(|update| serde_json::to_value(update).unwrap())
            .collect();
        let kinds: Vec<&Value> = shown
            .iter()
            .map(|update| &update["sessionUpdate"])
            .collect();
        assert_eq!(
            kinds,
            ["tool_call", "tool_call", "plan", "usage_update"],
            "{shown:?}"
        );
        assert_eq!(shown[0]["title"], json!("sh ls"));
        assert_eq!(shown[1]["kind"], json!("think"));
        assert_eq!(shown[2]["entries"][0]["content"], json!("which port?"));
        assert_eq!(
            shown[3],
            json!({"sessionUpdate": "usage_update", "used": 0, "size": 32768,
                   "cost": {"amount": 0.25, "currency": "USD"}})
        );
    }
}
