//! `/metrics` as a scraper sees it while loops run against the scripted LLM: the counters
//! move where things happen, and the queue gauges follow the store.

use std::collections::HashMap;

use serde_json::json;

use crate::support::TestApp;
use rummy::testing::fake_llm::{FakeLlm, Reply, Step, Usage};

/// Every sample of the exposition, by name and labels (`rummy_runs{status="200"}`).
async fn scrape(app: &TestApp) -> HashMap<String, f64> {
    let mut response = awc::Client::new()
        .get(format!("http://{}/metrics", app.addr()))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 200);
    let text = String::from_utf8(response.body().await.unwrap().to_vec()).unwrap();
    text.lines()
        .filter(|line| !line.starts_with('#'))
        .map(|line| {
            let (sample, value) = line.rsplit_once(' ').unwrap();
            (sample.to_string(), value.parse().unwrap())
        })
        .collect()
}

fn value(samples: &HashMap<String, f64>, sample: &str) -> f64 {
    *samples
        .get(sample)
        .unwrap_or_else(|| panic!("no {sample} in {samples:?}"))
}

#[actix_web::test]
async fn metrics_follow_connections_turns_llm_calls_and_the_loop_queue() {
    let usage = Usage {
        prompt_tokens: 1200,
        completion_tokens: 34,
        ..Usage::default()
    };
    let llm = FakeLlm::start([
        Step::Reply(Reply::new("<summarize>4</summarize>").with_usage(usage)),
        Step::error(500),
        Step::Hang,
    ]);
    let app = TestApp::with_llm(&llm, &[]).await;
    let before = scrape(&app).await;
    assert_eq!(value(&before, "rummy_connections_open"), 0.0);
    assert_eq!(
        value(
            &before,
            r#"rummy_llm_duration_seconds_count{provider="openai"}"#
        ),
        0.0
    );
    let (mut client, _) = app.client_in_project("metrics").await;

    let answered = client
        .ok(
            "ask",
            json!({"model": "fake", "prompt": "2 + 2?", "noRepo": true}),
        )
        .await;
    assert_eq!(answered["status"], json!(200));
    let after_one = scrape(&app).await;
    for (sample, expected) in [
        ("rummy_connections_open", 1.0),
        ("rummy_connections_total", 1.0),
        ("rummy_turns_total", 1.0),
        (r#"rummy_runs{status="200"}"#, 1.0),
        (r#"rummy_requests_total{outcome="ok"}"#, 2.0),
        (
            r#"rummy_llm_duration_seconds_count{provider="openai"}"#,
            1.0,
        ),
        (
            r#"rummy_llm_prompt_tokens_total{provider="openai"}"#,
            1200.0,
        ),
        (
            r#"rummy_llm_completion_tokens_total{provider="openai"}"#,
            34.0,
        ),
        (r#"rummy_llm_errors_total{provider="openai"}"#, 0.0),
        (
            r#"rummy_llm_duration_seconds_count{provider="ollama"}"#,
            0.0,
        ),
        (r#"rummy_loops{state="running"}"#, 0.0),
        ("rummy_runs_with_work", 0.0),
    ] {
        assert_eq!(value(&after_one, sample), expected, "{sample}");
    }
    assert!(
        value(
            &after_one,
            r#"rummy_llm_duration_seconds_sum{provider="openai"}"#
        ) > 0.0
    );
    assert!(
        value(&after_one, "rummy_replay_bytes") > 0.0,
        "the run's notifications are kept for run/replay"
    );
    let moved = |sample: &str| value(&after_one, sample) - value(&before, sample);
    assert_eq!(moved(r#"rummy_llm_requests_total{provider="openai"}"#), 1.0);
    for sample in [
        r#"rummy_sql_statements_total{connection="writer"}"#,
        r#"rummy_sql_statements_total{connection="reader"}"#,
        "rummy_store_units_total",
        "rummy_store_reads_total",
        "rummy_frames_sent_total",
        "rummy_frame_bytes_sent_total",
    ] {
        assert!(moved(sample) > 0.0, "the ask's work counts in {sample}");
    }

    let failed = client
        .ok(
            "ask",
            json!({"model": "fake", "prompt": "again", "noRepo": true}),
        )
        .await;
    assert_ne!(failed["status"], json!(200), "{failed}");
    let after_error = scrape(&app).await;
    assert_eq!(
        value(&after_error, r#"rummy_llm_errors_total{provider="openai"}"#),
        1.0
    );
    assert_eq!(value(&after_error, "rummy_turns_total"), 1.0);

    let hanging = client
        .send(
            "ask",
            json!({"model": "fake", "prompt": "think", "noRepo": true}),
        )
        .await;
    let earlier = [&answered["run"], &failed["run"]];
    let progress = client
        .until_notified("run/progress", |progress| {
            !earlier.contains(&&progress["run"])
        })
        .await;
    let run = progress["params"]["run"].as_str().unwrap().to_string();
    llm.wait_for_requests(3).await;
    let busy = scrape(&app).await;
    assert_eq!(value(&busy, r#"rummy_loops{state="running"}"#), 1.0);
    assert_eq!(value(&busy, "rummy_runs_with_work"), 1.0);
    assert_eq!(
        value(&busy, r#"rummy_llm_in_flight{provider="openai"}"#),
        1.0
    );
    assert_eq!(value(&busy, r#"rummy_llm_waiting{provider="openai"}"#), 0.0);

    client.ok("run/abort", json!({"run": run})).await;
    assert_eq!(client.reply(&hanging).await["result"]["status"], json!(499));
    let idle = scrape(&app).await;
    assert_eq!(value(&idle, r#"rummy_loops{state="running"}"#), 0.0);
    assert_eq!(value(&idle, "rummy_runs_with_work"), 0.0);
    assert_eq!(
        value(&idle, r#"rummy_llm_in_flight{provider="openai"}"#),
        0.0
    );
    assert_eq!(value(&idle, r#"rummy_runs{status="499"}"#), 1.0);
    assert_eq!(
        value(&idle, r#"rummy_llm_errors_total{provider="openai"}"#),
        1.0,
        "a cancelled call is no error"
    );
}
