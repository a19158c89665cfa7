//! The temperature a request reaches the provider with: the `ask`/`act` request's, else
//! the run's stored one (`startRun`, `run/config`), else `RUMMY_TEMPERATURE`, else none at
//! all; `getRun` and `run/state` report that effective temperature.

use serde_json::{json, Value};

use crate::support::{Client, TestApp};
use rummy::testing::fake_llm::{FakeLlm, Step};

fn summaries(count: usize) -> Vec<Step> {
    (0..count)
        .map(|index| Step::reply(format!("<summarize>answer {index}</summarize>")))
        .collect()
}

/// Asks on `run` (a new run when `None`), then returns the `temperature` the provider
/// received and the one `run/state` reported.
async fn ask(
    client: &mut Client,
    llm: &FakeLlm,
    run: Option<&str>,
    temperature: Option<f64>,
) -> (String, Value, Value) {
    let mut params = json!({"model": "fake", "prompt": "go"});
    if let Some(run) = run {
        params["run"] = json!(run);
    }
    if let Some(temperature) = temperature {
        params["temperature"] = json!(temperature);
    }
    let outcome = client.ok("ask", params).await;
    assert_eq!(outcome["status"], json!(200), "{outcome}");
    let state = client.notification("run/state").await;
    let sent = llm.requests().last().unwrap()["temperature"].clone();
    (
        outcome["run"].as_str().unwrap().to_string(),
        sent,
        state["params"]["telemetry"]["temperature"].clone(),
    )
}

async fn effective_temperature(client: &mut Client, run: &str) -> Value {
    let detail = client.ok("getRun", json!({"run": run})).await;
    detail["context"]["telemetry"]["temperature"].clone()
}

#[actix_web::test]
async fn the_request_wins_then_the_run_then_the_setting() {
    let llm = FakeLlm::start(summaries(4));
    let app = TestApp::with_llm(&llm, &[("RUMMY_TEMPERATURE", "0.7")]).await;
    let (mut client, _) = app.client_in_project("temperature").await;
    let started = client
        .ok("startRun", json!({"model": "fake", "temperature": 0.3}))
        .await;
    let run = started["run"].as_str().unwrap().to_string();
    assert_eq!(effective_temperature(&mut client, &run).await, json!(0.3));

    let (_, sent, reported) = ask(&mut client, &llm, Some(&run), Some(1.1)).await;
    assert_eq!((sent, reported), (json!(1.1), json!(1.1)), "the request's");
    assert_eq!(effective_temperature(&mut client, &run).await, json!(1.1));

    let (_, sent, reported) = ask(&mut client, &llm, Some(&run), None).await;
    assert_eq!((sent, reported), (json!(0.3), json!(0.3)), "the run's");
    assert_eq!(effective_temperature(&mut client, &run).await, json!(0.3));

    let configured = client
        .ok("run/config", json!({"run": run, "temperature": 0.5}))
        .await;
    assert_eq!(configured, json!({"status": "ok"}));
    let (_, sent, reported) = ask(&mut client, &llm, Some(&run), None).await;
    assert_eq!((sent, reported), (json!(0.5), json!(0.5)), "run/config's");
    assert_eq!(effective_temperature(&mut client, &run).await, json!(0.5));

    let (other, sent, reported) = ask(&mut client, &llm, None, None).await;
    assert_eq!((sent, reported), (json!(0.7), json!(0.7)), "the setting");
    assert_eq!(effective_temperature(&mut client, &other).await, json!(0.7));
    let detail = client.ok("getRun", json!({"run": other})).await;
    assert!(detail["temperature"].is_null(), "stored: {detail}");
}

#[actix_web::test]
async fn without_any_temperature_the_provider_chooses() {
    let llm = FakeLlm::start(summaries(1));
    let app = TestApp::with_llm(&llm, &[]).await;
    let (mut client, _) = app.client_in_project("no-temperature").await;
    let (run, _, reported) = ask(&mut client, &llm, None, None).await;
    let request = llm.requests()[0].clone();
    assert!(request.get("temperature").is_none(), "{request}");
    assert!(reported.is_null());
    assert!(effective_temperature(&mut client, &run).await.is_null());
}
