//! `<progress>` tells the model how full its context is: the figure is the calibrated size
//! of the very packet it is in, from the first turn on, and the budget advisories follow it.

use serde_json::{json, Value};

use crate::budget::{app_with, base_packet_tokens, packet_tokens};
use rummy::llm::fake::{FakeLlm, Reply, Step, Usage};

/// The `used` and `ceiling` of the `Context: <used> of <ceiling> tokens` line.
fn reported_context(request: &Value) -> (usize, usize) {
    let user = request["messages"][1]["content"].as_str().unwrap();
    let line = user
        .lines()
        .find_map(|line| line.trim().strip_prefix("Context: "))
        .unwrap_or_else(|| panic!("no context line in {user}"));
    let numbers: Vec<usize> = line
        .split(|c: char| !c.is_ascii_digit())
        .filter(|part| !part.is_empty())
        .map(|part| part.parse().unwrap())
        .collect();
    (numbers[0], numbers[1])
}

fn user_message(request: &Value) -> &str {
    request["messages"][1]["content"].as_str().unwrap()
}

#[actix_web::test]
async fn the_first_turn_reports_the_size_of_its_own_packet() {
    let llm = FakeLlm::start([Step::reply("<summarize>ok</summarize>")]);
    let app = app_with(&llm, 100_000).await;
    let (mut client, _) = app.client_in_project("first-figure").await;
    let outcome = client
        .ok("ask", json!({"model": "fake", "prompt": "hello"}))
        .await;
    assert_eq!(outcome["status"], json!(200), "{outcome}");
    let first = &llm.requests()[0];
    let (used, ceiling) = reported_context(first);
    let size = packet_tokens(first);
    assert_eq!(ceiling, 100_000 * 9 / 10 - 500);
    assert!(
        used.abs_diff(size) * 50 <= size,
        "reported {used}, the packet is {size} tokens"
    );
    assert!(
        !user_message(first).contains("of the budget used"),
        "no advisory below half"
    );
}

#[actix_web::test]
async fn the_advisory_fires_on_the_first_turn_once_the_packet_passes_half() {
    let base = base_packet_tokens().await;
    let ceiling = base * 100 / 60;
    let window = (ceiling + 500) * 10 / 9 + 1;
    let llm = FakeLlm::start([Step::reply("<summarize>ok</summarize>")]);
    let app = app_with(&llm, window).await;
    let (mut client, _) = app.client_in_project("first-advisory").await;
    let outcome = client
        .ok("ask", json!({"model": "fake", "prompt": "x"}))
        .await;
    assert_eq!(outcome["status"], json!(200), "{outcome}");
    let first = &llm.requests()[0];
    let user = user_message(first);
    assert!(
        user.contains("of the budget used. YOU MAY"),
        "the half advisory: {user}"
    );
    let (used, _) = reported_context(first);
    assert!(used.abs_diff(packet_tokens(first)) * 50 <= used, "{user}");
}

/// What the server's budget actor scales an estimate of 100 tokens to for `run`.
async fn calibrated_hundred(app: &crate::support::TestApp, run: &str) -> u64 {
    let alias = run.to_string();
    let run = app
        .server
        .state
        .agent
        .db
        .call(move |conn| rummy::db::queries::runs::find_run(conn, &alias))
        .await
        .unwrap()
        .unwrap()
        .id;
    let measure = app
        .server
        .state
        .agent
        .budget
        .send(rummy::budget::Calibrated {
            run,
            estimate: rummy::budget::EstimatedTokens::new(100),
        })
        .await
        .unwrap();
    measure.calibrated.get()
}

#[actix_web::test]
async fn a_runs_calibration_lives_while_its_actor_has_work() {
    let overcounted = |content: &str| {
        Step::Reply(Reply::new(content).with_usage(Usage {
            prompt_tokens: 1_000_000,
            ..Usage::default()
        }))
    };
    let llm = FakeLlm::start([
        overcounted("<known path=\"known://a\">a fact</known><update>noted</update>"),
        overcounted("<summarize>done</summarize>"),
        Step::reply("<summarize>again</summarize>"),
    ]);
    let app = app_with(&llm, 1_000_000).await;
    let (mut client, _) = app.client_in_project("forget").await;
    let first = client
        .ok("ask", json!({"model": "fake", "prompt": "note"}))
        .await;
    let run = first["run"].as_str().unwrap().to_string();
    let calibrated_turn = &llm.requests()[1];
    let (used, _) = reported_context(calibrated_turn);
    assert!(
        used >= packet_tokens(calibrated_turn) * 7,
        "the provider's count scales the next turn: {used}"
    );
    let forgotten = tokio::time::timeout(std::time::Duration::from_secs(30), async {
        while calibrated_hundred(&app, &run).await != 100 {
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    })
    .await;
    assert!(forgotten.is_ok(), "the idle run's calibration is dropped");
    client
        .ok(
            "ask",
            json!({"model": "fake", "prompt": "again", "run": run}),
        )
        .await;
    let fresh = &llm.requests()[2];
    let (used, _) = reported_context(fresh);
    assert!(used.abs_diff(packet_tokens(fresh)) * 50 <= used, "{used}");
}
