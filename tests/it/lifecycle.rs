//! A run's lifecycle at its edges: `run/abort` and the queue behind the aborted loop, and
//! proposals a client made through the tool methods on a run that never ran a loop.

use std::time::Duration;

use serde_json::{json, Value};

use crate::support::{eventually, user_message, Client, TestApp};
use rummy::testing::fake_llm::{FakeLlm, Reply, Step, WhenExhausted};

/// Waits until `count` loops of the run are queued behind the running one.
async fn wait_for_pending_loops(app: &TestApp, alias: &str, count: usize) {
    let what = format!("{count} loops queued on {alias}");
    eventually(&what, async || {
        let alias = alias.to_string();
        let pending = app
            .read(move |conn| {
                crate::stored::run_named(conn, &alias)
                    .map_or(0, |run| crate::stored::pending_loops(conn, run.id))
            })
            .await;
        (pending >= count as i64).then_some(())
    })
    .await;
}

/// Sends `ask` and returns its id and the run's alias, learnt from the first notification.
async fn ask_in_flight(
    driver: &mut Client,
    observer: &mut Client,
    prompt: &str,
) -> (Value, String) {
    let id = driver
        .send("ask", json!({"model": "fake", "prompt": prompt}))
        .await;
    let progress = observer.notification("run/progress").await;
    let run = progress["params"]["run"].as_str().unwrap().to_string();
    (id, run)
}

#[actix_web::test]
async fn abort_stops_the_whole_run_its_queued_prompts_dropped_unrun() {
    let llm = FakeLlm::start([
        Step::Hang,
        Step::reply("<summarize>second done</summarize>"),
    ]);
    let app = TestApp::with_llm(&llm, &[]).await;
    let (mut first, _) = app.client_in_project("queue").await;
    let (mut second, _) = app.client_in_project("queue").await;
    let (mut observer, _) = app.client_in_project("queue").await;
    let (first_id, run) = ask_in_flight(&mut first, &mut observer, "first prompt").await;
    llm.wait_for_requests(1).await;
    let second_id = second
        .send(
            "ask",
            json!({"model": "fake", "prompt": "second prompt", "run": run}),
        )
        .await;
    wait_for_pending_loops(&app, &run, 1).await;
    observer.ok("run/abort", json!({"run": run})).await;
    let aborted = first.reply(&first_id).await;
    assert_eq!(aborted["result"]["status"], json!(499), "{aborted}");
    let errors = observer
        .ok("getEntries", json!({"run": run, "pattern": "error://*"}))
        .await;
    assert_eq!(errors, json!([]), "an abort records no error");
    let queued = second.reply(&second_id).await;
    assert_eq!(queued["result"]["status"], json!(499), "{queued}");
    assert_eq!(queued["result"]["reason"], json!("aborted"));
    llm.wait_for_dropped(1).await;
    assert_eq!(llm.requests().len(), 1, "the queued prompt never ran");
    let stored = observer.ok("getRun", json!({"run": run})).await;
    assert_eq!(stored["status"], json!(499));
}

/// A fresh run with two proposals made by a client (`sh`, `env`); returns the run's alias.
async fn run_with_client_proposals(client: &mut Client) -> String {
    let run = client.start_run("fake").await;
    let command = json!({"command": "npm test"});
    client
        .ok(
            "sh",
            json!({"run": run, "path": "npm test", "attributes": command}),
        )
        .await;
    client
        .ok(
            "env",
            json!({"run": run, "path": "node --version", "attributes": {"command": "node --version"}}),
        )
        .await;
    run
}

/// Resolves one proposal of `run`; returns the reply's result.
async fn resolve(
    client: &mut Client,
    run: &str,
    path: &str,
    action: &str,
    output: Option<&str>,
) -> Value {
    let mut resolution = json!({"path": path, "action": action});
    if let Some(output) = output {
        resolution["output"] = json!(output);
    }
    client
        .ok("run/resolve", json!({"run": run, "resolution": resolution}))
        .await
}

/// An `ask` on a run blocked by its client-made proposals; returns their paths.
async fn blocked_paths(client: &mut Client, run: &str) -> Vec<String> {
    let blocked = client
        .ok(
            "ask",
            json!({"model": "fake", "prompt": "are we green?", "run": run}),
        )
        .await;
    proposal_paths(&blocked)
}

fn proposal_paths(outcome: &Value) -> Vec<String> {
    outcome["proposed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|row| row["path"].as_str().unwrap().to_string())
        .collect()
}

#[actix_web::test]
async fn resolving_client_made_proposals_resumes_the_run_to_its_end() {
    let llm = FakeLlm::builder([Step::reply("<summarize>tests pass on node 22</summarize>")])
        .when_exhausted(WhenExhausted::Error(500))
        .start();
    let app = TestApp::with_llm(&llm, &[]).await;
    let (mut client, _) = app.client_in_project("proposals").await;
    let run = run_with_client_proposals(&mut client).await;
    let blocked = client
        .ok(
            "ask",
            json!({"model": "fake", "prompt": "are we green?", "run": run}),
        )
        .await;
    assert_eq!(blocked["status"], json!(202), "{blocked}");
    assert_eq!(blocked["remainingCount"], json!(2));
    assert!(llm.requests().is_empty(), "a blocked ask calls no model");
    let paths = proposal_paths(&blocked);
    let first = client
        .ok(
            "run/resolve",
            json!({"run": run, "resolution": {"path": paths[0], "action": "accept", "output": "12 passing"}}),
        )
        .await;
    assert_eq!(first["status"], json!(202), "{first}");
    assert_eq!(first["remainingCount"], json!(1));
    let last = resolve(&mut client, &run, &paths[1], "accept", Some("v22.1.0")).await;
    assert_eq!(last, json!({"run": run, "status": 200, "reason": "done"}));
    let requests = llm.requests();
    assert_eq!(requests.len(), 1, "the resumed loop ran one turn");
    let seen = user_message(&requests[0]);
    assert!(
        seen.contains("12 passing") && seen.contains("v22.1.0"),
        "{seen}"
    );
    assert!(
        seen.contains("mode=\"ask\""),
        "a run that never ran resumes as an ask"
    );
    let stored = client.ok("getRun", json!({"run": run})).await;
    assert_eq!(stored["status"], json!(200));
}

#[actix_web::test]
async fn rejecting_client_made_proposals_completes_a_run_that_never_ran() {
    let llm = FakeLlm::builder([])
        .when_exhausted(WhenExhausted::Error(500))
        .start();
    let app = TestApp::with_llm(&llm, &[]).await;
    let (mut client, _) = app.client_in_project("proposals").await;
    let run = run_with_client_proposals(&mut client).await;
    let paths = blocked_paths(&mut client, &run).await;
    resolve(&mut client, &run, &paths[0], "accept", Some("ok")).await;
    let last = resolve(&mut client, &run, &paths[1], "reject", None).await;
    assert_eq!(
        last,
        json!({"run": run, "status": 200, "reason": "rejected"})
    );
    assert!(llm.requests().is_empty(), "a rejection stops the run");
    let stored = client.ok("getRun", json!({"run": run})).await;
    assert_eq!(stored["status"], json!(200));
}

#[actix_web::test]
async fn one_rejection_among_the_proposals_stops_the_run() {
    let llm = FakeLlm::builder([])
        .when_exhausted(WhenExhausted::Error(500))
        .start();
    let app = TestApp::with_llm(&llm, &[]).await;
    let (mut client, _) = app.client_in_project("proposals").await;
    let run = run_with_client_proposals(&mut client).await;
    let paths = blocked_paths(&mut client, &run).await;
    resolve(&mut client, &run, &paths[0], "reject", None).await;
    let last = resolve(&mut client, &run, &paths[1], "accept", Some("v22")).await;
    assert_eq!(
        last,
        json!({"run": run, "status": 200, "reason": "rejected"})
    );
    assert!(
        llm.requests().is_empty(),
        "the earlier rejection stopped the run"
    );
}

#[actix_web::test]
async fn a_message_injected_into_a_running_act_loop_is_an_act_prompt() {
    let llm = FakeLlm::start([
        Step::delayed(
            Duration::from_millis(300),
            Reply::new("<update>working</update>"),
        ),
        Step::reply("<summarize>done</summarize>"),
    ]);
    let app = TestApp::with_llm(&llm, &[]).await;
    let (mut driver, _) = app.client_in_project("inject_act").await;
    let (mut observer, _) = app.client_in_project("inject_act").await;
    let id = driver
        .send(
            "act",
            json!({"model": "fake", "prompt": "fix it", "noRepo": true}),
        )
        .await;
    let progress = observer.notification("run/progress").await;
    let run = progress["params"]["run"].as_str().unwrap().to_string();
    llm.wait_for_requests(1).await;
    let injected = observer
        .ok(
            "run/inject",
            json!({"run": run, "message": "also check the tests"}),
        )
        .await;
    assert_eq!(injected["injected"], json!("next_turn"), "{injected}");
    let done = driver.reply(&id).await;
    assert_eq!(done["result"]["status"], json!(200), "{done}");
    let next = user_message(&llm.requests()[1]);
    assert!(
        next.contains("<prompt mode=\"act\"") && next.contains("also check the tests"),
        "the injected prompt keeps the loop's mode: {next}"
    );
    let detail = observer.ok("getRun", json!({"run": run})).await;
    let prompt = detail["context"]["history"]
        .as_array()
        .unwrap()
        .iter()
        .find(|row| row["body"] == json!("also check the tests"))
        .cloned()
        .unwrap_or_else(|| panic!("the injected prompt is stored: {detail}"));
    assert_eq!(prompt["attributes"]["mode"], json!("act"), "{prompt}");
}
