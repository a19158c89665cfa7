//! Usage accounting through the public protocol, with the scripted LLM reporting usage:
//! every answered call (a turn's, the session notes') is recorded once with its purpose, the
//! person who started the run and its project; its cost comes from the catalogue's price
//! then (a later price changes only later calls) unless the provider reported one;
//! `usage/report` shows a person their own calls and an admin everyone's; `getRun` and
//! `/metrics` show the same money. Whatever a provider reports (10^18 tokens, a negative
//! count, a string, no usage at all) is recorded once, within the model's bounds, estimated
//! from the texts where it said nothing, and no report, cap or sum breaks on it.

use std::path::Path;

use rummy::hash_token;
use rummy::testing::fake_llm::{FakeLlm, Step, Usage};
use serde_json::{json, Value};

use crate::process::LoggedServer;
use crate::session_notes::{learning, notes, NOTES_ON};
use crate::support::{eventually, llm_env, project_root, Client, TestApp};

mod streamed;

const ADA: &str = "ada-token";
const MO: &str = "mo-token";
const OLGA: &str = "olga-token";

/// ada administers everything; mo and olga work on `web`.
fn team(dir: &Path) -> String {
    let file = dir.join("users.toml");
    let people = [
        ("ada", ADA, "admin", "*"),
        ("mo", MO, "member", "web"),
        ("olga", OLGA, "member", "web"),
    ];
    let text: String = people
        .iter()
        .map(|(name, token, role, project)| {
            format!(
                "[[person]]\nname = \"{name}\"\ntoken_sha256 = \"{}\"\nrole = \"{role}\"\n\
                 projects = [\"{project}\"]\n",
                hash_token(token)
            )
        })
        .collect();
    std::fs::write(&file, text).unwrap();
    file.display().to_string()
}

async fn connect(app: &TestApp, token: &str) -> Client {
    Client::connect(&format!("ws://{}/?token={token}", app.addr())).await
}

/// `step`'s reply reporting 1000 prompt tokens (200 cached), 100 completion tokens and
/// `cost` US dollars.
fn costing(step: Step, cost: f64) -> Step {
    let Step::Reply(reply) = step else {
        panic!("not a reply: {step:?}");
    };
    Step::Reply(reply.with_usage(Usage {
        prompt_tokens: 1000,
        cached_tokens: 200,
        completion_tokens: 100,
        cost,
    }))
}

/// The rows of a report: `(key, calls, prompt_tokens, cost_micros)`.
fn rows(report: &Value) -> Vec<(Value, i64, i64, i64)> {
    report["rows"]
        .as_array()
        .unwrap_or_else(|| panic!("no rows in {report}"))
        .iter()
        .map(|row| {
            (
                row["key"].clone(),
                row["calls"].as_i64().unwrap(),
                row["prompt_tokens"].as_i64().unwrap(),
                row["cost_micros"].as_i64().unwrap(),
            )
        })
        .collect()
}

/// Waits until `client`'s report by purpose counts `calls` calls (a loop's session notes
/// are written after its reply).
async fn until_calls(client: &mut Client, calls: i64) -> Value {
    eventually(&format!("{calls} recorded calls"), async || {
        let report = client.ok("usage/report", json!({"by": "purpose"})).await;
        (report["total"]["calls"] == json!(calls)).then_some(report)
    })
    .await
}

async fn ask(client: &mut Client, prompt: &str) -> String {
    let result = client
        .ok("ask", json!({"model": "fake", "prompt": prompt}))
        .await;
    assert_eq!(result["status"], json!(200), "{result}");
    result["run"].as_str().unwrap().to_owned()
}

#[actix_web::test]
async fn a_turn_s_and_the_notes_calls_are_recorded_under_the_person_and_project_at_the_price() {
    let llm = FakeLlm::start([
        costing(learning("auth"), 0.0),
        costing(notes("Fix login", "auth", "JWT."), 0.0),
        costing(Step::reply("<summarize>Done.</summarize>"), 0.0),
        costing(notes("Fix login, done", "auth", "JWT."), 0.0),
    ]);
    let dir = tempfile::tempdir().unwrap();
    let users = team(dir.path());
    let mut env = vec![
        ("RUMMY_USERS_FILE", users.as_str()),
        // $2 per million uncached prompt tokens, $1 cached, $10 completion.
        ("RUMMY_PRICE_fake", "2,1,10"),
    ];
    env.extend_from_slice(&NOTES_ON);
    let app = TestApp::with_llm(&llm, &env).await;
    let mut mo = connect(&app, MO).await;
    mo.init("web", &app.project_root("web")).await;
    let run = ask(&mut mo, "Fix the login.").await;

    // Each call: 800 × 2 + 200 × 1 + 100 × 10 = 2800 micro-dollars.
    let by_purpose = until_calls(&mut mo, 4).await;
    assert_eq!(
        rows(&by_purpose),
        [
            (json!("session_notes"), 2, 2000, 5600),
            (json!("turn"), 2, 2000, 5600)
        ]
    );
    assert_eq!(by_purpose["total"]["cost_micros"], json!(11200));
    assert_eq!(by_purpose["total"]["cost"], json!(0.0112));
    let mut ada = connect(&app, ADA).await;
    ada.init("web", &app.project_root("web")).await;
    for (by, key) in [
        ("person", "mo"),
        ("project", "web"),
        ("model", "openai/fake"),
    ] {
        let report = ada.ok("usage/report", json!({"by": by})).await;
        assert_eq!(rows(&report), [(json!(key), 4, 4000, 11200)], "by {by}");
    }
    let telemetry = mo.ok("getRun", json!({"run": run})).await["context"]["telemetry"].clone();
    assert_eq!(telemetry["cost_micros"], json!(11200), "{telemetry}");
    assert_eq!(telemetry["cached_tokens"], json!(800));

    let metrics = awc::Client::new()
        .get(format!("http://{}/metrics", app.addr()))
        .insert_header(("Authorization", format!("Bearer {ADA}")))
        .send()
        .await
        .unwrap()
        .body()
        .await
        .unwrap();
    let metrics = String::from_utf8(metrics.to_vec()).unwrap();
    for sample in [
        "rummy_model_calls_total{model=\"openai/fake\",project=\"web\"} 4",
        "rummy_model_tokens_total{model=\"openai/fake\",project=\"web\",kind=\"prompt\"} 4000",
        "rummy_model_tokens_total{model=\"openai/fake\",project=\"web\",kind=\"cached\"} 800",
        "rummy_model_tokens_total{model=\"openai/fake\",project=\"web\",kind=\"completion\"} 400",
        "rummy_model_cost_micro_dollars_total{model=\"openai/fake\",project=\"web\"} 11200",
    ] {
        assert!(
            metrics.lines().any(|line| line == sample),
            "{sample} in\n{metrics}"
        );
    }
}

#[actix_web::test]
async fn a_new_price_costs_only_later_calls_and_a_reported_cost_wins() {
    let llm = FakeLlm::start([
        costing(Step::reply("<summarize>One.</summarize>"), 0.0),
        costing(Step::reply("<summarize>Two.</summarize>"), 0.0),
        costing(Step::reply("<summarize>Three.</summarize>"), 0.5),
    ]);
    let app = TestApp::with_llm(&llm, &[]).await;
    let (mut client, _) = app.client_in_project("shop").await;
    let price = |input: f64| json!({"alias": "fake", "actual": "openai/fake", "price": {"input": input, "output": 0}});
    client.ok("addModel", price(1.0)).await;
    let models = client.ok("getModels", json!({})).await;
    assert_eq!(
        models[0]["price"],
        json!({"input": 1.0, "cached_input": 1.0, "output": 0.0})
    );
    let first = ask(&mut client, "One.").await;
    client.ok("addModel", price(3.0)).await;
    ask(&mut client, "Two.").await;
    ask(&mut client, "Three.").await;

    let report = until_calls(&mut client, 3).await;
    assert_eq!(report["total"]["cost_micros"], json!(1000 + 3000 + 500_000));
    let telemetry =
        client.ok("getRun", json!({"run": first})).await["context"]["telemetry"].clone();
    assert_eq!(
        telemetry["cost_micros"],
        json!(1000),
        "the price then: {telemetry}"
    );
    let refused = client
        .err(
            "addModel",
            json!({"alias": "fake", "actual": "openai/fake", "price": {"input": -1, "output": 0}}),
        )
        .await;
    assert!(refused.1.contains("price: input"), "{refused:?}");
}

#[actix_web::test]
async fn a_person_sees_only_their_own_usage_and_an_admin_everyone_s() {
    let llm = FakeLlm::start([
        costing(Step::reply("<summarize>Mo's.</summarize>"), 0.25),
        costing(Step::reply("<summarize>Olga's.</summarize>"), 0.5),
    ]);
    let dir = tempfile::tempdir().unwrap();
    let users = team(dir.path());
    let app = TestApp::with_llm(&llm, &[("RUMMY_USERS_FILE", users.as_str())]).await;
    let root = app.project_root("web");
    let mut mo = connect(&app, MO).await;
    mo.init("web", &root).await;
    ask(&mut mo, "Mine.").await;
    let mut olga = connect(&app, OLGA).await;
    olga.init("web", &root).await;
    ask(&mut olga, "Mine too.").await;

    let own = mo.ok("usage/report", json!({"by": "person"})).await;
    assert_eq!(rows(&own), [(json!("mo"), 1, 1000, 250_000)]);
    let (_, refused) = mo
        .err("usage/report", json!({"by": "person", "person": "olga"}))
        .await;
    assert!(refused.contains("admin"), "{refused}");
    let mut ada = connect(&app, ADA).await;
    ada.init("web", &root).await;
    let everyone = ada.ok("usage/report", json!({"by": "person"})).await;
    assert_eq!(
        rows(&everyone),
        [
            (json!("olga"), 1, 1000, 500_000),
            (json!("mo"), 1, 1000, 250_000)
        ]
    );
    let olga_s = ada
        .ok(
            "usage/report",
            json!({"by": "day", "person": "olga", "from": "2000-01-01"}),
        )
        .await;
    assert_eq!(rows(&olga_s).len(), 1);
    assert_eq!(olga_s["total"]["cost_micros"], json!(500_000));
    let before = ada
        .ok("usage/report", json!({"by": "day", "to": "2000-01-01"}))
        .await;
    assert_eq!(rows(&before), []);
    let (_, bad) = ada
        .err("usage/report", json!({"by": "day", "from": "yesterday"}))
        .await;
    assert!(bad.contains("from"), "{bad}");
    let catalogue = mo.ok("discover", json!({})).await;
    assert!(catalogue["methods"].get("usage/report").is_some());
}

/// A completion answering `content` whose `usage` is exactly `usage` (left out when null).
fn answered_with(content: &str, usage: Value) -> Step {
    let mut body = json!({
        "id": "chatcmpl-odd",
        "object": "chat.completion",
        "model": "fake",
        "choices": [{"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": content}}],
    });
    if !usage.is_null() {
        body["usage"] = usage;
    }
    Step::Json(body)
}

/// The tokens the server estimates for `text`: one per 4 characters, rounded up.
fn estimated(text: &str) -> i64 {
    i64::try_from(text.chars().count().div_ceil(4)).unwrap()
}

/// The server's estimate of the prompt the fake received as its `index`th request.
fn estimated_prompt(llm: &FakeLlm, index: usize) -> i64 {
    llm.requests()[index]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|message| estimated(message["content"].as_str().unwrap()))
        .sum()
}

/// `(prompt, completion, total, cost_micros)` of a run, as `getRun` reports it.
async fn run_usage(client: &mut Client, run: &str) -> (i64, i64, i64, i64) {
    let telemetry = client.ok("getRun", json!({"run": run})).await["context"]["telemetry"].clone();
    let count = |field: &str| {
        telemetry[field]
            .as_i64()
            .unwrap_or_else(|| panic!("no {field} in {telemetry}"))
    };
    (
        count("prompt_tokens"),
        count("completion_tokens"),
        count("total_tokens"),
        count("cost_micros"),
    )
}

#[actix_web::test]
async fn an_absurd_report_is_recorded_once_within_the_model_s_bound_and_nothing_overflows() {
    let absurd = json!({"prompt_tokens": 1_000_000_000_000_000_000_u64, "completion_tokens": 10,
                        "total_tokens": u64::MAX, "cost": 1e12});
    let llm = FakeLlm::start([
        answered_with(
            "<known path=\"known://a\">A fact.</known><update>learning</update>",
            absurd.clone(),
        ),
        answered_with("<summarize>Done.</summarize>", absurd),
        costing(Step::reply("<summarize>Again.</summarize>"), 0.0),
    ]);
    let app = TestApp::with_llm(
        &llm,
        &[
            ("RUMMY_CAP_MONTH_TOKENS", "1000000"),
            ("RUMMY_CAP_MONTH_DOLLARS", "100000"),
        ],
    )
    .await;
    app.server.fix_clock("2026-06-01 10:00:00");
    let (mut client, _) = app.client_in_project("shop").await;
    let run = ask(&mut client, "Learn.").await;

    // The fake's context is 32768 tokens: a count is at most ten times that; a call costs
    // US$ 10 000 at most.
    let bound = 327_680;
    assert_eq!(
        run_usage(&mut client, &run).await,
        (2 * bound, 20, 2 * (bound + 10), 2 * 10_000_000_000),
        "both calls, each within the bound"
    );
    let report = client.ok("usage/report", json!({"by": "day"})).await;
    assert_eq!(report["total"]["calls"], json!(2), "{report}");
    assert_eq!(report["total"]["prompt_tokens"], json!(2 * bound));
    let caps = client.ok("usage/caps", json!({})).await;
    assert_eq!(caps["caps"][0]["spent"], json!(2 * (bound + 10)), "{caps}");
    ask(&mut client, "Again.").await;
    assert_eq!(
        llm.requests().len(),
        3,
        "the cap was not passed by a report"
    );
    let metrics = awc::Client::new()
        .get(format!("http://{}/metrics", app.addr()))
        .send()
        .await
        .unwrap()
        .body()
        .await
        .unwrap();
    let metrics = String::from_utf8(metrics.to_vec()).unwrap();
    let prompt = format!(
        "rummy_model_tokens_total{{model=\"openai/fake\",project=\"shop\",kind=\"prompt\"}} {}",
        2 * bound + 1000
    );
    assert!(
        metrics.lines().any(|line| line == prompt),
        "{prompt} in\n{metrics}"
    );
}

#[actix_web::test]
async fn usage_left_out_or_unreadable_is_estimated_from_the_texts_never_free_nor_negative() {
    let summary = "<summarize>Done without a count.</summarize>";
    let llm = FakeLlm::start([
        answered_with(summary, Value::Null),
        answered_with(
            summary,
            json!({"prompt_tokens": -5, "completion_tokens": "12", "total_tokens": -17}),
        ),
    ]);
    // $1 per million tokens of each kind: a micro-dollar a token.
    let app = TestApp::with_llm(&llm, &[("RUMMY_PRICE_fake", "1,1,1")]).await;
    let (mut client, _) = app.client_in_project("shop").await;
    for (index, prompt) in ["No usage.", "Odd usage."].into_iter().enumerate() {
        let run = ask(&mut client, prompt).await;
        let prompt_tokens = estimated_prompt(&llm, index);
        let completion_tokens = estimated(summary);
        assert!(prompt_tokens > 0 && completion_tokens > 0);
        let total = prompt_tokens + completion_tokens;
        assert_eq!(
            run_usage(&mut client, &run).await,
            (prompt_tokens, completion_tokens, total, total),
            "{prompt}"
        );
    }
    let report = client.ok("usage/report", json!({"by": "day"})).await;
    assert_eq!(report["total"]["calls"], json!(2), "{report}");
    assert_eq!(llm.requests().len(), 2, "estimating calls no model");
}

#[actix_web::test]
async fn a_report_past_the_bound_is_logged_at_warn_with_what_the_provider_said() {
    let llm = FakeLlm::start([answered_with(
        "<summarize>Done.</summarize>",
        json!({"prompt_tokens": 1_000_000_000_000_000_000_u64, "completion_tokens": 10}),
    )]);
    let home = tempfile::tempdir().unwrap();
    let root = project_root(home.path());
    let mut server = LoggedServer::start(home, &llm_env(&llm)).await;
    let mut client = Client::connect(&server.url()).await;
    client.init("shop", &root).await;
    ask(&mut client, "Count.").await;
    let line = server
        .logged(&["WARN", "recorded at the bound", "run.id="])
        .await;
    for part in [
        "reported.prompt_tokens=1000000000000000000",
        "recorded.prompt_tokens=327680",
    ] {
        assert!(line.contains(part), "{part} in {line}");
    }
}
