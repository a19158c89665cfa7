//! A first run without an editor, as an admin meets it from the console: a model added with
//! its provider, base URL, key and price (the key in effect at once, kept across a restart,
//! and never answered back, audited or logged), tested with one call; a project made from a
//! folder under the projects directories (or, on loopback without them, any existing
//! folder) by `init`'s rules; and the start-up log saying where the console is and how to
//! add a model when there is none. Only admins may do any of it.

use std::path::Path;
use std::process::Stdio;

use rummy::testing::fake_llm::{FakeLlm, Step};
use serde_json::{json, Value};

use crate::access::users;
use crate::process::{free_port, wait_until_healthy};
use crate::support::{eventually, Client, TestApp};

const KEY: &str = "sk-first-run-0123456789";

/// `addModel` of `local`: the scripted model at `url` as an OpenAI-compatible server, with
/// [`KEY`] and a price.
fn local_model(url: &str) -> Value {
    json!({
        "alias": "local", "provider": "openai", "actual": "qwen3-8b", "baseUrl": url,
        "apiKey": KEY, "contextLength": 8192, "price": {"input": 1.5, "output": 6},
    })
}

#[actix_web::test]
async fn an_admin_adds_a_model_with_its_key_and_price_tests_it_and_the_key_stays_secret() {
    let llm = FakeLlm::start([
        Step::reply("Ready when you are."),
        Step::reply("Still here."),
    ]);
    let app = TestApp::start_with(&[("RUMMY_RPC_LOG", "full")]).await;
    let mut admin = app.client().await;
    admin.ok("addModel", local_model(llm.base_url())).await;
    let models = admin.ok("getModels", json!({})).await;
    assert_eq!(
        models,
        json!([{
            "alias": "local", "actual": "openai/qwen3-8b", "provider": "openai", "keySet": true,
            "context_length": 8192, "price": {"input": 1.5, "cached_input": 1.5, "output": 6.0},
        }])
    );
    let tested = admin.ok("model/test", json!({"alias": "local"})).await;
    assert_eq!(tested["ok"], json!(true), "{tested}");
    assert_eq!(tested["reply"], json!("Ready when you are."));
    assert!(tested["promptTokens"].as_u64().unwrap() > 0, "{tested}");
    assert!(tested["latencyMs"].is_u64(), "{tested}");
    let calls = llm.recorded();
    assert_eq!(calls.len(), 1, "one call");
    assert_eq!(calls[0].path, "/v1/chat/completions");
    assert_eq!(calls[0].body["model"], json!("qwen3-8b"));
    let bearer = format!("Bearer {KEY}");
    assert_eq!(calls[0].header("authorization"), Some(bearer.as_str()));

    let rows = eventually("the addModel call to be audited", async || {
        let rows = crate::audit::committed(&app).await;
        rows.iter()
            .any(|row| row.method == "addModel")
            .then_some(rows)
    })
    .await;
    let added = rows.iter().find(|row| row.method == "addModel").unwrap();
    assert_eq!(added.params, None, "a call carrying a key keeps no text");
    assert!(!format!("{rows:?}").contains(KEY));

    let mut admin = {
        let app = app.restart().await;
        let client = app.client().await;
        (app, client)
    };
    let tested = admin.1.ok("model/test", json!({"alias": "local"})).await;
    assert_eq!(tested["reply"], json!("Still here."), "the key is kept");
    assert_eq!(
        llm.recorded()[1].header("authorization"),
        Some(bearer.as_str())
    );
    assert!(!admin
        .1
        .ok("getModels", json!({}))
        .await
        .to_string()
        .contains(KEY));
}

#[actix_web::test]
async fn bad_model_input_is_refused_in_words_and_a_failing_provider_is_said() {
    let echo = format!("Incorrect API key provided: {KEY}.");
    let llm = FakeLlm::start([
        Step::error(401),
        Step::Json(json!({"error": {"code": 400, "message": echo}})),
    ]);
    let app = TestApp::start().await;
    let mut admin = app.client().await;
    let refusals = [
        (
            json!({"provider": "anthropic"}),
            "unknown provider 'anthropic'",
        ),
        (
            json!({"baseUrl": "ftp://models.example.com"}),
            "baseUrl: not an http or https URL",
        ),
        (json!({"baseUrl": "models here"}), "baseUrl: not a URL"),
        (
            json!({"baseUrl": "http://me:pw@models.example.com"}),
            "no user or password",
        ),
        (
            json!({"provider": null}),
            "baseUrl and apiKey are a provider's",
        ),
        (
            json!({"provider": "ollama", "baseUrl": null}),
            "Ollama takes no API key",
        ),
    ];
    for (change, words) in refusals {
        let mut params = local_model(llm.base_url());
        for (name, value) in change.as_object().unwrap() {
            params[name] = value.clone();
        }
        let (code, message) = admin.err("addModel", params.clone()).await;
        assert_eq!(code, -32602, "{params}: {message}");
        assert!(message.contains(words), "{params}: {message}");
    }
    assert_eq!(admin.ok("getModels", json!({})).await, json!([]));
    let (code, message) = admin.err("model/test", json!({"alias": "ghost"})).await;
    assert_eq!(
        (code, message.as_str()),
        (-32602, "no model 'ghost' in the catalogue")
    );

    admin.ok("addModel", local_model(llm.base_url())).await;
    let tested = admin.ok("model/test", json!({"alias": "local"})).await;
    assert_eq!(tested["ok"], json!(false), "{tested}");
    let error = tested["error"].as_str().unwrap();
    assert!(error.contains("Authentication Error: 401"), "{error}");
    assert!(!error.contains(KEY), "{error}");
    let echoed = admin.ok("model/test", json!({"alias": "local"})).await;
    let error = echoed["error"].as_str().unwrap();
    assert!(
        error.contains("Incorrect API key provided: <the key>."),
        "{error}"
    );
    assert!(!error.contains(KEY), "the provider echoed the key: {error}");

    admin
        .ok(
            "addModel",
            json!({"alias": "grok", "provider": "xai", "actual": "grok-4"}),
        )
        .await;
    let models = admin.ok("getModels", json!({})).await;
    assert_eq!(models[0]["actual"], json!("x.ai/grok-4"));
    assert_eq!(models[0]["keySet"], json!(false), "no xAI key: {models}");
}

/// A projects directory with folders `api` and `web` (`web` holding `web/docs`), a hidden
/// one and a file.
fn projects_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for folder in ["api", "web/docs", ".cache"] {
        std::fs::create_dir_all(dir.path().join(folder)).unwrap();
    }
    std::fs::write(dir.path().join("notes.txt"), "not a folder").unwrap();
    dir
}

fn folder_paths(offered: &Value) -> Vec<String> {
    offered["folders"]
        .as_array()
        .unwrap()
        .iter()
        .map(|folder| folder["path"].as_str().unwrap().to_owned())
        .collect()
}

#[actix_web::test]
async fn a_project_is_made_from_a_free_folder_under_the_projects_dir() {
    let dir = projects_dir();
    let base = std::fs::canonicalize(dir.path()).unwrap();
    let dirs = base.display().to_string();
    let app = TestApp::start_with(&[("RUMMY_PROJECTS_DIR", dirs.as_str())]).await;
    let mut admin = app.client().await;
    let offered = admin.ok("projects/folders", json!({})).await;
    assert_eq!(offered["anyFolder"], json!(false));
    assert_eq!(offered["projectsDirs"], json!([dirs]));
    let (api, web) = (base.join("api"), base.join("web"));
    assert_eq!(
        folder_paths(&offered),
        [api.display().to_string(), web.display().to_string()]
    );
    assert_eq!(offered["folders"][1]["name"], json!("web"));

    let created = admin
        .ok("projects/create", json!({"name": "web", "path": web}))
        .await;
    assert_eq!(
        created,
        json!({"name": "web", "projectRoot": web.display().to_string()})
    );
    let offered = admin.ok("projects/folders", json!({})).await;
    assert_eq!(folder_paths(&offered), [api.display().to_string()]);
    let projects = admin.ok("getProjects", json!({})).await;
    assert_eq!(projects[0]["name"], json!("web"));

    let outside = tempfile::tempdir().unwrap();
    let refusals = [
        (
            json!({"name": "docs", "path": web.join("docs")}),
            -32005,
            "overlaps the root of another project",
        ),
        (
            json!({"name": "out", "path": outside.path()}),
            -32005,
            "is not inside a directory this server keeps projects in",
        ),
        (
            json!({"name": "new", "path": base.join("new")}),
            -32602,
            "is not an existing directory",
        ),
        (
            json!({"name": "rel", "path": "api"}),
            -32602,
            "path must be an absolute path",
        ),
        (json!({"name": "web", "path": api}), -32005, "web"),
    ];
    for (params, code, words) in refusals {
        let (refused, message) = admin.err("projects/create", params.clone()).await;
        assert_eq!(refused, code, "{params}: {message}");
        assert!(message.contains(words), "{params}: {message}");
    }
    let projects = admin.ok("getProjects", json!({})).await;
    assert_eq!(projects.as_array().unwrap().len(), 1, "{projects}");
    admin.init("web", &web).await;
}

#[actix_web::test]
async fn on_loopback_without_projects_dirs_any_existing_folder_may_be_named() {
    let app = TestApp::start().await;
    let mut admin = app.client().await;
    let offered = admin.ok("projects/folders", json!({})).await;
    assert_eq!(
        offered,
        json!({"anyFolder": true, "projectsDirs": [], "folders": []})
    );
    let folder = tempfile::tempdir().unwrap();
    let link = tempfile::tempdir().unwrap();
    let named = link.path().join("here");
    std::os::unix::fs::symlink(folder.path(), &named).unwrap();
    let created = admin
        .ok("projects/create", json!({"name": "mine", "path": named}))
        .await;
    let resolved = std::fs::canonicalize(folder.path()).unwrap();
    assert_eq!(
        created["projectRoot"],
        json!(resolved.display().to_string()),
        "symlinks resolved"
    );
    let (code, message) = admin
        .err(
            "projects/create",
            json!({"name": "gone", "path": folder.path().join("gone")}),
        )
        .await;
    assert_eq!(code, -32602, "{message}");
}

#[actix_web::test]
async fn only_admins_add_test_and_make_projects() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("users.toml");
    std::fs::write(
        &file,
        users(&[
            ("vera", "vera-token", "viewer", &["*"]),
            ("mo", "mo-token", "member", &["*"]),
        ]),
    )
    .unwrap();
    let file = file.display().to_string();
    let llm = FakeLlm::start([]);
    let app = TestApp::with_llm(
        &llm,
        &[
            ("RUMMY_AUTH_TOKEN", "shared"),
            ("RUMMY_USERS_FILE", file.as_str()),
        ],
    )
    .await;
    let calls = [
        ("model/test", json!({"alias": "fake"})),
        ("projects/folders", json!({})),
        ("projects/create", json!({"name": "x", "path": dir.path()})),
        ("addModel", local_model(llm.base_url())),
    ];
    for (name, token, role) in [
        ("vera", "vera-token", "viewer"),
        ("mo", "mo-token", "member"),
    ] {
        let mut client = Client::connect(&format!("ws://{}/?token={token}", app.addr())).await;
        for (method, params) in &calls {
            let (code, message) = client.err(method, params.clone()).await;
            assert_eq!(code, -32005, "{name} calling {method}: {message}");
            assert!(
                message.contains(&format!("{name} is a {role}")),
                "{message}"
            );
        }
    }
    assert!(llm.recorded().is_empty(), "no model was called");
}

/// `rummy` on an empty home with `extra` set, until healthy; its log (stderr) once stopped.
async fn start_up_log(home: &Path, extra: &[(&str, &str)]) -> (u16, String) {
    let port = free_port();
    let log = home.join("stderr.log");
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_rummy"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("RUMMY_HOME", home)
        .env("PORT", port.to_string())
        .env("RUMMY_LOG", "info")
        .envs(extra.iter().copied())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    wait_until_healthy(port).await;
    let _ = child.kill();
    let _ = child.wait();
    (port, std::fs::read_to_string(&log).unwrap())
}

#[actix_web::test]
async fn the_start_up_log_says_where_the_console_is_and_how_to_add_a_model() {
    let home = tempfile::tempdir().unwrap();
    let (port, log) = start_up_log(home.path(), &[]).await;
    assert!(
        log.contains(&format!("console: http://127.0.0.1:{port}/ui/")),
        "{log}"
    );
    let hint = "no model is configured: add one from the console's Admin page";
    assert!(log.contains(hint), "{log}");

    let seeded = tempfile::tempdir().unwrap();
    let (_, log) = start_up_log(seeded.path(), &[("RUMMY_MODEL_local", "openai/m")]).await;
    assert!(log.contains("console: http://127.0.0.1:"), "{log}");
    assert!(!log.contains(hint), "a model is configured: {log}");
}

#[actix_web::test]
async fn a_key_set_from_the_console_never_reaches_the_log() {
    let llm = FakeLlm::start([Step::reply("Ready.")]);
    let home = tempfile::tempdir().unwrap();
    let port = free_port();
    let log = home.path().join("stderr.log");
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_rummy"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("RUMMY_HOME", home.path())
        .env("PORT", port.to_string())
        .env("RUMMY_LOG", "trace")
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    wait_until_healthy(port).await;
    let mut admin = Client::connect(&format!("ws://127.0.0.1:{port}/")).await;
    admin.ok("addModel", local_model(llm.base_url())).await;
    let tested = admin.ok("model/test", json!({"alias": "local"})).await;
    assert_eq!(tested["reply"], json!("Ready."));
    let _ = child.kill();
    let _ = child.wait();
    let logged = std::fs::read_to_string(&log).unwrap();
    assert!(
        logged.contains("addModel"),
        "the trace log saw the call: {logged}"
    );
    assert!(!logged.contains(KEY), "{logged}");
}
