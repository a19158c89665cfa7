//! A loop that continues a run keeps the mode and flags of the loop it continues
//! (PROTOCOL Part A.6, AGENT Part A.4): the loop resumed by `run/resolve` and the loop
//! `run/inject` starts on an idle run. Observed in what the model gets: the `<prompt>` mode,
//! the tools offered, and no project file.

use serde_json::json;

use super::{alias, file_entries, packet, told_about, PromptTag};
use crate::support::TestApp;
use rummy::testing::fake_llm::{FakeLlm, Step, WhenExhausted};

#[actix_web::test]
async fn resumed_and_injected_loops_keep_the_mode_and_flags() {
    let llm = FakeLlm::builder([
        Step::reply("<sh>ls</sh><update>listing</update>"),
        Step::reply("<summarize>listed</summarize>"),
        Step::reply("<summarize>noted</summarize>"),
    ])
    .when_exhausted(WhenExhausted::Error(500))
    .start();
    let app = TestApp::with_llm(&llm, &[]).await;
    let (mut client, root) = app.client_in_project("inherit").await;
    std::fs::write(root.join("secret_plan.md"), "Step one: profit.\n").unwrap();
    let proposed = client
        .ok(
            "act",
            json!({"model": "fake", "prompt": "list the files", "noRepo": true, "noInteraction": true}),
        )
        .await;
    assert_eq!(proposed["status"], json!(202), "{proposed}");
    let run = alias(&proposed);
    let resumed = client
        .ok(
            "run/resolve",
            json!({"run": run, "resolution": {"path": proposed["proposed"][0]["path"], "action": "accept", "output": "(listing)"}}),
        )
        .await;
    assert_eq!(resumed["status"], json!(200), "{resumed}");
    let injected = client
        .ok(
            "run/inject",
            json!({"run": run, "message": "also note the date"}),
        )
        .await;
    assert_eq!(injected["status"], json!(200), "{injected}");
    let requests = llm.requests();
    assert_eq!(requests.len(), 3);
    for (request, which) in requests.iter().zip(["first", "resumed", "injected"]) {
        let prompt = PromptTag::of(request);
        assert_eq!(prompt.mode, "act", "{which} loop: {prompt:?}");
        assert!(told_about(request, "sh"), "{which} loop: act offers sh");
        assert!(
            !told_about(request, "ask_user"),
            "{which} loop keeps noInteraction"
        );
        assert!(
            !packet(request).contains("secret_plan.md"),
            "{which} loop keeps noRepo"
        );
    }
    assert!(packet(&requests[2]).contains("also note the date"));
    assert_eq!(file_entries(&mut client, &run).await, [] as [&str; 0]);
}

/// The same for an ask loop with the other flags, so that neither "always act" nor
/// "always these flags" passes.
#[actix_web::test]
async fn a_resumed_ask_loop_stays_ask_with_its_flags() {
    let llm = FakeLlm::builder([
        Step::reply("<env>ls</env><update>listing</update>"),
        Step::reply("<summarize>listed</summarize>"),
        Step::reply("<summarize>noted</summarize>"),
    ])
    .when_exhausted(WhenExhausted::Error(500))
    .start();
    let app = TestApp::with_llm(&llm, &[("RUMMY_SEARXNG_URL", "http://127.0.0.1:9")]).await;
    let (mut client, root) = app.client_in_project("inherit_ask").await;
    std::fs::write(root.join("visible.md"), "hello\n").unwrap();
    let proposed = client
        .ok(
            "ask",
            json!({"model": "fake", "prompt": "list the files", "noWeb": true}),
        )
        .await;
    assert_eq!(proposed["status"], json!(202), "{proposed}");
    let run = alias(&proposed);
    client
        .ok(
            "run/resolve",
            json!({"run": run, "resolution": {"path": proposed["proposed"][0]["path"], "action": "accept", "output": "(listing)"}}),
        )
        .await;
    client
        .ok("run/inject", json!({"run": run, "message": "and now?"}))
        .await;
    let requests = llm.requests();
    assert_eq!(requests.len(), 3);
    for (request, which) in requests.iter().zip(["first", "resumed", "injected"]) {
        assert_eq!(PromptTag::of(request).mode, "ask", "{which} loop");
        assert!(!told_about(request, "sh"), "{which} loop: ask offers no sh");
        assert!(!told_about(request, "search"), "{which} loop keeps noWeb");
        assert!(told_about(request, "ask_user"), "{which} loop: interaction");
        assert!(packet(request).contains("visible.md"), "{which} loop scans");
    }
}
