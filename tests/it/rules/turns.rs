//! How a turn's commands settle it, and what a resolution leaves in the store: a refused
//! command stops the actions after it; a summary in a turn with a failure does not end the
//! loop; updates that read or write are progress, not repetition; a rejected proposal reads
//! "rejected", an accepted edit keeps what was proposed, and an `error` resolution of a
//! question keeps the user's answer.

use serde_json::{json, Value};

use super::{alias, history_of};
use crate::support::{Client, TestApp};
use rummy::testing::fake_llm::{FakeLlm, Step, WhenExhausted};

/// Resolves the first proposal of a loop's `outcome` with `action` (and `output`).
async fn resolve_first(client: &mut Client, outcome: &Value, action: &str, output: Option<&str>) {
    let mut resolution = json!({"path": outcome["proposed"][0]["path"], "action": action});
    if let Some(output) = output {
        resolution["output"] = json!(output);
    }
    client
        .ok(
            "run/resolve",
            json!({"run": alias(outcome), "resolution": resolution}),
        )
        .await;
}

#[actix_web::test]
async fn a_refused_command_stops_the_actions_after_it() {
    let llm = FakeLlm::start([Step::reply(
        "<set path=\"app.js\">s/3000/8080/</set><set path=\"known://note\">later</set><update>editing</update>",
    )]);
    let app = TestApp::with_llm(&llm, &[]).await;
    let (mut client, root) = app.client_in_project("refused").await;
    std::fs::write(root.join("app.js"), "const port = 3000;\n").unwrap();
    let outcome = client
        .ok("ask", json!({"model": "fake", "prompt": "edit"}))
        .await;
    let run = alias(&outcome);
    assert!(
        client.statuses(&run, "known://note").await.is_empty(),
        "the set after the refused edit did not run"
    );
}

#[actix_web::test]
async fn a_summary_in_a_turn_with_a_failure_does_not_end_the_loop() {
    let llm = FakeLlm::start([
        Step::reply("<get path=\"known://missing\"/><summarize>done early</summarize>"),
        Step::reply("<summarize>done</summarize>"),
    ]);
    let app = TestApp::with_llm(&llm, &[]).await;
    let (mut client, _) = app.client_in_project("failure").await;
    let outcome = client
        .ok(
            "ask",
            json!({"model": "fake", "prompt": "look", "noRepo": true}),
        )
        .await;
    assert_eq!(outcome["status"], json!(200), "{outcome}");
    assert_eq!(llm.requests().len(), 2, "the failed turn did not end it");
    let detail = client.ok("getRun", json!({"run": alias(&outcome)})).await;
    assert_eq!(detail["last_summary"], json!("done"), "{detail}");
}

/// A loop whose model repeats one update text while its commands differ each turn: each
/// turn is progress, so it runs to the closing summary.
async fn repeated_update_with(commands: impl Fn(usize) -> String) {
    let script: Vec<Step> = (0..4)
        .map(|turn| Step::reply(format!("{}<update>still working</update>", commands(turn))))
        .collect();
    let llm = FakeLlm::builder(script)
        .when_exhausted(WhenExhausted::Reply(rummy::testing::fake_llm::Reply::new(
            "<summarize>finished</summarize>",
        )))
        .start();
    let app = TestApp::with_llm(&llm, &[]).await;
    let (mut client, _) = app.client_in_project("progress").await;
    let outcome = client
        .ok(
            "ask",
            json!({"model": "fake", "prompt": "work", "noRepo": true}),
        )
        .await;
    assert_eq!(outcome["status"], json!(200), "{outcome}");
    assert_eq!(
        llm.requests().len(),
        5,
        "not stopped as a repeated update: {}",
        commands(0)
    );
}

#[actix_web::test]
async fn updates_that_read_are_progress() {
    repeated_update_with(|turn| format!("<get path=\"known://topic_{turn}\"/>")).await;
}

#[actix_web::test]
async fn updates_that_record_facts_are_progress() {
    repeated_update_with(|turn| format!("<known path=\"known://fact_{turn}\">fact {turn}</known>"))
        .await;
}

#[actix_web::test]
async fn updates_that_write_entries_are_progress() {
    repeated_update_with(|turn| format!("<set path=\"known://note_{turn}\">note {turn}</set>"))
        .await;
}

#[actix_web::test]
async fn a_rejected_proposal_reads_rejected() {
    let llm = FakeLlm::start([Step::reply("<sh>make</sh><update>building</update>")]);
    let app = TestApp::with_llm(&llm, &[]).await;
    let (mut client, _) = app.client_in_project("rejected").await;
    let outcome = client
        .ok("act", json!({"model": "fake", "prompt": "build"}))
        .await;
    let run = alias(&outcome);
    resolve_first(&mut client, &outcome, "reject", None).await;
    let sh = history_of(&mut client, &run, "sh").await;
    assert_eq!(sh[0]["body"], json!("rejected"), "{sh:?}");
}

#[actix_web::test]
async fn accepting_an_edit_keeps_what_was_proposed() {
    let llm = FakeLlm::start([
        Step::reply("<set path=\"app.js\">s/3000/8080/</set><update>editing</update>"),
        Step::reply("<summarize>port changed</summarize>"),
    ]);
    let app = TestApp::with_llm(&llm, &[]).await;
    let (mut client, root) = app.client_in_project("kept").await;
    std::fs::write(root.join("app.js"), "const port = 3000;\n").unwrap();
    let outcome = client
        .ok("act", json!({"model": "fake", "prompt": "use 8080"}))
        .await;
    let run = alias(&outcome);
    resolve_first(&mut client, &outcome, "accept", Some("applied")).await;
    let set = history_of(&mut client, &run, "set").await;
    assert_eq!(set[0]["body"], json!("const port = 3000;\n"), "{set:?}");
}

#[actix_web::test]
async fn an_error_resolution_of_a_question_keeps_the_answer() {
    let llm = FakeLlm::start([
        Step::reply(
            "<ask_user question=\"Which database?\" options=\"sqlite; postgres\"/><update>asking</update>",
        ),
        Step::reply("<summarize>noted</summarize>"),
    ]);
    let app = TestApp::with_llm(&llm, &[]).await;
    let (mut client, _) = app.client_in_project("answer").await;
    let outcome = client
        .ok("act", json!({"model": "fake", "prompt": "pick"}))
        .await;
    let run = alias(&outcome);
    resolve_first(&mut client, &outcome, "error", Some("whatever is fastest")).await;
    let asked = history_of(&mut client, &run, "ask_user").await;
    assert_eq!(
        asked[0]["attributes"]["answer"],
        json!("whatever is fastest"),
        "{asked:?}"
    );
}

#[actix_web::test]
async fn a_command_error_resolution_runs_nothing_else() {
    let llm = FakeLlm::start([
        Step::reply("<sh>make</sh><update>building</update>"),
        Step::reply("<summarize>gave up</summarize>"),
    ]);
    let app = TestApp::with_llm(&llm, &[]).await;
    let (mut client, _) = app.client_in_project("failed").await;
    let outcome = client
        .ok("act", json!({"model": "fake", "prompt": "build"}))
        .await;
    let run = alias(&outcome);
    resolve_first(&mut client, &outcome, "error", Some("make: not found")).await;
    let sh = history_of(&mut client, &run, "sh").await;
    assert_eq!(sh[0]["body"], json!("make: not found"), "{sh:?}");
    assert_eq!(sh[0]["status"], json!(500), "{sh:?}");
}
