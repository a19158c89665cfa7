//! `<progress>` tells the model how full its context is: the figure is the calibrated size
//! of the very packet it is in, from the first turn on, and the budget advisories follow it.

use serde_json::{json, Value};

use crate::budget::{app_with, base_packet_tokens, packet_tokens};
use rummy::testing::fake_llm::{FakeLlm, Reply, Step, Usage};

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

#[actix_web::test]
async fn a_runs_calibration_lasts_across_its_loops() {
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
    let (mut client, _) = app.client_in_project("calibrated").await;
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
    client
        .ok(
            "ask",
            json!({"model": "fake", "prompt": "again", "run": run}),
        )
        .await;
    let next_loop = &llm.requests()[2];
    let (used, _) = reported_context(next_loop);
    assert!(
        used >= packet_tokens(next_loop) * 7,
        "the run's next loop starts calibrated: {used}"
    );
}
