//! Rotating the server key of secrets at rest (docs/src/secrets.md, "Rotating the key"),
//! end to end through the protocol: a person's provider key (`keys/set`) and host credential
//! (`hostCredentials/set`) stored under one key still pay for their runs and still reach
//! their host through the egress proxy after a restart with a new key first (which re-seals
//! them), and after another with the old key dropped; a server holding no key that sealed
//! them refuses to start, naming the secret and the key; and a value sealed under a key the
//! running server does not hold (another instance's, on a shared store) stops the run or the
//! request with that message, never falling back to the server's key or sending the request
//! without the credential.

use diesel::RunQueryDsl;
use rummy::testing::fake_llm::FakeLlm;
use serde_json::json;

use crate::egress::{person, proposing, run_each, team, Upstream};
use crate::support::{settings, Client, TestApp};

const OLD: &str = "old:00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";
const NEW: &str = "new:ffeeddccbbaa99887766554433221100ffeeddccbbaa99887766554433221100";
const OTHER: &str = "other:0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f0f";
const MO_KEY: &str = "sk-mo-rotated-3c9e1a";
const SERVER_KEY: &str = "sk-server-b7b7b7";
const MO_HOST_TOKEN: &str = "tok-mo-rotated-8d2f4b";

/// The `key_id` of every stored secret, sorted.
async fn sealed_under(app: &TestApp) -> Vec<String> {
    #[derive(diesel::QueryableByName)]
    struct Row {
        #[diesel(sql_type = diesel::sql_types::Text)]
        key_id: String,
    }
    app.read(|conn| {
        crate::stored::rows::<Row>(conn, "SELECT key_id FROM secrets ORDER BY key_id")
            .into_iter()
            .map(|row| row.key_id)
            .collect()
    })
    .await
}

/// Stops `app` and starts it again on its home with `keys` as `RUMMY_SECRETS_KEY`.
async fn restart_with(mut app: TestApp, keys: &str) -> TestApp {
    app.env.insert("RUMMY_SECRETS_KEY".into(), keys.into());
    app.restart().await
}

/// mo's run of one `curl` through the proxy: the authorization its model calls carried,
/// the command's output, and the head the upstream received (if one came).
async fn mos_run(app: &TestApp, llm: &FakeLlm, upstream: &Upstream) -> (Vec<String>, String) {
    let (calls, heads) = (llm.recorded().len(), upstream.heads().len());
    let mut mo = person(app, "mo").await;
    let (status, body) = run_each(app, &mut mo, 1).await.remove(0);
    assert_eq!(status, 200, "{body}");
    let carried = llm.recorded()[calls..]
        .iter()
        .map(|request| request.header("authorization").unwrap_or("").to_owned())
        .collect();
    assert!(upstream.heads().len() <= heads + 1);
    (carried, body)
}

/// Asserts mo's run was paid with mo's key and the upstream got mo's credential.
async fn mos_secrets_work(app: &TestApp, llm: &FakeLlm, upstream: &Upstream, when: &str) {
    let (carried, body) = mos_run(app, llm, upstream).await;
    assert_eq!(carried, vec![format!("Bearer {MO_KEY}"); 2], "{when}");
    assert!(body.starts_with("upstream-ok"), "{when}: {body}");
    let head = upstream.heads().pop().unwrap().to_ascii_lowercase();
    assert!(
        head.contains(&format!("\r\nauthorization: bearer {MO_HOST_TOKEN}\r\n")),
        "{when}: {head}"
    );
}

#[actix_web::test]
async fn every_stored_secret_works_through_a_rotation_and_after_the_old_key_is_dropped() {
    let upstream = Upstream::start().await;
    let up = upstream.port;
    let command = format!("curl -sS http://localhost:{up}/rotated");
    let llm = FakeLlm::start(proposing(&vec![command; 4]));
    let dir = tempfile::tempdir().unwrap();
    let users = team(dir.path());
    let hosts = format!("localhost:{up}");
    let mut env = crate::support::llm_env(&llm);
    env.extend_from_slice(&[
        ("RUMMY_USERS_FILE", users.to_str().unwrap()),
        ("OPENAI_API_KEY", SERVER_KEY),
        ("RUMMY_SECRETS_KEY", OLD),
        ("RUMMY_RUN_COMMANDS", "server"),
        (
            "RUMMY_SANDBOX_LAUNCHER",
            env!("CARGO_BIN_EXE_rummy-sandbox"),
        ),
        ("RUMMY_SANDBOX_MAX_WALL_SECS", "20"),
        ("RUMMY_SANDBOX_HOSTS", hosts.as_str()),
        ("RUMMY_SANDBOX_ALLOW_NETS", "127.0.0.0/8, ::1"),
    ]);
    let app = TestApp::start_with(&env).await;
    let mut ada = person(&app, "ada").await;
    ada.ok("project/config", json!({"sandbox": {"hosts": [hosts]}}))
        .await;
    let mut mo = person(&app, "mo").await;
    mo.ok("keys/set", json!({"provider": "openai", "key": MO_KEY}))
        .await;
    mo.ok(
        "hostCredentials/set",
        json!({"host": "localhost", "header": "Authorization",
               "value": format!("Bearer {MO_HOST_TOKEN}")}),
    )
    .await;
    assert_eq!(sealed_under(&app).await, ["old", "old"]);
    mos_secrets_work(&app, &llm, &upstream, "under the first key").await;

    let app = restart_with(app, &format!("{NEW}\n{OLD}")).await;
    assert_eq!(
        sealed_under(&app).await,
        ["new", "new"],
        "the start re-sealed every secret under the new key"
    );
    mos_secrets_work(&app, &llm, &upstream, "with the new key first").await;

    let app = restart_with(app, NEW).await;
    mos_secrets_work(&app, &llm, &upstream, "with the old key dropped").await;

    let TestApp {
        server,
        home,
        mut env,
        database,
    } = app;
    server.stop().await;
    env.insert("RUMMY_SECRETS_KEY".into(), OTHER.into());
    let refused = rummy::app::start(settings(&env)).await;
    let message = format!(
        "{:#}",
        refused.err().expect("a start without the key fails")
    );
    for says in [
        "sealed under server key 'new'",
        "which this server does not hold",
        "of mo",
    ] {
        assert!(message.contains(says), "{says}: {message}");
    }
    assert!(!message.contains(MO_KEY) && !message.contains(MO_HOST_TOKEN));
    env.insert("RUMMY_SECRETS_KEY".into(), NEW.into());
    let server = rummy::app::start(settings(&env)).await.unwrap();
    let app = TestApp {
        server,
        home,
        env,
        database,
    };
    mos_secrets_work(&app, &llm, &upstream, "with the key put back").await;
}

/// Marks mo's secrets of `kind` as sealed under a key this server does not hold, as another
/// instance on a shared store that rotated first would leave them.
async fn sealed_elsewhere(app: &TestApp, kind: &str) {
    let query = format!(
        "UPDATE secrets SET key_id = 'elsewhere' WHERE person = 'mo' AND kind = {}",
        crate::stored::literal(kind)
    );
    app.read(move |conn| diesel::sql_query(query).execute(conn).unwrap())
        .await;
}

#[actix_web::test]
async fn a_secret_under_a_key_the_server_lacks_stops_the_request_and_never_falls_back() {
    let upstream = Upstream::start().await;
    let up = upstream.port;
    let command = format!("curl -sS http://localhost:{up}/elsewhere");
    let llm = FakeLlm::start(proposing(&[command]));
    let dir = tempfile::tempdir().unwrap();
    let users = team(dir.path());
    let hosts = format!("localhost:{up}");
    let mut env = crate::support::llm_env(&llm);
    env.extend_from_slice(&[
        ("RUMMY_USERS_FILE", users.to_str().unwrap()),
        ("OPENAI_API_KEY", SERVER_KEY),
        ("RUMMY_SECRETS_KEY", NEW),
        ("RUMMY_RUN_COMMANDS", "server"),
        (
            "RUMMY_SANDBOX_LAUNCHER",
            env!("CARGO_BIN_EXE_rummy-sandbox"),
        ),
        ("RUMMY_SANDBOX_MAX_WALL_SECS", "20"),
        ("RUMMY_SANDBOX_HOSTS", hosts.as_str()),
        ("RUMMY_SANDBOX_ALLOW_NETS", "127.0.0.0/8, ::1"),
    ]);
    let app = TestApp::start_with(&env).await;
    let mut ada = person(&app, "ada").await;
    ada.ok("project/config", json!({"sandbox": {"hosts": [hosts]}}))
        .await;
    let mut mo: Client = person(&app, "mo").await;
    mo.ok("keys/set", json!({"provider": "openai", "key": MO_KEY}))
        .await;
    mo.ok(
        "hostCredentials/set",
        json!({"host": "localhost", "header": "Authorization",
               "value": format!("Bearer {MO_HOST_TOKEN}")}),
    )
    .await;

    sealed_elsewhere(&app, "host").await;
    let (carried, body) = mos_run(&app, &llm, &upstream).await;
    assert_eq!(carried, vec![format!("Bearer {MO_KEY}"); 2]);
    for says in [
        "your credential for localhost cannot be used",
        "server key 'elsewhere'",
    ] {
        assert!(body.contains(says), "{says}: {body}");
    }
    assert!(
        upstream.heads().is_empty(),
        "the request was not sent without the credential: {:?}",
        upstream.heads()
    );

    sealed_elsewhere(&app, "provider").await;
    let calls = llm.recorded().len();
    let reply = mo
        .ok("ask", json!({"model": "fake", "prompt": "Work on it."}))
        .await;
    assert_eq!(reply["status"], json!(500), "{reply}");
    assert_eq!(
        llm.recorded().len(),
        calls,
        "no call went out, on the server's key or any"
    );
    let run = reply["run"].as_str().unwrap().to_owned();
    let (_, text) = app
        .read(move |conn| crate::stored::entry_named(conn, &run, "error://1"))
        .await
        .expect("the run's error entry");
    for says in [
        "mo's own openai key cannot be used",
        "server key 'elsewhere'",
    ] {
        assert!(text.contains(says), "{says}: {text}");
    }
}
