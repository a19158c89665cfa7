//! Contextual sub-agents: a scripted parent `<delegate>`s, its child runs as a run of its
//! own with only the entries passed and restricted tools, and the child's summary, or why
//! it failed, comes back to the parent as an entry while the parent's loop goes on.

use serde_json::{json, Value};

use crate::support::{system_message, user_message, Client, TestApp};
use rummy::testing::fake_llm::{FakeLlm, Step};

/// The whole packet of one recorded LLM request.
fn packet(request: &Value) -> String {
    format!("{}\n{}", system_message(request), user_message(request))
}

/// The run of `runs` (a `getRuns` answer) called `alias`.
fn run_named<'a>(runs: &'a Value, alias: &str) -> &'a Value {
    runs.as_array()
        .and_then(|runs| runs.iter().find(|run| run["run"] == alias))
        .unwrap_or_else(|| panic!("no run {alias} in {runs}"))
}

/// The one run of `runs` that is not `parent`.
fn child_of(runs: &Value, parent: &str) -> String {
    let children: Vec<&Value> = runs
        .as_array()
        .map(|runs| runs.iter().filter(|run| run["run"] != parent).collect())
        .unwrap_or_default();
    assert_eq!(children.len(), 1, "{runs}");
    children[0]["run"].as_str().unwrap_or_default().to_owned()
}

/// `(status, body)` of each `delegate://` entry of the run, oldest first.
async fn delegations(client: &mut Client, run: &str) -> Vec<(i64, String)> {
    let detail = client.ok("getRun", json!({"run": run})).await;
    detail["context"]["history"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .filter(|entry| entry["scheme"] == "delegate")
        .map(|entry| {
            (
                entry["status"].as_i64().unwrap_or_default(),
                entry["body"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

#[actix_web::test]
async fn a_child_works_from_the_passed_context_and_its_summary_lands_in_the_parent() {
    let llm = FakeLlm::start([
        Step::reply(
            "<delegate path=\"notes.md\">What colour is the sky in notes.md?\
             </delegate><update>asked a sub-agent</update>",
        ),
        Step::reply("<summarize>notes.md says the sky is green</summarize>"),
        Step::reply("<summarize>The sky is green.</summarize>"),
    ]);
    let app = TestApp::with_llm(&llm, &[]).await;
    let (mut client, root) = app.client_in_project("delegating").await;
    std::fs::write(root.join("notes.md"), "The sky is green.").unwrap();
    std::fs::write(root.join("secret.md"), "The password is hunter2.").unwrap();
    let result = client
        .ok(
            "ask",
            json!({"model": "fake", "prompt": "What colour is the sky?"}),
        )
        .await;
    assert_eq!(result["status"], json!(200), "{result}");
    let parent = result["run"].as_str().unwrap().to_owned();

    let runs = client.ok("getRuns", json!({})).await;
    let child = child_of(&runs, &parent);
    assert_eq!(run_named(&runs, &child)["delegated_by"], json!(parent));
    assert_eq!(run_named(&runs, &child)["status"], json!(200));
    assert_eq!(run_named(&runs, &parent)["delegated_by"], Value::Null);
    let detail = client.ok("getRun", json!({"run": child})).await;
    assert_eq!(detail["delegated_by"], json!(parent));
    let purposes = |detail: &Value| -> Vec<(Value, Value)> {
        detail["context"]["telemetry"]["calls"]
            .as_array()
            .unwrap()
            .iter()
            .map(|line| (line["purpose"].clone(), line["calls"].clone()))
            .collect()
    };
    assert_eq!(purposes(&detail), [(json!("turn"), json!(1))]);
    let parent_detail = client.ok("getRun", json!({"run": parent})).await;
    assert_eq!(
        purposes(&parent_detail),
        [(json!("turn"), json!(2)), (json!("subagent"), json!(1))],
        "the parent's usage shows its sub-agent's call"
    );
    let telemetry = &parent_detail["context"]["telemetry"];
    assert_eq!(
        telemetry["prompt_tokens"], telemetry["calls"][0]["prompt_tokens"],
        "the child's call is in the child's totals, not the parent's"
    );
    let report = client.ok("usage/report", json!({"by": "purpose"})).await;
    let recorded: Vec<(Value, Value)> = report["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|row| (row["key"].clone(), row["calls"].clone()))
        .collect();
    assert_eq!(
        recorded,
        [(json!("subagent"), json!(1)), (json!("turn"), json!(2))],
        "the sub-agent's turn is recorded as such (no cost: by key)"
    );

    assert_eq!(
        delegations(&mut client, &parent).await,
        [(200, "notes.md says the sky is green".to_string())]
    );

    let requests = llm.requests();
    assert_eq!(requests.len(), 3);
    let parent_first = packet(&requests[0]);
    assert!(parent_first.contains("## <delegate"), "{parent_first}");
    let child_packet = packet(&requests[1]);
    assert!(child_packet.contains("The sky is green."), "{child_packet}");
    assert!(child_packet.contains("What colour is the sky in notes.md?"));
    assert!(
        !child_packet.contains("hunter2") && !child_packet.contains("secret.md"),
        "only the passed entries: {child_packet}"
    );
    assert!(
        !child_packet.contains("What colour is the sky?") && !child_packet.contains("## <sh"),
        "neither the parent's prompt nor commands: {child_packet}"
    );
    assert!(
        !child_packet.contains("## <delegate") && !child_packet.contains("## <ask_user"),
        "no further sub-agents at the default depth, no questions: {child_packet}"
    );
    let parent_next = packet(&requests[2]);
    assert!(
        parent_next.contains("notes.md says the sky is green"),
        "{parent_next}"
    );

    let mut child_states = 0;
    while let Some(notification) = client.pending_notifications().front().cloned() {
        client.next_notification().await;
        if notification["method"] == "run/state" && notification["params"]["run"] == child {
            child_states += 1;
        }
    }
    assert!(
        child_states > 0,
        "the child's own run/state reaches the clients"
    );
}

#[actix_web::test]
async fn a_failing_child_or_one_out_of_turns_is_an_error_entry_and_the_parent_goes_on() {
    let llm = FakeLlm::start([
        Step::reply("<delegate>Look into it.</delegate><update>delegated</update>"),
        Step::error(500),
        Step::reply("<delegate>Look again.</delegate><update>again</update>"),
        Step::reply("<update>still looking</update>"),
        Step::reply("<summarize>done without help</summarize>"),
    ]);
    let app = TestApp::with_llm(&llm, &[("RUMMY_SUBAGENT_MAX_TURNS", "1")]).await;
    let (mut client, _) = app.client_in_project("failing").await;
    let result = client
        .ok(
            "ask",
            json!({"model": "fake", "prompt": "investigate", "noRepo": true}),
        )
        .await;
    assert_eq!(result["status"], json!(200), "{result}");
    let parent = result["run"].as_str().unwrap();
    let statuses = client.statuses(parent, "delegate://*").await;
    assert_eq!(
        statuses,
        [
            ("delegate://turn_1/Look%20into%20it.".to_string(), 500),
            ("delegate://turn_2/Look%20again.".to_string(), 500),
        ]
    );
    let bodies = delegations(&mut client, parent).await;
    let failed = &bodies[0].1;
    assert!(failed.contains("failed:"), "{failed}");
    let out_of_turns = &bodies[1].1;
    assert!(
        out_of_turns.contains("stopped after 1 turns without a summary (its limit is 1 turns)"),
        "{out_of_turns}"
    );
    let runs = client.ok("getRuns", json!({})).await;
    let statuses: Vec<(Value, Value)> = runs
        .as_array()
        .unwrap()
        .iter()
        .map(|run| (run["status"].clone(), run["delegated_by"].clone()))
        .collect();
    assert_eq!(
        statuses,
        [
            (json!(200), json!(parent)),
            (json!(500), json!(parent)),
            (json!(200), Value::Null),
        ],
        "newest first: the turn-limited child, the failed one, the parent"
    );
}

#[actix_web::test]
async fn aborting_the_parent_aborts_the_child() {
    let llm = FakeLlm::start([
        Step::reply("<delegate>Take your time.</delegate><update>delegated</update>"),
        Step::Hang,
    ]);
    let app = TestApp::with_llm(&llm, &[]).await;
    let (mut client, _) = app.client_in_project("aborting").await;
    let (mut observer, _) = app.client_in_project("aborting").await;
    let asked = client
        .send(
            "ask",
            json!({"model": "fake", "prompt": "go", "noRepo": true}),
        )
        .await;
    let parent = observer.notification("run/progress").await["params"]["run"].clone();
    let child = observer
        .until_notified("run/progress", |progress| progress["run"] != parent)
        .await["params"]["run"]
        .clone();
    llm.wait_for_requests(2).await;
    observer.ok("run/abort", json!({"run": parent})).await;
    let aborted = client.reply(&asked).await;
    assert_eq!(aborted["result"]["status"], json!(499), "{aborted}");
    let runs = observer.ok("getRuns", json!({})).await;
    assert_eq!(
        run_named(&runs, child.as_str().unwrap())["status"],
        json!(499)
    );
    assert_eq!(llm.requests().len(), 2, "neither run asked the model again");
}

#[actix_web::test]
async fn with_no_depth_left_delegate_is_neither_offered_nor_run() {
    let llm = FakeLlm::start([
        Step::reply("<delegate>Help.</delegate><update>tried</update>"),
        Step::reply("<summarize>alone</summarize>"),
    ]);
    let app = TestApp::with_llm(&llm, &[("RUMMY_SUBAGENT_MAX_DEPTH", "0")]).await;
    let (mut client, _) = app.client_in_project("shallow").await;
    let result = client
        .ok(
            "ask",
            json!({"model": "fake", "prompt": "go", "noRepo": true}),
        )
        .await;
    let parent = result["run"].as_str().unwrap();
    assert!(!packet(&llm.requests()[0]).contains("## <delegate"));
    assert_eq!(
        client.statuses(parent, "delegate://*").await,
        [("delegate://turn_1/Help.".to_string(), 403)]
    );
    let runs = client.ok("getRuns", json!({})).await;
    assert_eq!(runs.as_array().map(Vec::len), Some(1), "no child: {runs}");
}

#[actix_web::test]
async fn a_path_the_parent_does_not_have_makes_no_child() {
    let llm = FakeLlm::start([
        Step::reply("<delegate path=\"known://nothing\">Use it.</delegate><update>x</update>"),
        Step::reply("<summarize>alone</summarize>"),
    ]);
    let app = TestApp::with_llm(&llm, &[]).await;
    let (mut client, _) = app.client_in_project("missing").await;
    let result = client
        .ok(
            "ask",
            json!({"model": "fake", "prompt": "go", "noRepo": true}),
        )
        .await;
    let parent = result["run"].as_str().unwrap();
    let found = delegations(&mut client, parent).await;
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].0, 404);
    assert!(found[0].1.contains("known://nothing"), "{:?}", found[0]);
    let runs = client.ok("getRuns", json!({})).await;
    assert_eq!(runs.as_array().map(Vec::len), Some(1), "no child: {runs}");
}

#[actix_web::test]
async fn a_child_runs_in_the_place_its_parent_lends_it() {
    let llm = FakeLlm::start([
        Step::reply("<delegate>Take your time.</delegate><update>delegated</update>"),
        Step::Hang,
    ]);
    let bounds = [
        ("RUMMY_MAX_ACTIVE_LOOPS_PER_PROJECT", "1"),
        ("RUMMY_LOOPS_OVER_LIMIT", "refuse"),
    ];
    let app = TestApp::with_llm(&llm, &bounds).await;
    let (mut client, _) = app.client_in_project("bounded").await;
    let (mut other, _) = app.client_in_project("bounded").await;
    let asked = client
        .send(
            "ask",
            json!({"model": "fake", "prompt": "go", "noRepo": true}),
        )
        .await;
    llm.wait_for_requests(2).await;
    let (code, _) = other
        .err(
            "ask",
            json!({"model": "fake", "prompt": "me too", "noRepo": true}),
        )
        .await;
    assert_eq!(code, -32006, "parent and child hold one place, and hold it");
    let runs = other.ok("getRuns", json!({})).await;
    let parent = runs
        .as_array()
        .and_then(|runs| runs.iter().find(|run| run["delegated_by"].is_null()))
        .map(|run| run["run"].clone())
        .unwrap_or_default();
    other.ok("run/abort", json!({"run": parent})).await;
    let aborted = client.reply(&asked).await;
    assert_eq!(aborted["result"]["status"], json!(499), "{aborted}");
}
