//! rummy's `run/state` turned into ACP `session/update`s: the model's `<update>` and
//! `<summarize>` text as `agent_message_chunk`, every other command of the run's log as a
//! `tool_call` the first time it is seen and a `tool_call_update` when its status changes.
//! The log is read in the server's own types: `run/state`'s [`HistoryEntry`], `getRun`'s
//! [`HistoryItem`].

use std::collections::HashMap;
use std::path::{Component, Path, PathBuf};

use crate::acp::prompt::BUFFERS;
use crate::db::enums::EntryStatus;
use crate::db::paths::percent_decode;
use crate::hub::notifications::HistoryEntry;
use crate::rpc::handlers::runs::HistoryItem;
use agent_client_protocol::v1::schema::{
    ContentBlock, ContentChunk, SessionUpdate, ToolCall, ToolCallContent, ToolCallLocation,
    ToolCallStatus, ToolCallUpdate, ToolCallUpdateFields, ToolKind,
};

/// What the editor is shown of one log entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Shown {
    /// The model's words to the person.
    Message,
    /// A command, of this kind.
    Tool(ToolKind),
    /// Nothing: the person's own prompt, the server's bookkeeping.
    Hidden,
}

/// A command of the run's log, or a proposal, as the editor is shown it.
#[derive(Debug, Clone, Copy)]
pub(super) struct Command<'a> {
    /// Its scheme.
    pub tool: &'a str,
    /// What it acts on: the file, the command, the question; or nothing.
    pub target: &'a str,
    /// Its entry's path (the tool call's id).
    pub path: &'a str,
}

impl Command<'_> {
    /// How it is shown: an unsaved buffer's entry (`known://editor/<file>`) as a read of its
    /// file, the rest by [`shown`].
    pub(super) fn shown(&self) -> Shown {
        match self.buffer() {
            Some(_) => Shown::Tool(ToolKind::Read),
            None => shown(self.tool),
        }
    }

    /// `tool target`, or the tool alone; `editor buffer <file>` for a buffer.
    pub(super) fn title(&self) -> String {
        match self.buffer() {
            Some(file) => format!("editor buffer {}", file.display()),
            None if self.target.is_empty() => self.tool.to_string(),
            None => format!("{} {}", self.tool, self.target),
        }
    }

    /// The file it acts on, under `root`.
    pub(super) fn location(&self, root: &Path) -> Option<ToolCallLocation> {
        if let Some(file) = self.buffer() {
            return Some(ToolCallLocation::new(root.join(file)));
        }
        let file_tool = matches!(self.tool, "get" | "set" | "rm" | "mv" | "cp");
        (file_tool && !self.target.is_empty() && !self.target.contains("://"))
            .then(|| ToolCallLocation::new(root.join(self.target)))
    }

    /// The project file of an unsaved buffer's entry: its path after `known://editor/`,
    /// decoded; `None` for any other entry, and for one whose path would leave the project
    /// (a model may write `known://editor/../x` itself).
    fn buffer(&self) -> Option<PathBuf> {
        let file = PathBuf::from(percent_decode(self.path.strip_prefix(BUFFERS)?)?);
        let inside = file
            .components()
            .all(|component| matches!(component, Component::Normal(_)));
        (inside && file.components().next().is_some()).then_some(file)
    }
}

/// How a log entry of `tool` is shown (by its scheme alone: see [`Command::shown`]).
fn shown(tool: &str) -> Shown {
    match tool {
        "update" | "summarize" => Shown::Message,
        "get" => Shown::Tool(ToolKind::Read),
        "set" => Shown::Tool(ToolKind::Edit),
        "rm" => Shown::Tool(ToolKind::Delete),
        "mv" | "cp" => Shown::Tool(ToolKind::Move),
        "search" => Shown::Tool(ToolKind::Search),
        "sh" | "env" => Shown::Tool(ToolKind::Execute),
        "http" | "https" => Shown::Tool(ToolKind::Fetch),
        "think" | "known" | "unknown" => Shown::Tool(ToolKind::Think),
        "prompt" | "instructions" | "system" | "user" | "assistant" | "reasoning" | "model"
        | "content" | "budget" | "progress" | "error" | "file" | "skill" | "memory" => {
            Shown::Hidden
        }
        _ => Shown::Tool(ToolKind::Other),
    }
}

/// A tool call's status from its entry's status (HTTP-like: 2xx done, 202 waiting).
pub(super) fn status_of(entry_status: i64) -> ToolCallStatus {
    match entry_status {
        202 => ToolCallStatus::Pending,
        200..=299 => ToolCallStatus::Completed,
        _ => ToolCallStatus::Failed,
    }
}

impl<'a> From<&'a HistoryEntry> for Command<'a> {
    fn from(entry: &'a HistoryEntry) -> Command<'a> {
        Command {
            tool: &entry.tool,
            target: &entry.target,
            path: &entry.path,
        }
    }
}

/// An entry's status as the tracker keeps it (HTTP-like).
fn code(status: EntryStatus) -> i64 {
    i64::from(status.code())
}

/// `getRun`'s history item as `run/state` would list it: its target the first of the
/// attributes' command, file, path and question.
fn listed(item: HistoryItem) -> HistoryEntry {
    let target = ["command", "file", "path", "question"]
        .iter()
        .find_map(|key| item.attributes.get(key).and_then(serde_json::Value::as_str))
        .unwrap_or_default()
        .to_string();
    HistoryEntry {
        tool: item.scheme.unwrap_or_default(),
        target,
        status: item.status,
        path: item.path,
        body: item.body,
    }
}

/// What a session has shown of its run's log: each entry by path, with its status then.
#[derive(Debug, Default)]
pub(super) struct LogTracker {
    /// Each entry's path: its tool call now, and the status it was shown with.
    shown: HashMap<String, ShownAs>,
}

/// What the editor was shown of one entry: its tool call's id, and the status then.
#[derive(Debug)]
struct ShownAs {
    id: String,
    status: i64,
    /// How many tool calls its path has had (an edit of one file proposed again).
    calls: u32,
}

/// The status of a proposal waiting for a client.
const PROPOSED: i64 = 202;

impl LogTracker {
    /// Records that the entry at `path` was shown with `status` (a proposal shown with the
    /// permission request), so that its later appearance in the log is an update.
    pub(super) fn announce(&mut self, path: &str, status: i64) {
        self.seen(path, status);
    }

    /// The tool call id of the proposal at `path`, asked about now: its path, or for a path
    /// proposed again after its earlier proposal ended (`set://<file>` is every edit of that
    /// file) the path and `#2`, `#3` …, so that each is a tool call of its own (ACP asks
    /// ids unique within a session).
    pub(super) fn proposal_id(&mut self, path: &str) -> String {
        self.seen(path, PROPOSED).0
    }

    /// Records `path` seen with `status`: its tool call id, and the status it was shown with
    /// before (`None`: a new tool call).
    fn seen(&mut self, path: &str, status: i64) -> (String, Option<i64>) {
        match self.shown.get_mut(path) {
            Some(shown) if status == PROPOSED && shown.status != PROPOSED => {
                shown.calls += 1;
                shown.id = format!("{path}#{}", shown.calls);
                shown.status = status;
                (shown.id.clone(), None)
            }
            Some(shown) => {
                let before = std::mem::replace(&mut shown.status, status);
                (shown.id.clone(), Some(before))
            }
            None => {
                let id = path.to_string();
                let calls = 1;
                let shown = ShownAs {
                    id: id.clone(),
                    status,
                    calls,
                };
                self.shown.insert(path.to_string(), shown);
                (id, None)
            }
        }
    }

    /// The updates that replay a past run's whole log to an editor that was shown none of it:
    /// each prompt of the person's as a `user_message_chunk`, the rest as
    /// [`LogTracker::updates`] shows it.
    pub(super) fn replay(&mut self, history: Vec<HistoryItem>, root: &Path) -> Vec<SessionUpdate> {
        let mut updates = Vec::new();
        for row in history {
            if row.scheme.as_deref() == Some("prompt") {
                if !row.body.is_empty() {
                    updates.push(SessionUpdate::UserMessageChunk(ContentChunk::new(
                        ContentBlock::from(row.body),
                    )));
                }
                continue;
            }
            updates.extend(self.updates(&[listed(row)], root));
        }
        updates
    }

    /// The updates that bring the editor from what it was shown to a run's whole log as
    /// `getRun` reads it (a catch-up whose notifications are no longer kept): its commands
    /// and the model's words; the person's prompts, which it may have sent itself, are not
    /// repeated.
    pub(super) fn catch_up(
        &mut self,
        history: Vec<HistoryItem>,
        root: &Path,
    ) -> Vec<SessionUpdate> {
        let entries: Vec<HistoryEntry> = history
            .into_iter()
            .filter(|row| row.scheme.as_deref() != Some("prompt"))
            .map(listed)
            .collect();
        self.updates(&entries, root)
    }

    /// The updates that bring the editor from what it was shown to `history` (`root`: the
    /// project root, for the entries' file locations).
    pub(super) fn updates(&mut self, history: &[HistoryEntry], root: &Path) -> Vec<SessionUpdate> {
        let mut updates = Vec::new();
        for entry in history {
            let kind = match Command::from(entry).shown() {
                Shown::Hidden => continue,
                Shown::Message => None,
                Shown::Tool(kind) => Some(kind),
            };
            let status = code(entry.status);
            let (id, before) = self.seen(&entry.path, status);
            match (kind, before) {
                (None, None) if !entry.body.is_empty() => {
                    updates.push(SessionUpdate::AgentMessageChunk(ContentChunk::new(
                        ContentBlock::from(entry.body.clone()),
                    )));
                }
                (Some(kind), None) => {
                    updates.push(SessionUpdate::ToolCall(tool_call(entry, id, kind, root)))
                }
                (Some(_), Some(before)) if before != status => {
                    updates.push(SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
                        id,
                        ToolCallUpdateFields::new()
                            .status(status_of(status))
                            .content(output(entry)),
                    )));
                }
                _ => {}
            }
        }
        updates
    }
}

/// The `tool_call` of a log entry, `id` its tool call's id.
fn tool_call(entry: &HistoryEntry, id: String, kind: ToolKind, root: &Path) -> ToolCall {
    let command = Command::from(entry);
    let call = ToolCall::new(id, command.title())
        .kind(kind)
        .status(status_of(code(entry.status)))
        .content(output(entry).unwrap_or_default());
    match command.location(root) {
        Some(location) => call.locations(vec![location]),
        None => call,
    }
}

/// What a finished command produced, shown as the tool call's content: a command's output,
/// a search's results. A read's body (a whole file, an editor's buffer) is not repeated.
fn output(entry: &HistoryEntry) -> Option<Vec<ToolCallContent>> {
    let shows_body = matches!(
        Command::from(entry).shown(),
        Shown::Tool(ToolKind::Execute | ToolKind::Search | ToolKind::Fetch | ToolKind::Think)
    );
    (shows_body && !entry.body.is_empty()).then(|| {
        vec![ToolCallContent::from(ContentBlock::from(
            entry.body.clone(),
        ))]
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    fn entry(tool: &str, target: &str, status: i32, path: &str, body: &str) -> HistoryEntry {
        HistoryEntry {
            tool: tool.into(),
            target: target.into(),
            status: EntryStatus::from_code(status).unwrap(),
            path: path.into(),
            body: body.into(),
        }
    }

    fn wire(updates: &[SessionUpdate]) -> Vec<Value> {
        updates
            .iter()
            .map(|update| serde_json::to_value(update).unwrap())
            .collect()
    }

    #[test]
    fn each_command_kind_is_the_acp_kind() {
        let kinds = [
            ("get", ToolKind::Read),
            ("set", ToolKind::Edit),
            ("rm", ToolKind::Delete),
            ("mv", ToolKind::Move),
            ("cp", ToolKind::Move),
            ("search", ToolKind::Search),
            ("sh", ToolKind::Execute),
            ("env", ToolKind::Execute),
            ("https", ToolKind::Fetch),
            ("think", ToolKind::Think),
            ("known", ToolKind::Think),
            ("ask_user", ToolKind::Other),
        ];
        for (tool, kind) in kinds {
            assert_eq!(shown(tool), Shown::Tool(kind), "{tool}");
        }
        assert_eq!(shown("summarize"), Shown::Message);
        assert_eq!(shown("prompt"), Shown::Hidden);
    }

    #[test]
    fn statuses_map_to_pending_completed_failed() {
        assert_eq!(status_of(202), ToolCallStatus::Pending);
        assert_eq!(status_of(200), ToolCallStatus::Completed);
        assert_eq!(status_of(403), ToolCallStatus::Failed);
        assert_eq!(status_of(500), ToolCallStatus::Failed);
    }

    #[test]
    fn new_entries_are_shown_once_and_changes_as_updates() {
        let root = Path::new("/p");
        let mut tracker = LogTracker::default();
        let first = [
            entry("prompt", "", 200, "prompt://1", "do it"),
            entry("get", "src/a.rs", 200, "get://src/a.rs", "fn a() {}"),
            entry("update", "", 200, "update://1", "Reading a."),
        ];
        let shown = wire(&tracker.updates(&first, root));
        assert_eq!(shown.len(), 2, "{shown:?}");
        assert_eq!(shown[0]["sessionUpdate"], json!("tool_call"));
        assert_eq!(shown[0]["toolCallId"], json!("get://src/a.rs"));
        assert_eq!(shown[0]["kind"], json!("read"));
        assert_eq!(shown[0]["status"], json!("completed"));
        assert_eq!(shown[0]["title"], json!("get src/a.rs"));
        assert_eq!(shown[0]["locations"], json!([{"path": "/p/src/a.rs"}]));
        assert!(
            shown[0]
                .get("content")
                .is_none_or(|content| content == &json!([])),
            "a read does not repeat the file: {:?}",
            shown[0]
        );
        assert_eq!(shown[1]["sessionUpdate"], json!("agent_message_chunk"));
        assert_eq!(
            shown[1]["content"],
            json!({"type": "text", "text": "Reading a."})
        );

        let mut second = first.to_vec();
        second.push(entry("sh", "ls", 200, "sh://turn_2/ls", "a.rs\n"));
        let shown = wire(&tracker.updates(&second, root));
        assert_eq!(shown.len(), 1, "only the new entry: {shown:?}");
        assert_eq!(shown[0]["kind"], json!("execute"));
        assert_eq!(
            shown[0]["content"],
            json!([{"type": "content", "content": {"type": "text", "text": "a.rs\n"}}])
        );
    }

    #[test]
    fn an_announced_proposal_is_updated_not_shown_again() {
        let mut tracker = LogTracker::default();
        tracker.announce("set://src/a.rs", 202);
        let shown = wire(&tracker.updates(
            &[entry("set", "src/a.rs", 403, "set://src/a.rs", "old")],
            Path::new("/p"),
        ));
        assert_eq!(shown.len(), 1);
        assert_eq!(shown[0]["sessionUpdate"], json!("tool_call_update"));
        assert_eq!(shown[0]["toolCallId"], json!("set://src/a.rs"));
        assert_eq!(shown[0]["status"], json!("failed"));
        let again = tracker.updates(
            &[entry("set", "src/a.rs", 403, "set://src/a.rs", "old")],
            Path::new("/p"),
        );
        assert!(again.is_empty());
    }

    fn row(scheme: &str, path: &str, status: i32, body: &str, attributes: Value) -> HistoryItem {
        HistoryItem {
            scheme: Some(scheme.into()),
            path: path.into(),
            status: EntryStatus::from_code(status).unwrap(),
            body: body.into(),
            attributes,
            turn: 1,
        }
    }

    #[test]
    fn a_replay_shows_the_prompts_the_text_and_each_command_as_it_ended() {
        let mut tracker = LogTracker::default();
        let history = vec![
            row("prompt", "prompt://1", 200, "fix a", json!({"mode": "act"})),
            row("set", "set://a.rs", 200, "old", json!({"file": "a.rs"})),
            row(
                "sh",
                "sh://turn_1/ls",
                403,
                "ls",
                json!({"command": "ls -l"}),
            ),
            row("summarize", "summarize://1", 200, "Fixed.", json!({})),
            row("prompt", "prompt://2", 200, "", json!({})),
        ];
        let shown = wire(&tracker.replay(history, Path::new("/p")));
        assert_eq!(shown.len(), 4, "{shown:?}");
        assert_eq!(shown[0]["sessionUpdate"], json!("user_message_chunk"));
        assert_eq!(shown[0]["content"]["text"], json!("fix a"));
        assert_eq!(shown[1]["sessionUpdate"], json!("tool_call"));
        assert_eq!(shown[1]["kind"], json!("edit"));
        assert_eq!(shown[1]["status"], json!("completed"));
        assert_eq!(shown[1]["locations"], json!([{"path": "/p/a.rs"}]));
        assert_eq!(shown[2]["title"], json!("sh ls -l"));
        assert_eq!(shown[2]["status"], json!("failed"));
        assert_eq!(shown[3]["sessionUpdate"], json!("agent_message_chunk"));
        assert_eq!(shown[3]["content"]["text"], json!("Fixed."));
        let later = [entry("set", "a.rs", 200, "set://a.rs", "old")];
        assert!(
            tracker.updates(&later, Path::new("/p")).is_empty(),
            "what was replayed is not shown again"
        );
    }

    #[test]
    fn an_editors_buffer_is_a_read_of_its_file() {
        let mut tracker = LogTracker::default();
        let shown = wire(&tracker.updates(
            &[
                entry("known", "", 200, "known://editor/src/my%20b.rs", "unsaved"),
                entry("known", "", 200, "known://editor/../etc/x", "a model's"),
                entry("known", "", 200, "known://editor/", "nameless"),
                entry("known", "", 200, "known://notes", "a fact"),
            ],
            Path::new("/p"),
        ));
        assert_eq!(shown.len(), 4, "{shown:?}");
        assert_eq!(shown[0]["kind"], json!("read"));
        assert_eq!(shown[0]["title"], json!("editor buffer src/my b.rs"));
        assert_eq!(shown[0]["locations"], json!([{"path": "/p/src/my b.rs"}]));
        assert!(
            shown[0]
                .get("content")
                .is_none_or(|content| content == &json!([])),
            "the editor has the buffer: {:?}",
            shown[0]
        );
        for other in &shown[1..] {
            assert_eq!(other["kind"], json!("think"), "{other:?}");
            assert!(other.get("locations").is_none(), "{other:?}");
        }
    }

    #[test]
    fn an_empty_message_and_a_url_target_show_nothing_extra() {
        let mut tracker = LogTracker::default();
        let shown = wire(&tracker.updates(
            &[
                entry("update", "", 200, "update://1", ""),
                entry("get", "https://x.org/", 200, "get://https://x.org/", "page"),
            ],
            Path::new("/p"),
        ));
        assert_eq!(shown.len(), 1);
        assert!(shown[0].get("locations").is_none(), "{:?}", shown[0]);
    }
}
