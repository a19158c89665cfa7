//! Snapshots of the two shapes a change most easily disturbs unseen: the packets the model
//! is sent (the system and user messages of a loop's turns, with the real registry and
//! sections) and the `run/state`s a client is told, for a loop that reads a file and
//! answers. What varies from run to run (the project's directory, the run's name, where
//! sequence numbers start) is replaced. A change that alters either fails here with the difference; `cargo insta
//! review` accepts it.

use serde_json::{json, Value};

use crate::support::{system_message, user_message, TestApp};
use rummy::testing::fake_llm::{FakeLlm, Step};

/// What one loop that reads `notes.txt` and answers sent: the model's requests, the
/// `run/state`s (as `run/replay` keeps them), and the project's root.
async fn one_loop() -> (FakeLlm, Vec<Value>, String) {
    let llm = FakeLlm::start([
        Step::reply("<get path=\"notes.txt\"/><update>Reading the notes.</update>"),
        Step::reply("<summarize>The notes say to ship on Friday.</summarize>"),
    ]);
    let app = TestApp::with_llm(&llm, &[]).await;
    let root = app.project_root("snap");
    std::fs::write(root.join("notes.txt"), "ship on Friday\n").unwrap();
    let (mut client, _) = app.client_in_project("snap").await;
    let result = client
        .ok(
            "ask",
            json!({"model": "fake", "prompt": "what do the notes say?"}),
        )
        .await;
    assert_eq!(result["status"], json!(200), "{result}");
    let run = result["run"].as_str().unwrap().to_owned();
    let replayed = client
        .ok("run/replay", json!({"run": run, "since": 0}))
        .await;
    let notifications = replayed["notifications"].as_array().unwrap();
    let first_seq = notifications[0]["params"]["seq"].as_u64().unwrap();
    let states = notifications
        .iter()
        .filter(|notice| notice["method"] == json!("run/state"))
        .map(|notice| {
            let mut state = notice["params"].clone();
            state["run"] = json!("[run]");
            // Sequence numbers start from the time; their steps are what is kept.
            state["seq"] = json!(state["seq"].as_u64().unwrap() - first_seq);
            state
        })
        .collect();
    (llm, states, root.display().to_string())
}

/// `value` as pretty JSON with the project's root replaced.
fn shown(value: &Value, root: &str) -> String {
    serde_json::to_string_pretty(value)
        .unwrap()
        .replace(root, "[project]")
}

#[actix_web::test]
async fn the_packets_of_a_loop_that_reads_and_answers() {
    let (llm, _, root) = one_loop().await;
    let packets: Vec<Value> = llm
        .requests()
        .iter()
        .map(|request| json!({"system": system_message(request), "user": user_message(request)}))
        .collect();
    insta::assert_snapshot!(shown(&json!(packets), &root));
}

#[actix_web::test]
async fn the_run_states_of_a_loop_that_reads_and_answers() {
    let (_, states, root) = one_loop().await;
    insta::assert_snapshot!(shown(&json!(states), &root));
}
