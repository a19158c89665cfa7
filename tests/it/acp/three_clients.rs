//! The three-client story (issue 41): one run of one project on one team server shared by
//! editor A (`rummy acp --url`, driven by the TypeScript SDK, person `mo`), editor B (driven
//! by the Python SDK, person `jo`, who loads A's run with `session/load`) and a WebSocket
//! client W (person `wu`), each step asserted from every client's side. Each race is run in
//! both orders: another client first (W accepts A's edit while A is asked; W aborts while B
//! is asked about a command), then the editor first (A allows its edit, B its command, and
//! W's resolution of each is refused, the error's data saying who settled it).
//!
//! The drivers (`story-a` in tests/acp/drive.mjs, `story-b` in tests/acp/drive.py) take each
//! step once the test has made its marker file, and make theirs where the test waits.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use super::{Remote, Sdk};
use crate::process::ServerProcess;
use crate::support::{eventually, llm_env, Client};
use rummy::hash_token;
use rummy::testing::fake_llm::{FakeLlm, Step};

#[actix_web::test]
#[ignore = "needs node and `npm ci` in tests/acp, and the ACP Python SDK in tests/acp/.venv: tests/run.sh makes both"]
async fn two_editors_and_a_websocket_client_share_one_run_and_each_race_ends_one_way() {
    let llm = FakeLlm::start([
        Step::reply(
            "<set path=\"a.txt\"><<<<<<< SEARCH\ntwo\n=======\nTWO\n>>>>>>> REPLACE</set>\
             <update>Editing a.txt.</update>",
        ),
        Step::reply("<summarize>Edited by W.</summarize>"),
        Step::reply("<sh>echo checked</sh><update>Checking.</update>"),
        Step::reply(
            "<set path=\"a.txt\"><<<<<<< SEARCH\nTWO\n=======\nTHREE\n>>>>>>> REPLACE</set>\
             <update>Editing a.txt again.</update>",
        ),
        Step::reply("<summarize>Edited again.</summarize>"),
        Step::reply("<sh>echo checked again</sh><update>Checking again.</update>"),
        Step::reply("<summarize>Checked.</summarize>"),
    ]);
    let home = tempfile::tempdir().unwrap();
    let server = team_server(home.path(), &llm).await;
    let marks = tempfile::tempdir().unwrap();
    let story = Story {
        marks: marks.path().to_path_buf(),
    };
    let root = home.path().join("demo");
    let editor_a = drive(
        Sdk::TypeScript,
        "story-a",
        "mo",
        &server,
        home.path(),
        &llm,
        &story,
    );
    let editor_b = drive(
        Sdk::Python,
        "story-b",
        "jo",
        &server,
        home.path(),
        &llm,
        &story,
    );

    // W accepts A's edit while A is asked: A's request is withdrawn, "Accepted by wu.".
    story.reached("a-asking").await;
    let mut w = Client::connect(&format!("ws://127.0.0.1:{}/?token=wu-token", server.port)).await;
    w.init("demo", &root).await;
    let run = w.ok("getRuns", json!({})).await[0]["run"]
        .as_str()
        .unwrap()
        .to_string();
    std::fs::write(root.join("a.txt"), "one\nTWO\n").unwrap();
    let accepted = w
        .ok(
            "run/resolve",
            json!({"run": run, "resolution": {"path": "set://a.txt", "action": "accept"}}),
        )
        .await;
    assert_eq!(
        accepted["status"],
        json!(200),
        "W's acceptance ran on: {accepted}"
    );
    story.mark("a-settled");
    story.reached("a-done").await;
    assert_eq!(llm.requests().len(), 2, "the run resumed once");

    // B loads the run and sees the same outcome; its prompt proposes a command.
    std::fs::write(story.marks.join("b-load"), &run).unwrap();
    story.reached("b-asking").await;
    let asked = w
        .until_notified("run/proposal", |params| {
            params["proposed"][0]["type"] == json!("sh")
        })
        .await;
    let command = asked["params"]["proposed"][0]["path"]
        .as_str()
        .unwrap()
        .to_string();

    // A's cancel does not stop B's prompt: A has no prompt in flight, and B's loop is B's.
    story.mark("a-cancel");
    story.reached("a-cancelled").await;
    let detail = w.ok("getRun", json!({"run": run})).await;
    assert_eq!(
        detail["status"],
        json!(202),
        "B's loop still waits: {detail}"
    );
    assert_eq!(
        w.statuses(&run, "sh://**").await,
        [(command.clone(), 202)],
        "B's command is still asked about"
    );

    // W aborts while B is asked: B's turn ends cancelled, the run is 499, and B's late
    // answer revives nothing.
    w.ok("run/abort", json!({"run": run})).await;
    let aborted = w
        .until_notified("run/action", |params| params["action"] == json!("abort"))
        .await;
    assert_eq!(aborted["params"]["by"], json!("wu"), "{aborted}");
    assert_eq!(
        aborted["params"]["withdrawn"],
        json!([command]),
        "{aborted}"
    );
    story.mark("b-answer");
    story.reached("b-answered").await;
    let detail = w.ok("getRun", json!({"run": run})).await;
    assert_eq!(detail["status"], json!(499), "nothing revived: {detail}");
    assert_eq!(w.statuses(&run, "sh://**").await, [(command.clone(), 499)]);
    assert_eq!(llm.requests().len(), 3, "no model call after the abort");

    // The other order: A allows its next edit first; W's acceptance is refused, naming mo.
    story.mark("a-second");
    w.until_notified("run/action", |params| {
        params["action"] == json!("accept")
            && params["path"] == json!("set://a.txt")
            && params["by"] == json!("mo")
    })
    .await;
    let refused = w
        .call(
            "run/resolve",
            json!({"run": run, "resolution": {"path": "set://a.txt", "action": "accept"}}),
        )
        .await;
    assert_refused_by(&refused, "set://a.txt", "mo");
    let editor_a = editor_a.await.unwrap();

    // B allows its next command first; W's acceptance is refused, naming jo.
    story.mark("b-second");
    let by_b = w
        .until_notified("run/action", |params| {
            params["action"] == json!("accept") && params["by"] == json!("jo")
        })
        .await;
    let second = by_b["params"]["path"].as_str().unwrap().to_string();
    assert!(second.starts_with("sh://"), "{by_b}");
    let refused = w
        .call(
            "run/resolve",
            json!({"run": run, "resolution": {"path": second, "action": "accept"}}),
        )
        .await;
    assert_refused_by(&refused, &second, "jo");
    let editor_b = editor_b.await.unwrap();

    // Editor A's side: the first request withdrawn as W's, nothing written but its own
    // second edit, once.
    editor_a_saw(&editor_a);
    // Editor B's side: the same first outcome on load, its first turn cancelled by W's
    // abort without its late answer running anything, its second command run once.
    editor_b_saw(&editor_b, &command);
    // W's side, and the project's: each edit applied once, every model call accounted for.
    assert_eq!(
        std::fs::read_to_string(root.join("a.txt")).unwrap(),
        "one\nTHREE\n"
    );
    assert_eq!(llm.requests().len(), 7);
    let detail = w.ok("getRun", json!({"run": run})).await;
    assert_eq!(detail["status"], json!(200), "{detail}");
    assert_eq!(
        w.statuses(&run, "set://**").await,
        [("set://a.txt".to_string(), 200)]
    );
}

/// The marker files the test and the drivers synchronise on.
pub(super) struct Story {
    pub(super) marks: PathBuf,
}

impl Story {
    pub(super) fn mark(&self, name: &str) {
        std::fs::write(self.marks.join(name), "").unwrap();
    }

    /// Waits for a driver's marker `name`.
    pub(super) async fn reached(&self, name: &str) {
        let marker = self.marks.join(name);
        eventually(&format!("the editor's marker {name}"), async || {
            marker.exists().then_some(())
        })
        .await;
    }
}

/// Runs `scenario` of `sdk`'s driver as `person`, against `server`, in the project `demo`
/// of `home` (shared by both editors), in a task of its own.
pub(super) fn drive(
    sdk: Sdk,
    scenario: &'static str,
    person: &str,
    server: &ServerProcess,
    home: &Path,
    llm: &FakeLlm,
    story: &Story,
) -> actix_web::rt::task::JoinHandle<Value> {
    let remote = Remote::with_token(
        format!("ws://127.0.0.1:{}/", server.port),
        &format!("{person}-token"),
    );
    let mut env: Vec<(String, String)> = llm_env(llm)
        .into_iter()
        .map(|(key, value)| (key.to_string(), value.to_string()))
        .collect();
    env.push(("ACP_MARKER".into(), story.marks.display().to_string()));
    let home = home.to_path_buf();
    actix_web::rt::spawn(async move {
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        super::Drive::seen_in(sdk, scenario, &home, "demo", Some(remote), &env).await
    })
}

/// A team server whose members of project `demo` are mo, jo and wu (`<name>-token`).
async fn team_server(home: &Path, llm: &FakeLlm) -> ServerProcess {
    let users = home.join("users.toml");
    let people: String = ["mo", "jo", "wu"]
        .iter()
        .map(|name| {
            format!(
                "[[person]]\nname = \"{name}\"\ntoken_sha256 = \"{}\"\nrole = \"member\"\nprojects = [\"demo\"]\n",
                hash_token(&format!("{name}-token"))
            )
        })
        .collect();
    std::fs::write(&users, people).unwrap();
    let users = users.display().to_string();
    ServerProcess::start_with(
        home,
        llm,
        &[
            ("RUMMY_AUTH_TOKEN", "shared-token"),
            ("RUMMY_USERS_FILE", users.as_str()),
        ],
    )
    .await
}

/// `reply` is the refusal of a resolution of `path`, which `by` accepted first.
fn assert_refused_by(reply: &Value, path: &str, by: &str) {
    let error = &reply["error"];
    assert_eq!(error["code"], json!(-32602), "{reply}");
    assert_eq!(error["data"]["path"], json!(path), "{reply}");
    assert_eq!(error["data"]["action"], json!("accept"), "{reply}");
    assert_eq!(error["data"]["by"], json!(by), "the data says who: {reply}");
}

pub(super) fn updates<'a>(seen: &'a Value, kind: &str) -> Vec<&'a Value> {
    seen["updates"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|update| update["sessionUpdate"] == kind)
        .collect()
}

fn messages(seen: &Value) -> Vec<&str> {
    updates(seen, "agent_message_chunk")
        .iter()
        .map(|update| update["content"]["text"].as_str().unwrap())
        .collect()
}

/// The editor was shown the model's `texts` in this order (among others: what the other
/// editor's turns said in between is shown with the next turn).
fn assert_said_in_order(seen: &Value, texts: &[&str]) {
    let shown = messages(seen);
    let mut rest = shown.iter();
    for text in texts {
        assert!(
            rest.any(|said| said == text),
            "{text:?} in order in {shown:?}"
        );
    }
}

pub(super) fn said(text: &str) -> Value {
    json!([{"type": "content", "content": {"type": "text", "text": text}}])
}

fn editor_a_saw(seen: &Value) {
    assert_eq!(
        seen["stopReasons"],
        json!(["end_turn", "end_turn"]),
        "{seen}"
    );
    assert_eq!(seen["permissions"].as_array().unwrap().len(), 2, "{seen}");
    let withdrawn = updates(seen, "tool_call_update")
        .into_iter()
        .find(|update| update["toolCallId"] == "set://a.txt" && update.get("content").is_some())
        .expect("the withdrawn request's tool call is updated");
    assert_eq!(withdrawn["status"], json!("completed"));
    assert_eq!(withdrawn["content"], said("Accepted by wu."));
    assert_eq!(
        seen["writes"].as_array().unwrap().len(),
        1,
        "its late answer wrote nothing, its own allowed edit once: {}",
        seen["writes"]
    );
    assert_eq!(seen["writes"][0]["content"], json!("one\nTHREE\n"));
    assert_eq!(
        seen["permissions"][1]["toolCall"]["toolCallId"],
        json!("set://a.txt#2")
    );
    assert_said_in_order(
        seen,
        &[
            "Editing a.txt.",
            "Edited by W.",
            "Editing a.txt again.",
            "Edited again.",
        ],
    );
    assert_eq!(seen["exit"], json!({"code": 0, "signal": null}));
}

fn editor_b_saw(seen: &Value, command: &str) {
    let replayed =
        &seen["updates"].as_array().unwrap()[..seen["replayed"].as_u64().unwrap() as usize];
    let edit = replayed
        .iter()
        .find(|update| {
            update["sessionUpdate"] == "tool_call" && update["toolCallId"] == "set://a.txt"
        })
        .expect("the load replays A's edit");
    assert_eq!(
        edit["status"],
        json!("completed"),
        "the same outcome: {edit}"
    );
    assert!(
        replayed
            .iter()
            .any(|update| update["content"]["text"] == json!("Edited by W.")),
        "{replayed:?}"
    );
    assert_eq!(
        seen["stopReasons"],
        json!(["cancelled", "end_turn"]),
        "{seen}"
    );
    assert_eq!(seen["permissions"].as_array().unwrap().len(), 2, "{seen}");
    let withdrawn = updates(seen, "tool_call_update")
        .into_iter()
        .find(|update| update["toolCallId"] == command && update.get("content").is_some())
        .expect("the aborted request's tool call is updated");
    assert_eq!(withdrawn["status"], json!("failed"));
    assert_eq!(withdrawn["content"], said("Withdrawn: wu aborted the run."));
    let created: Vec<&Value> = seen["terminals"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|step| step.get("created").is_some())
        .collect();
    assert_eq!(
        created.len(),
        1,
        "the late answer ran nothing, the allowed command ran once: {created:?}"
    );
    assert_eq!(seen["writes"], json!([]));
    assert_said_in_order(seen, &["Checking.", "Checking again.", "Checked."]);
    assert_eq!(seen["exit"], json!({"code": 0, "signal": null}));
}
