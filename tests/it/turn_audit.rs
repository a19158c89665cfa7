//! A turn's audit copies of what the model saw: within a loop, the system message is copied
//! only when it differs from the one the loop's previous turn saw, so the system message
//! turn `N` saw is the run's latest `system://M` with `M ≤ N`.

use rummy::testing::fake_llm::{FakeLlm, Step};
use serde_json::json;

use crate::support::{system_message, TestApp};

#[actix_web::test]
async fn a_loop_copies_its_system_message_only_when_it_changed() {
    let llm = FakeLlm::builder([
        // Turn 1 files nothing; turn 2 sees the same system message and files a fact,
        // which turn 3's system message shows (the knowns are part of it).
        Step::reply("<update>looking around</update>"),
        Step::reply("<known path=\"known://a\" summary=\"a\">one</known><update>noting</update>"),
        Step::reply("<summarize>noted</summarize>"),
        // The next loop's first turn: its system message shows the earlier loop's work.
        Step::reply("<summarize>again</summarize>"),
    ])
    .start();
    let app = TestApp::with_llm(&llm, &[]).await;
    let (mut client, _) = app.client_in_project("audited").await;
    let first = client
        .ok("ask", json!({"model": "fake", "prompt": "note a"}))
        .await;
    assert_eq!(first["status"], json!(200), "{first}");
    let run = first["run"].as_str().unwrap().to_string();
    let second = client
        .ok(
            "ask",
            json!({"model": "fake", "prompt": "again", "run": run}),
        )
        .await;
    assert_eq!(second["status"], json!(200), "{second}");

    let seen: Vec<String> = llm.requests().iter().map(system_message).collect();
    assert_eq!(seen.len(), 4);
    assert_eq!(seen[1], seen[0], "turn 2 saw turn 1's system message");
    assert_ne!(seen[2], seen[1], "the fact filed changed it");
    assert_ne!(seen[3], seen[2], "the next loop's changed it");

    let copies = client.paths(&run, "system://*").await;
    assert_eq!(
        copies,
        ["system://1", "system://3", "system://4"],
        "no copy for turn 2, whose system message was turn 1's"
    );
}

/// A run's actor leaves while the run waits for a person; the turn that continues it after
/// an acceptance compares its system message with the run's latest stored copy.
#[actix_web::test]
async fn a_run_continued_after_it_waited_copies_an_unchanged_system_message_no_more() {
    let llm = FakeLlm::builder([
        Step::reply("<sh>echo hello</sh><update>asking to run it</update>"),
        Step::reply("<summarize>it said hello</summarize>"),
    ])
    .start();
    let app = TestApp::with_llm(&llm, &[]).await;
    let (mut client, _) = app.client_in_project("audited").await;
    let proposed = client
        .ok("act", json!({"model": "fake", "prompt": "say hello"}))
        .await;
    assert_eq!(proposed["status"], json!(202), "{proposed}");
    let run = proposed["run"].as_str().unwrap().to_string();
    let resolution = json!({"path": proposed["proposed"][0]["path"], "action": "accept",
                            "output": "hello\n"});
    let resolved = client
        .ok("run/resolve", json!({"run": run, "resolution": resolution}))
        .await;
    assert_eq!(resolved["status"], json!(200), "{resolved}");

    let seen: Vec<String> = llm.requests().iter().map(system_message).collect();
    assert_eq!(seen.len(), 2);
    assert_eq!(
        seen[1], seen[0],
        "the command's output is not in the system message"
    );
    assert_eq!(
        client.paths(&run, "system://*").await,
        ["system://1"],
        "turn 2 saw the run's latest copy, though a new actor recorded it"
    );
}
