//! A rummy proposal as an ACP permission request, and what an allowed one does before it is
//! resolved: an edit is written through the editor's `fs/write_text_file` when it offers
//! it, a command runs in the editor's terminal when it offers one (else here, in the
//! project root) unless the project runs commands on the rummy server, which then runs it. An `ask_user` question is a form with a free-text answer
//! (`elicitation/create`) when the editor offers forms; else its suggested answers are the
//! options, and a question without any offers to answer in the next prompt. A command also
//! offers to allow such commands always (`allow_always`, naming the pattern of the rule it
//! makes: `agent::allow`), and a command one of the person's rules allows (the outcome says
//! so: `allowed`) is not asked about. The result is the `run/resolve` resolution.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use agent_client_protocol::v1::schema::{
    ContentBlock, CreateElicitationRequest, CreateTerminalRequest, Diff, ElicitationAction,
    ElicitationContentValue, ElicitationFormMode, ElicitationSchema, ElicitationSessionScope,
    KillTerminalRequest, PermissionOption, PermissionOptionKind, ReleaseTerminalRequest,
    RequestPermissionOutcome, RequestPermissionRequest, SessionId, SessionNotification,
    SessionUpdate, StringPropertySchema, Terminal, TerminalId, TerminalOutputRequest, ToolCall,
    ToolCallContent, ToolCallId, ToolCallStatus, ToolCallUpdate, ToolCallUpdateFields,
    WaitForTerminalExitRequest, WaitForTerminalExitResponse, WriteTextFileRequest,
};
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::{Client, JsonRpcRequest};
use serde_json::{json, Value};
use tokio::sync::watch;

use crate::acp::error::AcpError;
use crate::acp::updates::{Command, Shown};
use crate::agent::allow::pattern::default_pattern;
use crate::hub::notifications::ProposedEntry;
use crate::plugins::bundled::tools::merge;

/// The most output of a command sent back to the model, in bytes.
const COMMAND_OUTPUT_BYTES: usize = 1 << 20;

const ALLOW: &str = "allow";
/// The option that allows a command and such commands always.
const ALWAYS: &str = "always";
const REJECT: &str = "reject";
/// The option of a question without suggested answers: the person answers in the next prompt.
const IN_CHAT: &str = "in-chat";
/// What the model is told of a question to be answered in the next prompt.
const ANSWER_IN_CHAT: &str = "The user will answer in their next message.";
/// The field of a question's form.
const ANSWER_FIELD: &str = "answer";
/// An `ask_user` answer's option id is this prefix and the answer's index.
const ANSWER: &str = "answer-";

/// What the editor said it can do (`initialize`'s client capabilities).
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Offers {
    pub write_files: bool,
    pub terminal: bool,
    /// It fills in forms (`elicitation/create`, form mode).
    pub forms: bool,
}

/// One pending proposal: the server's own, as a run's outcome lists it, and its tool
/// call's id in the session.
#[derive(Debug, Clone)]
pub(super) struct Proposal {
    /// Its tool call's id in the session (the path, unless the path was proposed before).
    pub id: String,
    pub entry: ProposedEntry,
    /// Whether its tool call was shown already (raised between prompts, `acp::idle`).
    pub shown: bool,
}

impl Proposal {
    /// `entry` as a tool call whose id is its path.
    pub(super) fn of(entry: ProposedEntry) -> Proposal {
        Proposal {
            id: entry.path.clone(),
            entry,
            shown: false,
        }
    }

    /// The command it runs, for a command.
    fn command(&self) -> Option<&str> {
        matches!(self.entry.kind.as_str(), "sh" | "env")
            .then(|| self.attribute("command").unwrap_or(&self.entry.body))
    }

    fn attribute(&self, key: &str) -> Option<&str> {
        self.entry.attributes.get(key).and_then(Value::as_str)
    }

    /// What it acts on: the file, the command, the question.
    fn target(&self) -> String {
        ["file", "command", "question", "path"]
            .iter()
            .find_map(|key| self.attribute(key))
            .map(str::to_string)
            .or_else(|| {
                let from = self.attribute("from")?;
                Some(format!("{from} → {}", self.attribute("to").unwrap_or("")))
            })
            .unwrap_or_default()
    }

    /// An edit's file and its content once accepted.
    fn edit(&self) -> Option<(&str, String)> {
        let file = self.attribute("file")?;
        let content = merge::apply(&self.entry.body, self.attribute("merge")?)?;
        Some((file, content))
    }

    /// Whether it writes a whole file (`set://turn_N/<file>`), whose old text is unknown.
    fn is_whole_write(&self) -> bool {
        self.entry.path.starts_with("set://turn_")
    }

    fn answers(&self) -> Vec<String> {
        self.entry
            .attributes
            .get("options")
            .and_then(Value::as_array)
            .map(|options| {
                options
                    .iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The tool call the editor is shown while it asks.
    pub(super) fn tool_call(&self, root: &Path) -> ToolCall {
        let target = self.target();
        let command = Command {
            tool: &self.entry.kind,
            target: &target,
            path: &self.entry.path,
        };
        let kind = match command.shown() {
            Shown::Tool(kind) => kind,
            Shown::Message | Shown::Hidden => agent_client_protocol::v1::schema::ToolKind::Other,
        };
        let mut call = ToolCall::new(self.id.clone(), command.title())
            .kind(kind)
            .status(ToolCallStatus::Pending)
            .raw_input(self.entry.attributes.clone());
        if let Some(location) = command.location(root) {
            call = call.locations(vec![location]);
        }
        let content = match (self.entry.kind.as_str(), self.edit()) {
            ("set", Some((file, content))) => {
                let diff = Diff::new(root.join(file), content);
                let diff = if self.is_whole_write() {
                    diff
                } else {
                    diff.old_text(self.entry.body.clone())
                };
                vec![ToolCallContent::Diff(diff)]
            }
            _ if !target.is_empty() => vec![ToolCallContent::from(ContentBlock::from(target))],
            _ => Vec::new(),
        };
        call.content(content)
    }
}

/// How a proposal ended: its resolution and whether the person cancelled.
pub(super) struct Decided {
    /// `run/resolve`'s `resolution`.
    pub resolution: Value,
    /// The editor answered the permission request `cancelled` (the turn is being cancelled).
    pub cancelled: bool,
}

/// Where a proposal is asked and applied.
pub(super) struct Asking<'a> {
    pub cx: &'a ConnectionTo<Client>,
    pub session: &'a SessionId,
    pub root: &'a Path,
    pub offers: Offers,
    /// The project runs accepted commands on the rummy server (`project/config`): an
    /// allowed command is accepted, not run here.
    pub commands_on_server: bool,
    /// Becomes true when the person is no longer to be asked: the turn is cancelled, or
    /// another client settled the proposal. The request is then withdrawn, a command
    /// running for it killed.
    pub cancel: watch::Receiver<bool>,
}

impl Asking<'_> {
    /// Shows `proposal`, asks the person, applies what they allow and says how to resolve it.
    pub(super) async fn decide(&self, proposal: &Proposal) -> Result<Decided, AcpError> {
        if !proposal.shown {
            self.update(SessionUpdate::ToolCall(proposal.tool_call(self.root)))?;
        }
        if proposal.entry.allowed.is_some() {
            return Ok(Decided {
                resolution: self.apply(proposal).await?,
                cancelled: false,
            });
        }
        if proposal.entry.kind == "ask_user" && self.offers.forms {
            return self.ask_in_form(proposal).await;
        }
        let options = options(proposal);
        let request = RequestPermissionRequest::new(
            self.session.clone(),
            ToolCallUpdate::new(proposal.id.clone(), ToolCallUpdateFields::new()),
            options,
        );
        let mut cancel = self.cancel.clone();
        let answer = tokio::select! {
            biased;
            _ = cancel.wait_for(|cancelled| *cancelled) => None,
            answer = self.ask(request) => Some(answer?),
        };
        // An answer to a request already withdrawn (it came as the proposal was settled
        // elsewhere, or the turn cancelled) is not acted on.
        let Some(answer) = answer.filter(|_| !*cancel.borrow()) else {
            return Ok(Decided {
                resolution: resolution(proposal, "reject", None),
                cancelled: true,
            });
        };
        let chosen = match answer.outcome {
            RequestPermissionOutcome::Selected(selected) => selected.option_id.0.to_string(),
            _ => {
                return Ok(Decided {
                    resolution: resolution(proposal, "reject", None),
                    cancelled: true,
                })
            }
        };
        let resolution = if chosen == REJECT {
            resolution(proposal, "reject", None)
        } else if chosen == IN_CHAT {
            resolution(proposal, "reject", Some(ANSWER_IN_CHAT.to_string()))
        } else if let Some(index) = chosen.strip_prefix(ANSWER) {
            let answer = index
                .parse::<usize>()
                .ok()
                .and_then(|index| proposal.answers().into_iter().nth(index));
            resolution(proposal, "accept", answer)
        } else if chosen == ALWAYS {
            let mut resolution = self.apply(proposal).await?;
            resolution["always"] = json!(true);
            resolution
        } else {
            self.apply(proposal).await?
        };
        Ok(Decided {
            resolution,
            cancelled: false,
        })
    }

    /// Asks a question as a form of one free-text field, its suggested answers in the field's
    /// description: an answer accepts it with the answer, a decline rejects it.
    async fn ask_in_form(&self, proposal: &Proposal) -> Result<Decided, AcpError> {
        let question = proposal.target();
        let answers = proposal.answers();
        let field = StringPropertySchema::new().title("Answer").description(
            (!answers.is_empty()).then(|| format!("Suggested: {}", answers.join("; "))),
        );
        let schema = ElicitationSchema::new().property(ANSWER_FIELD, field, true);
        let scope = ElicitationSessionScope::new(self.session.clone())
            .tool_call_id(ToolCallId::new(proposal.id.clone()));
        let form = CreateElicitationRequest::new(ElicitationFormMode::new(scope, schema), question);
        let answer = self.request(form).await?;
        let (resolution, cancelled) = match answer.action {
            ElicitationAction::Accept(accepted) => {
                let answer = accepted
                    .content
                    .and_then(|mut content| content.remove(ANSWER_FIELD))
                    .and_then(|value| match value {
                        ElicitationContentValue::String(text) => Some(text),
                        _ => None,
                    });
                (resolution(proposal, "accept", answer), false)
            }
            ElicitationAction::Cancel => (resolution(proposal, "reject", None), true),
            _ => (resolution(proposal, "reject", None), false),
        };
        Ok(Decided {
            resolution,
            cancelled,
        })
    }

    /// Does what an allowed proposal asks of this side, and says how it went.
    async fn apply(&self, proposal: &Proposal) -> Result<Value, AcpError> {
        match proposal.entry.kind.as_str() {
            "set" if self.offers.write_files => {
                let Some((file, content)) = proposal.edit() else {
                    return Ok(resolution(proposal, "accept", None));
                };
                let write =
                    WriteTextFileRequest::new(self.session.clone(), self.root.join(file), content);
                Ok(match self.cx.send_request(write).block_task().await {
                    Ok(_) => resolution(proposal, "accept", None),
                    Err(error) => resolution(proposal, "error", Some(error.message)),
                })
            }
            "sh" | "env" if self.commands_on_server => Ok(resolution(proposal, "accept", None)),
            "sh" | "env" => {
                let command = proposal
                    .attribute("command")
                    .unwrap_or(&proposal.entry.body);
                let (succeeded, output) = self.run(proposal, command).await?;
                let action = if succeeded { "accept" } else { "error" };
                Ok(resolution(proposal, action, Some(output)))
            }
            _ => Ok(resolution(proposal, "accept", None)),
        }
    }

    /// Runs `command` in the editor's terminal, or here when it offers none: whether it
    /// exited 0, and its output. A cancel of the turn kills it (the editor's terminal with
    /// `terminal/kill`, then its output is read and it is released).
    async fn run(&self, proposal: &Proposal, command: &str) -> Result<(bool, String), AcpError> {
        if !self.offers.terminal {
            let mut cancel = self.cancel.clone();
            return tokio::select! {
                ran = run_here(command, self.root) => ran,
                _ = cancel.wait_for(|cancelled| *cancelled) => {
                    Ok((false, "cancelled".to_string()))
                }
            };
        }
        let mut create = CreateTerminalRequest::new(self.session.clone(), "sh");
        create.args = vec!["-c".to_string(), command.to_string()];
        create.cwd = Some(self.root.to_path_buf());
        create.output_byte_limit = Some(COMMAND_OUTPUT_BYTES as u64);
        let terminal = self.request(create).await?.terminal_id;
        self.update(SessionUpdate::ToolCallUpdate(ToolCallUpdate::new(
            proposal.id.clone(),
            ToolCallUpdateFields::new()
                .status(ToolCallStatus::InProgress)
                .content(vec![ToolCallContent::Terminal(Terminal::new(
                    terminal.clone(),
                ))]),
        )))?;
        let exit = self.wait_for_exit(&terminal).await?;
        let output = self
            .request(TerminalOutputRequest::new(
                self.session.clone(),
                terminal.clone(),
            ))
            .await?;
        self.request(ReleaseTerminalRequest::new(self.session.clone(), terminal))
            .await?;
        Ok((exit.exit_status.exit_code == Some(0), output.output))
    }

    /// Waits for the editor's `terminal` to exit, killing it if the turn is cancelled
    /// meanwhile.
    async fn wait_for_exit(
        &self,
        terminal: &TerminalId,
    ) -> Result<WaitForTerminalExitResponse, AcpError> {
        let wait = WaitForTerminalExitRequest::new(self.session.clone(), terminal.clone());
        let exited = self.request(wait);
        tokio::pin!(exited);
        let mut cancel = self.cancel.clone();
        tokio::select! {
            exit = &mut exited => return exit,
            _ = cancel.wait_for(|cancelled| *cancelled) => {}
        }
        let kill = KillTerminalRequest::new(self.session.clone(), terminal.clone());
        self.request(kill).await?;
        exited.await
    }

    async fn ask(
        &self,
        request: RequestPermissionRequest,
    ) -> Result<agent_client_protocol::v1::schema::RequestPermissionResponse, AcpError> {
        self.request(request).await
    }

    async fn request<R: JsonRpcRequest>(&self, request: R) -> Result<R::Response, AcpError> {
        let method = request.method().to_string();
        self.cx
            .send_request(request)
            .block_task()
            .await
            .map_err(|source| AcpError::Editor {
                method,
                source: Box::new(source),
            })
    }

    fn update(&self, update: SessionUpdate) -> Result<(), AcpError> {
        self.cx
            .send_notification(SessionNotification::new(self.session.clone(), update))
            .map_err(AcpError::protocol)
    }
}

/// The options the person chooses from: each answer of a question with answers, answering
/// in the next prompt for a question without, else allow once; then reject.
fn options(proposal: &Proposal) -> Vec<PermissionOption> {
    let answers = proposal.answers();
    let mut options: Vec<PermissionOption> =
        if proposal.entry.kind == "ask_user" && !answers.is_empty() {
            answers
                .into_iter()
                .enumerate()
                .map(|(index, answer)| {
                    PermissionOption::new(
                        format!("{ANSWER}{index}"),
                        answer,
                        PermissionOptionKind::AllowOnce,
                    )
                })
                .collect()
        } else if proposal.entry.kind == "ask_user" {
            vec![PermissionOption::new(
                IN_CHAT,
                "Answer in my next message",
                PermissionOptionKind::AllowOnce,
            )]
        } else {
            vec![PermissionOption::new(
                ALLOW,
                "Allow",
                PermissionOptionKind::AllowOnce,
            )]
        };
    if let Some(pattern) = proposal
        .command()
        .and_then(|command| default_pattern(command).ok())
    {
        options.push(PermissionOption::new(
            ALWAYS,
            format!("Always allow `{pattern}`"),
            PermissionOptionKind::AllowAlways,
        ));
    }
    options.push(PermissionOption::new(
        REJECT,
        "Reject",
        PermissionOptionKind::RejectOnce,
    ));
    options
}

/// `run/resolve`'s `resolution` object.
pub(super) fn resolution(proposal: &Proposal, action: &str, output: Option<String>) -> Value {
    match output {
        Some(output) => json!({"path": proposal.entry.path, "action": action, "output": output}),
        None => json!({"path": proposal.entry.path, "action": action}),
    }
}

/// Runs `command` with `sh -c` in `root`: whether it exited 0, and its output (stdout then
/// stderr), cut at [`COMMAND_OUTPUT_BYTES`].
async fn run_here(command: &str, root: &Path) -> Result<(bool, String), AcpError> {
    let output = tokio::process::Command::new("sh")
        .arg("-c")
        .arg(command)
        .current_dir(PathBuf::from(root))
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output()
        .await;
    Ok(match output {
        Ok(output) => {
            let mut text = String::from_utf8_lossy(&output.stdout).into_owned();
            text.push_str(&String::from_utf8_lossy(&output.stderr));
            if text.len() > COMMAND_OUTPUT_BYTES {
                let mut cut = COMMAND_OUTPUT_BYTES;
                while !text.is_char_boundary(cut) {
                    cut -= 1;
                }
                text.truncate(cut);
            }
            (output.status.success(), text)
        }
        Err(error) => (false, format!("sh: {error}")),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The proposal of an `ask` reply's row (its attributes a JSON string there).
    fn proposal(mut row: Value) -> Proposal {
        if !row["attributes"].is_string() {
            row["attributes"] = json!(row["attributes"].to_string());
        }
        row["turn"] = json!(1);
        let row: crate::agent::outcome::ProposedRow = serde_json::from_value(row).unwrap();
        Proposal::of(row.entry())
    }

    #[test]
    fn an_edit_shows_its_diff_against_the_file() {
        let edit = proposal(json!({
            "path": "set://src/a.txt",
            "body": "one\ntwo\n",
            "attributes": json!({
                "file": "src/a.txt",
                "merge": "<<<<<<< SEARCH\ntwo\n=======\nthree\n>>>>>>> REPLACE",
            }).to_string(),
        }));
        assert_eq!(edit.entry.kind, "set");
        let call = serde_json::to_value(edit.tool_call(Path::new("/p"))).unwrap();
        assert_eq!(call["kind"], json!("edit"));
        assert!(call.get("status").is_none(), "pending, the default: {call}");
        assert_eq!(call["locations"], json!([{"path": "/p/src/a.txt"}]));
        assert_eq!(
            call["content"],
            json!([{"type": "diff", "path": "/p/src/a.txt", "oldText": "one\ntwo\n", "newText": "one\nthree\n"}])
        );
    }

    #[test]
    fn a_whole_write_has_no_old_text() {
        let write = proposal(json!({
            "path": "set://turn_1/new.txt",
            "body": "",
            "attributes": {"file": "new.txt", "merge": merge::whole("hello\n")},
        }));
        let call = serde_json::to_value(write.tool_call(Path::new("/p"))).unwrap();
        assert_eq!(call["content"][0]["newText"], json!("hello\n"));
        assert!(call["content"][0].get("oldText").is_none());
    }

    #[test]
    fn a_command_shows_the_command_and_runs_as_execute() {
        let command = proposal(json!({
            "path": "sh://turn_1/ls",
            "body": "ls",
            "attributes": {"command": "ls -la"},
        }));
        let call = serde_json::to_value(command.tool_call(Path::new("/p"))).unwrap();
        assert_eq!(call["kind"], json!("execute"));
        assert_eq!(call["title"], json!("sh ls -la"));
        assert_eq!(
            call["content"],
            json!([{"type": "content", "content": {"type": "text", "text": "ls -la"}}])
        );
    }

    #[test]
    fn a_question_offers_its_answers_then_reject() {
        let question = proposal(json!({
            "path": "ask_user://turn_1/which",
            "body": "which?",
            "attributes": {"question": "which?", "options": ["red", "blue"]},
        }));
        let ids: Vec<String> = options(&question)
            .into_iter()
            .map(|option| option.option_id.0.to_string())
            .collect();
        assert_eq!(ids, ["answer-0", "answer-1", "reject"]);
        let open = proposal(json!({
            "path": "ask_user://turn_1/why",
            "body": "why?",
            "attributes": {"question": "why?", "options": []},
        }));
        let ids: Vec<String> = options(&open)
            .into_iter()
            .map(|option| option.option_id.0.to_string())
            .collect();
        assert_eq!(ids, ["in-chat", "reject"]);
        let command = proposal(json!({
            "path": "sh://turn_1/cargo",
            "body": "cargo test --all",
            "attributes": {"command": "cargo test --all"},
        }));
        let offered: Vec<(String, String, Value)> = options(&command)
            .into_iter()
            .map(|option| {
                let kind = serde_json::to_value(option.kind).unwrap();
                (option.option_id.0.to_string(), option.name, kind)
            })
            .collect();
        assert_eq!(
            offered,
            [
                ("allow".into(), "Allow".into(), json!("allow_once")),
                (
                    "always".into(),
                    "Always allow `cargo test *`".into(),
                    json!("allow_always")
                ),
                ("reject".into(), "Reject".into(), json!("reject_once")),
            ]
        );
        let edit =
            proposal(json!({"path": "rm://turn_1/a", "body": "a", "attributes": {"path": "a"}}));
        let ids: Vec<String> = options(&edit)
            .into_iter()
            .map(|option| option.option_id.0.to_string())
            .collect();
        assert_eq!(ids, ["allow", "reject"]);
    }

    #[test]
    fn a_resolution_carries_output_only_when_there_is_one() {
        let command = proposal(json!({"path": "sh://turn_1/ls", "body": "ls", "attributes": {}}));
        assert_eq!(
            resolution(&command, "accept", Some("a\n".into())),
            json!({"path": "sh://turn_1/ls", "action": "accept", "output": "a\n"})
        );
        assert_eq!(
            resolution(&command, "reject", None),
            json!({"path": "sh://turn_1/ls", "action": "reject"})
        );
    }

    #[tokio::test]
    async fn a_command_run_here_reports_its_exit_and_output() {
        let root = tempfile::tempdir().unwrap();
        std::fs::write(root.path().join("x.txt"), "x").unwrap();
        assert_eq!(
            run_here("ls; echo oops >&2", root.path()).await.unwrap(),
            (true, "x.txt\noops\n".to_string())
        );
        assert!(!run_here("exit 3", root.path()).await.unwrap().0);
    }
}
