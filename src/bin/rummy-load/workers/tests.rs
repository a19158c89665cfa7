//! The workers against a real rummy server started in-process on a free port, and the
//! built-in fake LLM behind it.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::Path;
use std::time::{Duration, Instant};

use rummy::app::{start, RunningServer};
use rummy::config::Settings;

use super::*;
use crate::fake_llm;
use crate::llm;
use crate::mix::CYCLE;
use crate::stats::Outcome;

const WAIT: Duration = Duration::from_secs(30);

async fn server(home: &Path, extra: &[(&str, &str)]) -> RunningServer {
    let mut env: HashMap<String, String> = HashMap::new();
    env.insert("RUMMY_HOME".into(), home.display().to_string());
    env.insert("PORT".into(), "0".into());
    env.insert("RUMMY_LOG".into(), "warn".into());
    for (key, value) in extra {
        env.insert((*key).into(), (*value).into());
    }
    let config = Path::new(env!("CARGO_MANIFEST_DIR")).join("config");
    start(Settings::load(&env, &config).unwrap()).await.unwrap()
}

fn plan(server: &RunningServer, requests: u64) -> Plan {
    Plan {
        urls: vec![format!("ws://{}/", server.addr)],
        token: None,
        deadline: Instant::now() + WAIT,
        max_requests: Some(requests),
        request_timeout: WAIT,
        ask_timeout: WAIT,
        projects: 2,
        keys: 3,
        model: "fake".into(),
        loops_per_run: 1,
    }
}

#[actix_web::test]
async fn a_load_connection_runs_the_whole_mix_without_errors() {
    let home = tempfile::tempdir().unwrap();
    let server = server(home.path(), &[("RUMMY_MODEL_fake", "openai/fake")]).await;
    let rounds = 3;
    let tally = load_connection(plan(&server, (CYCLE.len() * rounds) as u64), 4).await;

    assert_eq!(tally.failures(), 0, "{:?}", tally.errors_by_code());
    assert_eq!(tally.connections_lost, 0);
    assert!(tally.connect_failures.is_empty());
    for operation in CYCLE {
        let expected = CYCLE.iter().filter(|other| **other == operation).count() * rounds;
        let measured = &tally.operations[operation.label()];
        assert_eq!(
            measured.outcomes[&Outcome::Ok],
            expected as u64,
            "{}",
            operation.label()
        );
        assert_eq!(measured.latencies.count(), expected);
    }
    assert_eq!(tally.requests(), (CYCLE.len() * rounds + 2) as u64);
    server.stop().await;
}

#[actix_web::test]
async fn askers_run_loops_on_the_fake_llm_registered_from_its_listing() {
    let home = tempfile::tempdir().unwrap();
    let fake = fake_llm::start(
        SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), 0),
        32_768,
        1,
    )
    .unwrap();
    let llm_url = format!("{}/v1", fake.base_url());
    // No session notes: each loop is then one completion (their sidecar calls are more).
    let server = server(
        home.path(),
        &[
            ("OPENAI_BASE_URL", llm_url.as_str()),
            ("RUMMY_MEMORY_SESSION_TOKENS", "0"),
        ],
    )
    .await;
    let mut plan = plan(&server, 3);
    plan.model = "loadfake".into();
    plan.loops_per_run = 2;

    let model = llm::served_model(&llm_url, WAIT).await.unwrap();
    assert_eq!(model.context, 32_768);
    let mut client = RpcClient::connect(plan.url(0), None, WAIT).await.unwrap();
    llm::register(&mut client, "loadfake", &model, WAIT)
        .await
        .unwrap();
    client.close(CLOSE_WAIT).await;
    let before = llm::completions_served(&llm_url, WAIT).await.unwrap();

    let tallies = futures_util::future::join(asker(plan.clone(), 0), asker(plan.clone(), 1)).await;
    let mut tally = tallies.0;
    tally.merge(tallies.1);

    assert_eq!(tally.failures(), 0, "{:?}", tally.errors_by_code());
    assert_eq!(
        tally.loop_statuses.get("200"),
        Some(&6),
        "{:?}",
        tally.loop_statuses
    );
    assert!(tally.notifications > 0);
    let after = llm::completions_served(&llm_url, WAIT).await.unwrap();
    assert_eq!(after - before, 6);
    let mut client = RpcClient::connect(plan.url(0), None, WAIT).await.unwrap();
    for asker in 0..2 {
        let project = format!("rummy-load-ask-{asker}");
        let root = format!("/tmp/rummy-load/{project}");
        let params = json!({"name": project, "projectRoot": root});
        client.call("init", params, WAIT).await.unwrap();
        let (Answer::Result(runs), _) = client.call("getRuns", json!({}), WAIT).await.unwrap()
        else {
            panic!("getRuns failed");
        };
        assert_eq!(
            runs.as_array().map(Vec::len),
            Some(2),
            "three loops, two to a run: {runs}"
        );
    }
    client.close(CLOSE_WAIT).await;
    server.stop().await;
    fake.stop().await;
}

#[actix_web::test]
async fn a_wrong_token_is_a_connection_failure_and_the_right_one_works() {
    let home = tempfile::tempdir().unwrap();
    let server = server(
        home.path(),
        &[
            ("RUMMY_AUTH_TOKEN", "s3cret"),
            ("RUMMY_MODEL_fake", "openai/fake"),
        ],
    )
    .await;
    let mut refused = plan(&server, 1);
    refused.token = Some("wrong".into());
    let tally = load_connection(refused, 0).await;
    assert_eq!(tally.connect_failures.get("HTTP 401"), Some(&1));
    assert_eq!(tally.requests(), 0);

    let mut accepted = plan(&server, 1);
    accepted.token = Some("s3cret".into());
    let tally = load_connection(accepted, 0).await;
    assert!(tally.connect_failures.is_empty());
    assert_eq!(tally.failures(), 0);
    assert_eq!(tally.requests(), 3);
    server.stop().await;
}

#[actix_web::test]
async fn an_unknown_model_is_counted_by_its_code() {
    let home = tempfile::tempdir().unwrap();
    let server = server(home.path(), &[]).await;
    let tally = load_connection(plan(&server, 5), 0).await;
    let errors = tally.errors_by_code();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert_eq!(tally.operations["startRun"].failures(), 1);
    assert!(!tally.operations.contains_key("ping"));
    server.stop().await;
}

#[actix_web::test]
async fn workers_take_the_urls_in_turn() {
    let home = tempfile::tempdir().unwrap();
    let server = server(home.path(), &[("RUMMY_MODEL_fake", "openai/fake")]).await;
    let mut plan = plan(&server, 1);
    // A port that was free a moment ago: nothing listens there.
    let nowhere = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("ws://{}/", listener.local_addr().unwrap())
    };
    plan.urls.insert(0, nowhere);

    let on_nowhere = load_connection(plan.clone(), 2).await;
    assert_eq!(on_nowhere.connect_failures.values().sum::<u64>(), 1);
    let on_server = load_connection(plan, 3).await;
    assert!(on_server.connect_failures.is_empty());
    assert_eq!(on_server.failures(), 0, "{:?}", on_server.errors_by_code());
    assert_eq!(on_server.requests(), 3, "init, startRun and one of the mix");
    server.stop().await;
}
