//! The start of a loop with a new prompt demotes the previous loops' logging (the result
//! entries of tool commands: `get://`, `sh://`, …) from full to summary, so old results
//! stop costing their whole body; a loop that only resumes the run (no new prompt) keeps
//! them, since they are the results it continues from.

use serde_json::json;

use super::{alias, fidelity_of, packet};
use crate::support::TestApp;
use rummy::testing::fake_llm::{FakeLlm, Step, WhenExhausted};

/// Filed, then read back with `<get>`: the read's result entry is logging.
const FILE_AND_READ: &str = "<known path=\"known://colour\">the sky is blue</known>\
                             <get path=\"known://colour\"/>";

#[actix_web::test]
async fn a_new_prompt_demotes_the_previous_loops_logging() {
    let llm = FakeLlm::builder([
        Step::reply(format!("{FILE_AND_READ}<update>read it</update>")),
        Step::reply("<summarize>blue</summarize>"),
        Step::reply("<summarize>still blue</summarize>"),
    ])
    .when_exhausted(WhenExhausted::Error(500))
    .start();
    let app = TestApp::with_llm(&llm, &[]).await;
    let (mut client, _) = app.client_in_project("demote").await;
    let first = client
        .ok("ask", json!({"model": "fake", "prompt": "what colour?"}))
        .await;
    assert_eq!(first["status"], json!(200), "{first}");
    let run = alias(&first);
    assert_eq!(fidelity_of(&mut client, &run, "get://*").await, "full");
    let second = client
        .ok(
            "ask",
            json!({"model": "fake", "prompt": "and at night?", "run": run}),
        )
        .await;
    assert_eq!(second["status"], json!(200), "{second}");
    assert_eq!(fidelity_of(&mut client, &run, "get://*").await, "summary");
    assert_eq!(
        fidelity_of(&mut client, &run, "known://colour").await,
        "full",
        "only logging is demoted"
    );
    let requests = llm.requests();
    let read_result = "known://colour loaded";
    assert!(
        packet(&requests[1]).contains(read_result),
        "full in its own loop"
    );
    let next_loop = packet(&requests[2]);
    assert!(!next_loop.contains(read_result), "{next_loop}");
    assert!(
        next_loop.contains(
            "<get path=\"known://colour\" turn=\"1\" status=\"200\" fidelity=\"summary\"/>"
        ),
        "{next_loop}"
    );
}

#[actix_web::test]
async fn a_resumed_loop_keeps_the_logging_it_continues_from() {
    let llm = FakeLlm::builder([
        Step::reply(format!(
            "{FILE_AND_READ}<sh>make</sh><update>building</update>"
        )),
        Step::reply("<summarize>built</summarize>"),
    ])
    .when_exhausted(WhenExhausted::Error(500))
    .start();
    let app = TestApp::with_llm(&llm, &[]).await;
    let (mut client, _) = app.client_in_project("resume").await;
    let proposed = client
        .ok("act", json!({"model": "fake", "prompt": "build"}))
        .await;
    assert_eq!(proposed["status"], json!(202), "{proposed}");
    let run = alias(&proposed);
    let resumed = client
        .ok(
            "run/resolve",
            json!({"run": run, "resolution": {"path": proposed["proposed"][0]["path"], "action": "accept", "output": "built ok"}}),
        )
        .await;
    assert_eq!(resumed["status"], json!(200), "{resumed}");
    assert_eq!(llm.requests().len(), 2, "the run resumed");
    assert_eq!(fidelity_of(&mut client, &run, "get://*").await, "full");
    assert_eq!(fidelity_of(&mut client, &run, "sh://*").await, "full");
    assert!(packet(&llm.requests()[1]).contains("known://colour loaded"));
}
