//! Many connections at once: concurrent run creation, notification scoping by project, the
//! token gate on a non-loopback bind, and a provider's back-off shared by every run.

use std::collections::{HashMap, HashSet};

use futures_util::future::join_all;
use regex::Regex;
use rummy::testing::ProgressStatus;
use serde_json::{json, Value};

use crate::support::{try_settings, Client, TestApp};

#[actix_web::test]
async fn fifty_clients_starting_runs_at_once_get_aliases_unique_in_their_project() {
    let app = TestApp::start_with(&[("RUMMY_MODEL_grok", "openai/grok")]).await;
    let roots: Vec<_> = (0..5)
        .map(|index| app.project_root(&format!("crowd_{index}")))
        .collect();
    let url = format!("ws://{}/", app.addr());
    let mut clients = join_all((0..50).map(|_| Client::connect(&url))).await;
    let sessions = clients.iter_mut().enumerate().map(|(index, client)| {
        let root = roots[index % 5].clone();
        async move {
            client.init(&format!("crowd_{}", index % 5), &root).await;
            (index % 5, client.start_run("grok").await)
        }
    });
    let started: Vec<(usize, String)> = join_all(sessions).await;
    let pattern = Regex::new(r"^grok_\d{13}(_\d+)?$").unwrap();
    for (_, alias) in &started {
        assert!(pattern.is_match(alias), "{alias}");
    }
    for (project, client) in clients.iter_mut().take(5).enumerate() {
        let aliases: HashSet<&String> = started
            .iter()
            .filter(|(of, _)| *of == project)
            .map(|(_, alias)| alias)
            .collect();
        assert_eq!(aliases.len(), 10, "ten unique aliases in crowd_{project}");
        let runs = client.ok("getRuns", json!({})).await;
        let listed: HashSet<String> = runs
            .as_array()
            .unwrap()
            .iter()
            .map(|run| run["run"].as_str().unwrap().to_string())
            .collect();
        assert_eq!(listed.len(), 10, "ten clients per project");
        assert!(aliases.iter().all(|alias| listed.contains(*alias)));
    }
}

/// The next `run/progress` params on `client`, which must have had no other notification.
async fn only_progress(client: &mut Client) -> Value {
    let notification = client.notification("run/progress").await;
    assert!(
        client.pending_notifications().is_empty(),
        "{:?}",
        client.pending_notifications()
    );
    assert!(notification.get("id").is_none(), "{notification}");
    notification["params"].clone()
}

/// A server whose model `fake` a run may be created with (never called).
async fn app_with_a_model() -> TestApp {
    TestApp::start_with(&[("RUMMY_MODEL_fake", "openai/fake")]).await
}

#[actix_web::test]
async fn notifications_reach_only_the_connections_of_their_project() {
    let app = app_with_a_model().await;
    let mut watcher = app.client().await;
    let (mut alpha, root_alpha) = app.client_in_project("alpha").await;
    let mut alpha_too = app.client().await;
    let alpha_id = alpha_too.init("alpha", &root_alpha).await;
    let mut beta = app.client().await;
    let beta_id = beta.init("beta", &app.project_root("beta")).await;
    assert_ne!(alpha_id, beta_id);
    let run_a = alpha_too.start_run("fake").await;
    let run_b = beta.start_run("fake").await;

    app.server
        .publish_progress(alpha_id, &run_a, 1, ProgressStatus::Thinking)
        .await;
    let thinking = only_progress(&mut alpha).await;
    let first = thinking["seq"].as_u64().unwrap();
    assert_eq!(
        thinking,
        json!({"run": run_a, "turn": 1, "status": "thinking", "seq": first})
    );
    assert_eq!(only_progress(&mut alpha_too).await, thinking);
    app.server
        .publish_progress(alpha_id, &run_a, 1, ProgressStatus::Processing)
        .await;
    let processing = json!({"run": run_a, "turn": 1, "status": "processing", "seq": first + 1});
    assert_eq!(only_progress(&mut alpha).await, processing);
    assert_eq!(only_progress(&mut alpha_too).await, processing);

    app.server
        .publish_progress(beta_id, &run_b, 4, ProgressStatus::Thinking)
        .await;
    let beta_thinking = only_progress(&mut beta).await;
    let beta_first = beta_thinking["seq"].as_u64().unwrap();
    assert_eq!(
        beta_thinking,
        json!({"run": run_b, "turn": 4, "status": "thinking", "seq": beta_first}),
        "beta saw nothing of alpha's run"
    );

    watcher.init("beta", &app.project_root("beta")).await;
    app.server
        .publish_progress(beta_id, &run_b, 4, ProgressStatus::Processing)
        .await;
    let next = json!({"run": run_b, "turn": 4, "status": "processing", "seq": beta_first + 1});
    assert_eq!(
        only_progress(&mut watcher).await,
        next,
        "nothing was delivered before init"
    );
    assert_eq!(only_progress(&mut beta).await, next);
}

#[actix_web::test]
async fn re_init_moves_a_connection_to_the_new_project() {
    let app = app_with_a_model().await;
    let (mut alpha, root_alpha) = app.client_in_project("alpha").await;
    let mut mover = app.client().await;
    let alpha_id = mover.init("alpha", &root_alpha).await;
    let run_a = mover.start_run("fake").await;
    let beta_id = mover.init("beta", &app.project_root("beta")).await;
    let run_b = mover.start_run("fake").await;

    app.server
        .publish_progress(alpha_id, &run_a, 1, ProgressStatus::Thinking)
        .await;
    assert_eq!(only_progress(&mut alpha).await["run"], json!(run_a));
    app.server
        .publish_progress(beta_id, &run_b, 1, ProgressStatus::Thinking)
        .await;
    let heard = only_progress(&mut mover).await;
    assert_eq!(
        (&heard["run"], &heard["status"]),
        (&json!(run_b), &json!("thinking")),
        "the mover no longer hears alpha: {heard}"
    );
    let runs = mover.ok("getRuns", json!({})).await;
    assert_eq!(
        runs.as_array().map(Vec::len),
        Some(1),
        "getRuns follows the new binding"
    );
    assert_eq!(runs[0]["run"], json!(run_b));
}

#[actix_web::test]
async fn a_non_loopback_bind_requires_a_token_and_enforces_it() {
    let home = tempfile::tempdir().unwrap();
    let env: HashMap<String, String> = [
        ("RUMMY_HOME", home.path().display().to_string()),
        ("PORT", "0".to_string()),
        ("RUMMY_HOST", "0.0.0.0".to_string()),
    ]
    .into_iter()
    .map(|(key, value)| (key.to_string(), value))
    .collect();
    let refused = try_settings(&env).map(|_| ()).unwrap_err().to_string();
    assert!(refused.contains("RUMMY_AUTH_TOKEN"), "{refused}");

    let projects = tempfile::tempdir().unwrap();
    let app = TestApp::start_with(&[
        ("RUMMY_HOST", "0.0.0.0"),
        ("RUMMY_AUTH_TOKEN", "s3cret"),
        ("RUMMY_PROJECTS_DIR", projects.path().to_str().unwrap()),
    ])
    .await;
    assert!(app.addr().ip().is_unspecified(), "{}", app.addr());
    let url = format!("ws://127.0.0.1:{}/", app.addr().port());
    for attempt in [
        awc::Client::new().ws(url.as_str()),
        awc::Client::new().ws(format!("{url}?token=wrong")),
        awc::Client::new().ws(url.as_str()).bearer_auth("wrong"),
    ] {
        match attempt.connect().await {
            Err(awc::error::WsClientError::InvalidResponseStatus(status)) => {
                assert_eq!(status.as_u16(), 401)
            }
            other => panic!("expected 401, got {:?}", other.map(|_| ())),
        }
    }
    let mut client = Client::connect(&format!("{url}?token=s3cret")).await;
    assert_eq!(client.ok("ping", json!({})).await, json!({}));
}

/// The user message of a request the model received.
fn prompt_of(request: &rummy::testing::fake_llm::Recorded) -> String {
    crate::support::user_message(&request.body)
}

#[actix_web::test]
async fn a_rate_limit_one_run_meets_holds_the_other_run_s_call_until_its_retry_after() {
    use rummy::testing::fake_llm::{FakeLlm, Step};
    let llm = FakeLlm::start([Step::error_retry_after(429, "1")]);
    let limited = [
        ("RUMMY_PROVIDER_CONCURRENCY", "1"),
        ("RUMMY_LLM_ATTEMPTS", "2"),
    ];
    let app = TestApp::with_llm(&llm, &limited).await;
    let (mut first, _) = app.client_in_project("limited").await;
    let (mut second, _) = app.client_in_project("limited").await;
    let asked = first
        .send("ask", json!({"model": "fake", "prompt": "first run"}))
        .await;
    llm.wait_for_requests(1).await;
    // The first call is in flight or refused: either way the other run's call waits.
    let other = second
        .ok("ask", json!({"model": "fake", "prompt": "second run"}))
        .await;
    assert_eq!(other["status"], json!(200), "{other}");
    let answer = first.reply(&asked).await;
    assert_eq!(answer["result"]["status"], json!(200), "{answer}");

    let seen = llm.recorded();
    assert_eq!(
        seen.len(),
        3,
        "the refused call, its retry and the other run's call"
    );
    assert!(prompt_of(&seen[0]).contains("first run"));
    assert!(seen[1..]
        .iter()
        .any(|request| prompt_of(request).contains("second run")));
    for later in &seen[1..] {
        assert!(
            later.at >= seen[0].at + std::time::Duration::from_secs(1),
            "a call reached the provider before the Retry-After passed"
        );
    }
}
