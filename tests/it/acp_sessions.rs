//! `rummy acp`'s sessions past their start, spoken to in raw ACP (JSON-RPC lines on the
//! agent's stdin and stdout, no SDK), against a team server another client also drives: a
//! session resumed after that client drove its run is first shown what it missed (read
//! through `run/replay`, or from the run's log once rummy no longer keeps it all), and each
//! turn's `usage_update`; a forked session goes on in a copy of the run; a closed session is
//! gone, its run kept.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, Command};
use tokio::sync::mpsc;

use crate::process::ServerProcess;
use crate::support::Client;
use rummy::testing::fake_llm::{FakeLlm, Step};

const TOKEN: &str = "shared-token";

/// `rummy acp --url` on `server`, spoken to line by line.
struct Agent {
    _child: Child,
    stdin: ChildStdin,
    lines: mpsc::UnboundedReceiver<Value>,
    next_id: u64,
    /// The `session/update` notifications received and not yet taken.
    updates: Vec<Value>,
}

impl Agent {
    async fn start(server: &ServerProcess, home: &Path) -> Agent {
        let mut child = Command::new(env!("CARGO_BIN_EXE_rummy"))
            .args(["acp", "--url", &format!("ws://127.0.0.1:{}/", server.port)])
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("RUMMY_HOME", home)
            .env("RUMMY_AUTH_TOKEN", TOKEN)
            .env("RUMMY_LOG", "warn")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let mut stdout = BufReader::new(child.stdout.take().unwrap()).lines();
        let (sent, lines) = mpsc::unbounded_channel();
        actix_web::rt::spawn(async move {
            while let Ok(Some(line)) = stdout.next_line().await {
                let message = serde_json::from_str(&line)
                    .unwrap_or_else(|_| panic!("stdout carries ACP frames only: {line}"));
                if sent.send(message).is_err() {
                    return;
                }
            }
        });
        let mut agent = Agent {
            _child: child,
            stdin,
            lines,
            next_id: 0,
            updates: Vec::new(),
        };
        let initialized = agent
            .result(
                "initialize",
                json!({"protocolVersion": 1, "clientCapabilities": {}}),
            )
            .await;
        let offered = &initialized["agentCapabilities"]["sessionCapabilities"];
        for capability in ["resume", "close", "fork", "list"] {
            assert!(
                offered[capability].is_object(),
                "{capability}: {initialized}"
            );
        }
        agent
    }

    /// Sends `method` and waits for its reply, keeping the updates that come meanwhile.
    async fn call(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        let request = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let mut line = request.to_string();
        line.push('\n');
        self.stdin.write_all(line.as_bytes()).await.unwrap();
        loop {
            let message = self.lines.recv().await.expect("the agent exited");
            if message["id"] == json!(id) {
                return message;
            }
            if message["method"] == "session/update" {
                self.updates.push(message["params"]["update"].clone());
            }
        }
    }

    /// The result of `method`, which must succeed.
    async fn result(&mut self, method: &str, params: Value) -> Value {
        let reply = self.call(method, params).await;
        assert!(reply.get("error").is_none(), "{method}: {reply}");
        reply["result"].clone()
    }

    /// The updates received so far, taken.
    fn taken(&mut self) -> Vec<Value> {
        std::mem::take(&mut self.updates)
    }

    /// A prompt of `text` in `session`, which must end its turn.
    async fn prompt(&mut self, session: &str, text: &str) {
        let params = json!({"sessionId": session, "prompt": [{"type": "text", "text": text}]});
        let ended = self.result("session/prompt", params).await;
        assert_eq!(ended["stopReason"], json!("end_turn"), "{ended}");
    }
}

/// The texts of the agent messages among `updates`, and whether a `usage_update` of the
/// model's window came last.
fn said(updates: &[Value]) -> (Vec<&str>, bool) {
    let texts = updates
        .iter()
        .filter(|update| update["sessionUpdate"] == "agent_message_chunk")
        .map(|update| update["content"]["text"].as_str().unwrap())
        .collect();
    let usage = updates.last().is_some_and(|update| {
        update["sessionUpdate"] == "usage_update"
            && update["size"] == json!(32768)
            && update["used"].as_u64().is_some_and(|used| used > 0)
            && update["cost"]["currency"] == json!("USD")
    });
    (texts, usage)
}

/// A team server on `home` (with `env`) whose model `llm` is; its project `demo`.
async fn team(home: &Path, llm: &FakeLlm, env: &[(&str, &str)]) -> (ServerProcess, PathBuf) {
    let mut all = vec![("RUMMY_AUTH_TOKEN", TOKEN)];
    all.extend_from_slice(env);
    let server = ServerProcess::start_with(home, llm, &all).await;
    let project = home.join("demo");
    std::fs::create_dir_all(&project).unwrap();
    (server, project)
}

/// Another client of `server`, bound to `project`.
async fn other_client(server: &ServerProcess, project: &Path) -> Client {
    let request = awc::Client::new()
        .ws(format!("ws://127.0.0.1:{}/", server.port))
        .bearer_auth(TOKEN);
    let mut client = Client::connect_with(request).await;
    client.init("demo", project).await;
    client
}

/// A session prompted once, then its run driven by another client; its resume shows what
/// that client's turn did (with the turn's usage when it is `replayed`: a run's log has no
/// context measure), and a second resume nothing.
async fn a_resumed_session_is_shown_what_it_missed(env: &[(&str, &str)], replayed: bool) {
    let home = tempfile::tempdir().unwrap();
    let llm = FakeLlm::start([
        Step::reply("<summarize>First answer.</summarize>"),
        Step::reply("<summarize>What bo did.</summarize>"),
    ]);
    let (server, project) = team(home.path(), &llm, env).await;
    let mut agent = Agent::start(&server, home.path()).await;
    let opened = agent
        .result("session/new", json!({"cwd": project, "mcpServers": []}))
        .await;
    let session = opened["sessionId"].as_str().unwrap().to_owned();
    agent.taken();
    agent.prompt(&session, "first question").await;
    assert_eq!(said(&agent.taken()), (vec!["First answer."], true));

    let mut bo = other_client(&server, &project).await;
    let asked = json!({"model": "fake", "run": session, "prompt": "bo's question"});
    assert_eq!(bo.ok("ask", asked).await["status"], json!(200));

    let resume = json!({"sessionId": session, "cwd": project, "mcpServers": []});
    agent.result("session/resume", resume.clone()).await;
    let missed = agent.taken();
    let (texts, usage) = said(&missed);
    assert_eq!(texts, ["What bo did."], "{missed:?}");
    assert_eq!(usage, replayed, "{missed:?}");
    agent.result("session/resume", resume).await;
    let again = agent.taken();
    assert!(said(&again).0.is_empty(), "nothing missed since: {again:?}");
}

#[actix_web::test]
async fn a_resumed_session_is_shown_what_another_client_did_meanwhile() {
    a_resumed_session_is_shown_what_it_missed(&[], true).await;
}

#[actix_web::test]
async fn a_resumed_session_whose_missed_notifications_are_gone_is_shown_the_runs_log() {
    a_resumed_session_is_shown_what_it_missed(&[("RUMMY_REPLAY_PER_RUN", "1")], false).await;
}

#[actix_web::test]
async fn a_forked_session_goes_on_apart_and_a_closed_one_is_gone_with_its_run_kept() {
    let home = tempfile::tempdir().unwrap();
    let llm = FakeLlm::start([
        Step::reply("<summarize>First answer.</summarize>"),
        Step::reply("<summarize>The fork's answer.</summarize>"),
    ]);
    let (server, project) = team(home.path(), &llm, &[]).await;
    let mut agent = Agent::start(&server, home.path()).await;
    let opened = agent
        .result("session/new", json!({"cwd": project, "mcpServers": []}))
        .await;
    let session = opened["sessionId"].as_str().unwrap().to_owned();
    agent.prompt(&session, "first question").await;

    let fork = json!({"sessionId": session, "cwd": project, "mcpServers": []});
    let forked = agent.result("session/fork", fork).await;
    let copy = forked["sessionId"].as_str().unwrap().to_owned();
    assert_ne!(copy, session);
    agent.taken();
    agent.prompt(&copy, "go on apart").await;
    assert_eq!(said(&agent.taken()).0, ["The fork's answer."]);
    let mut bo = other_client(&server, &project).await;
    let original = bo.ok("getRun", json!({"run": session})).await;
    let apart = bo.ok("getRun", json!({"run": copy})).await;
    assert_eq!(original["last_summary"], json!("First answer."));
    assert_eq!(apart["last_summary"], json!("The fork's answer."));
    let copied = apart["context"]["history"].to_string();
    assert!(copied.contains("First answer."), "{copied}");

    let closed = agent
        .call("session/close", json!({"sessionId": session}))
        .await;
    assert_eq!(closed["result"], json!({}), "{closed}");
    let prompt = json!({"sessionId": session, "prompt": [{"type": "text", "text": "hello"}]});
    let refused = agent.call("session/prompt", prompt).await;
    assert!(refused["error"].is_object(), "{refused}");
    let unknown = agent
        .call("session/close", json!({"sessionId": session}))
        .await;
    assert!(unknown["error"].is_object(), "closed once: {unknown}");
    let load = json!({"sessionId": session, "cwd": project, "mcpServers": []});
    agent.result("session/load", load).await;
    let fork_of_nothing = json!({"sessionId": "no_such_run", "cwd": project, "mcpServers": []});
    let nothing = agent.call("session/fork", fork_of_nothing).await;
    assert!(nothing["error"].is_object(), "{nothing}");
}
