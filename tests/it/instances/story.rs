//! The shared-run story on two instances of one PostgreSQL store: an editor (`rummy acp
//! --url`, spoken to in raw ACP, person `mo`) and a WebSocket client (`li`) on instance 1, a
//! WebSocket client (`wu`) on instance 2. A proposal raised on instance 1 is accepted from
//! instance 2: every client is told who did it, the editor's open permission request is
//! withdrawn and its prompt ends, and its late answer revives nothing. An abort from
//! instance 1 and an acceptance from instance 2, in both orders (the abort first; the
//! acceptance first, its resumed loop mid model call): the first wins, the other is answered
//! clearly, and the aborted run never revives, read from either instance. Instance 1 then stops; the
//! run goes on from instance 2, and instance 1's client, reconnected to instance 2, replays
//! exactly what it missed, in order, once.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, Command};
use tokio::sync::mpsc;

use super::{status_of, DEADLINE, LEASE_TTL_SECS};
use crate::access::users;
use crate::event_log::next_numbered;
use crate::process::ServerProcess;
use crate::support::Client;
use rummy::testing::fake_llm::{FakeLlm, Step, WhenExhausted};
use rummy::testing::ScratchDatabase;

#[actix_web::test]
#[ignore = "needs PostgreSQL: RUMMY_TEST_DATABASE_URL"]
async fn two_instances_share_one_run_with_an_editor_and_websocket_clients() {
    let database = ScratchDatabase::required();
    let llm = FakeLlm::builder([
        Step::reply("<sh>echo hi</sh><update>Checking.</update>"),
        Step::reply("<summarize>Checked.</summarize>"),
        Step::reply("<sh>echo again</sh><update>Checking again.</update>"),
        Step::reply("<sh>echo third</sh><update>Checking a third time.</update>"),
    ])
    // The loop the race's acceptance may resume hangs until the abort stops it.
    .when_exhausted(WhenExhausted::Respond(std::sync::Arc::new(
        |request: &Value| {
            if request["messages"]
                .to_string()
                .contains("after the failover")
            {
                Step::reply("<summarize>After the failover.</summarize>")
            } else {
                Step::Hang
            }
        },
    )))
    .start();
    let home = tempfile::tempdir().unwrap();
    let project = home.path().join("demo");
    std::fs::create_dir_all(&project).unwrap();
    let one = instance(home.path(), &llm, &database).await;
    let two = instance(home.path(), &llm, &database).await;
    let mut li = person(&one, "li", &project).await;
    let mut wu = person(&two, "wu", &project).await;

    // mo's editor on instance 1 prompts; the command proposed is asked about there and
    // reaches instance 2's client.
    let mut editor = Editor::start(&one, home.path()).await;
    let session = editor
        .result("session/new", json!({"cwd": project, "mcpServers": []}))
        .await["sessionId"]
        .as_str()
        .unwrap()
        .to_string();
    let prompted = editor
        .send(
            "session/prompt",
            json!({"sessionId": session, "prompt": [{"type": "text", "text": "check it"}]}),
        )
        .await;
    let asked = editor
        .until("the permission request", |message| {
            message["method"] == "session/request_permission"
        })
        .await;
    let proposed = wu
        .until_notified("run/proposal", |params| params["run"] == json!(session))
        .await;
    let path = proposed["params"]["proposed"][0]["path"]
        .as_str()
        .unwrap()
        .to_string();

    // wu accepts it from instance 2: everyone is told, the editor's request is withdrawn
    // and its prompt ends; its late answer revives nothing.
    let resumed = wu
        .ok(
            "run/resolve",
            json!({"run": session, "resolution": {"path": path, "action": "accept", "output": "hi"}}),
        )
        .await;
    assert_eq!(resumed["status"], json!(200), "{resumed}");
    for (client, name) in [(&mut li, "li"), (&mut wu, "wu")] {
        let told = client
            .until_notified("run/action", |params| params["action"] == json!("accept"))
            .await;
        assert_eq!(told["params"]["by"], json!("wu"), "{name} told: {told}");
        assert_eq!(told["params"]["path"], json!(path));
    }
    let ended = editor.reply(prompted).await;
    assert_eq!(ended["result"]["stopReason"], json!("end_turn"), "{ended}");
    let withdrawn = editor
        .seen
        .iter()
        .find(|message| {
            let update = &message["params"]["update"];
            update["sessionUpdate"] == "tool_call_update" && update.get("content").is_some()
        })
        .expect("the withdrawn request's tool call is updated");
    assert_eq!(
        withdrawn["params"]["update"]["content"][0]["content"]["text"],
        json!("Accepted by wu."),
        "{withdrawn}"
    );
    let allow = asked["params"]["options"]
        .as_array()
        .unwrap()
        .iter()
        .find(|option| option["kind"] == "allow_once")
        .unwrap()["optionId"]
        .clone();
    editor
        .answer(
            &asked["id"],
            json!({"outcome": {"outcome": "selected", "optionId": allow}}),
        )
        .await;
    editor
        .result(
            "session/set_mode",
            json!({"sessionId": session, "modeId": "act"}),
        )
        .await;
    assert_eq!(llm.requests().len(), 2, "the late answer ran nothing");
    assert_eq!(status_of(&mut wu, &session).await, json!(200));

    // li's abort on instance 1 against wu's acceptance on instance 2, in both orders: the
    // first wins, the other is answered clearly, and the aborted run never revives.
    let second = continued(&mut li, &session, "check it again").await;
    assert_eq!(
        li.ok("run/abort", json!({"run": session})).await,
        json!({"status": "ok"})
    );
    let refused = wu.call("run/resolve", accept(&session, &second)).await;
    assert_eq!(refused["error"]["code"], json!(-32602), "{refused}");
    assert_eq!(
        refused["error"]["data"]["action"],
        json!("abort"),
        "{refused}"
    );
    assert_eq!(refused["error"]["data"]["by"], json!("li"), "{refused}");
    assert_eq!(llm.requests().len(), 3, "nothing resumed the aborted run");
    let third = continued(&mut li, &session, "check it a third time").await;
    let accepting = wu.send("run/resolve", accept(&session, &third)).await;
    llm.wait_for_requests(5).await;
    assert_eq!(
        li.ok("run/abort", json!({"run": session})).await,
        json!({"status": "ok"})
    );
    let stopped = wu.reply(&accepting).await;
    assert_eq!(stopped["result"]["status"], json!(499), "{stopped}");
    llm.wait_for_dropped(1).await;
    for (client, name) in [(&mut li, "li"), (&mut wu, "wu")] {
        assert_eq!(status_of(client, &session).await, json!(499), "{name}");
        for (path, winner) in [(&second, "abort"), (&third, "accept")] {
            let late = client
                .call(
                    "run/resolve",
                    json!({"run": session, "resolution": {"path": path, "action": "reject"}}),
                )
                .await;
            assert_eq!(late["error"]["code"], json!(-32602), "{name}: {late}");
            assert_eq!(
                late["error"]["data"]["action"],
                json!(winner),
                "{name}: {late}"
            );
        }
    }
    assert_eq!(llm.requests().len(), 5, "nothing revived the run");
    let requests = llm.requests().len();

    // Instance 1 stops; li's client, told everything up to the run's latest seq, reconnects
    // to instance 2 while the run goes on there, and replays what it missed.
    let last_seen = li.ok("getRun", json!({"run": session})).await["seq"]
        .as_u64()
        .unwrap();
    assert!(last_seen > 0);
    drop(li);
    drop(editor);
    assert!(one.stop_with("-15").success(), "instance 1 stops cleanly");
    let after = wu
        .ok(
            "ask",
            json!({"model": "fake", "run": session, "prompt": "after the failover"}),
        )
        .await;
    assert_eq!(after["status"], json!(200), "{after}");
    assert_eq!(
        llm.requests().len(),
        requests + 1,
        "run once, on instance 2"
    );
    let mut live = Vec::new();
    loop {
        let notification = tokio::time::timeout(DEADLINE, next_numbered(&mut wu))
            .await
            .expect("wu is told the run's notifications");
        if notification["params"]["seq"].as_u64().unwrap() <= last_seen {
            continue;
        }
        let last = notification["method"] == "run/outcome";
        live.push(notification);
        if last {
            break;
        }
    }
    let mut back = person(&two, "li", &project).await;
    let replayed = back
        .ok("run/replay", json!({"run": session, "since": last_seen}))
        .await;
    let replayed = replayed["notifications"].as_array().unwrap();
    let seqs: Vec<u64> = replayed
        .iter()
        .map(|notification| notification["params"]["seq"].as_u64().unwrap())
        .collect();
    assert_eq!(
        seqs.first(),
        Some(&(last_seen + 1)),
        "nothing missed: {seqs:?}"
    );
    assert!(
        seqs.windows(2).all(|pair| pair[1] == pair[0] + 1),
        "in order, each once: {seqs:?}"
    );
    assert_eq!(replayed, &live, "what instance 2's client was told live");
    assert_eq!(status_of(&mut back, &session).await, json!(200));
}

/// `client` continues `run` with an `act` of `prompt`, which proposes a command; its path.
async fn continued(client: &mut Client, run: &str, prompt: &str) -> String {
    let proposed = client
        .ok(
            "act",
            json!({"model": "fake", "run": run, "prompt": prompt}),
        )
        .await;
    assert_eq!(proposed["status"], json!(202), "{proposed}");
    proposed["proposed"][0]["path"]
        .as_str()
        .unwrap()
        .to_string()
}

/// The `run/resolve` params accepting the command `path` of `run`, with its output.
fn accept(run: &str, path: &str) -> Value {
    json!({"run": run, "resolution": {"path": path, "action": "accept", "output": "done"}})
}

/// An instance on `database` with the team of mo, li and wu (`<name>-token`) in project
/// `demo` of `home`.
async fn instance(home: &Path, llm: &FakeLlm, database: &ScratchDatabase) -> ServerProcess {
    let file = home.join("users.toml");
    std::fs::write(
        &file,
        users(&[
            ("mo", "mo-token", "member", &["demo"]),
            ("li", "li-token", "member", &["demo"]),
            ("wu", "wu-token", "member", &["demo"]),
        ]),
    )
    .unwrap();
    let file = file.display().to_string();
    ServerProcess::start_with(
        home,
        llm,
        &[
            ("RUMMY_DATABASE_URL", database.url()),
            ("RUMMY_LEASE_TTL_SECS", LEASE_TTL_SECS),
            ("RUMMY_AUTH_TOKEN", "shared-token"),
            ("RUMMY_USERS_FILE", file.as_str()),
        ],
    )
    .await
}

/// A WebSocket client of `server` signed in as `name`, bound to `project`.
async fn person(server: &ServerProcess, name: &str, project: &Path) -> Client {
    let mut client = Client::connect(&format!(
        "ws://127.0.0.1:{}/?token={name}-token",
        server.port
    ))
    .await;
    client.init("demo", project).await;
    client
}

/// `rummy acp --url` on a server, as mo, spoken to in raw ACP lines by an editor that offers
/// no files and no terminal; every message it sent is kept in `seen`.
struct Editor {
    _child: Child,
    stdin: ChildStdin,
    lines: mpsc::UnboundedReceiver<Value>,
    next_id: u64,
    seen: Vec<Value>,
}

impl Editor {
    async fn start(server: &ServerProcess, home: &Path) -> Editor {
        let mut child = Command::new(env!("CARGO_BIN_EXE_rummy"))
            .args(["acp", "--url", &format!("ws://127.0.0.1:{}/", server.port)])
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("RUMMY_HOME", home)
            .env("RUMMY_AUTH_TOKEN", "mo-token")
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
        let mut editor = Editor {
            _child: child,
            stdin,
            lines,
            next_id: 0,
            seen: Vec::new(),
        };
        editor
            .result(
                "initialize",
                json!({"protocolVersion": 1, "clientCapabilities": {}}),
            )
            .await;
        editor
    }

    async fn write(&mut self, message: Value) {
        let mut line = message.to_string();
        line.push('\n');
        self.stdin.write_all(line.as_bytes()).await.unwrap();
    }

    /// Sends the request `method`; its id.
    async fn send(&mut self, method: &str, params: Value) -> u64 {
        self.next_id += 1;
        let id = self.next_id;
        self.write(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
        id
    }

    /// Answers the agent's request `id`.
    async fn answer(&mut self, id: &Value, result: Value) {
        self.write(json!({"jsonrpc": "2.0", "id": id, "result": result}))
            .await;
    }

    /// Reads the agent's messages (kept in `seen`) until one is `wanted`, within a minute.
    async fn until(&mut self, what: &str, wanted: impl Fn(&Value) -> bool) -> Value {
        let read = async {
            loop {
                let message = self.lines.recv().await.expect("the agent exited");
                self.seen.push(message.clone());
                if wanted(&message) {
                    return message;
                }
            }
        };
        tokio::time::timeout(Duration::from_secs(60), read)
            .await
            .unwrap_or_else(|_| panic!("no {what} within a minute"))
    }

    /// The reply to our request `id`.
    async fn reply(&mut self, id: u64) -> Value {
        self.until("reply", |message| {
            message.get("method").is_none() && message["id"] == json!(id)
        })
        .await
    }

    /// The result of `method`, which must succeed.
    async fn result(&mut self, method: &str, params: Value) -> Value {
        let id = self.send(method, params).await;
        let reply = self.reply(id).await;
        assert!(reply.get("error").is_none(), "{method}: {reply}");
        reply["result"].clone()
    }
}
