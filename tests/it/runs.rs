//! Runs without an LLM: `startRun`, `getRuns`, `getRun`, `run/config`, `run/rename`,
//! `run/abort`, and runs of another project being invisible.

use regex::Regex;
use serde_json::{json, Value};

use crate::support::{Client, TestApp};

/// A client in project `name` with the model `grok` in the catalogue.
async fn client_with_model(app: &TestApp, name: &str) -> Client {
    let (mut client, _) = app.client_in_project(name).await;
    client.add_model("grok").await;
    client
}

fn aliases(runs: &Value) -> Vec<&str> {
    runs.as_array()
        .unwrap()
        .iter()
        .map(|run| run["run"].as_str().unwrap())
        .collect()
}

#[actix_web::test]
async fn start_run_creates_an_idle_run_named_after_the_model() {
    let app = TestApp::start().await;
    let mut client = client_with_model(&app, "start").await;
    let started = client.ok("startRun", json!({"model": "grok"})).await;
    let alias = started["run"].as_str().unwrap();
    let pattern = Regex::new(r"^grok_\d{13}(_\d+)?$").unwrap();
    assert!(pattern.is_match(alias), "{alias}");
    assert!(started["id"].is_i64(), "{started}");
    assert_eq!(started.as_object().unwrap().len(), 2, "{started}");
    let runs = client.ok("getRuns", json!({})).await;
    assert_eq!(runs.as_array().unwrap().len(), 1);
    let run = &runs[0];
    assert_eq!(
        (&run["run"], &run["status"], &run["turn"], &run["summary"]),
        (&json!(alias), &json!(100), &json!(0), &Value::Null)
    );
    let created = Regex::new(r"^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$").unwrap();
    assert!(created.is_match(run["created"].as_str().unwrap()), "{run}");
}

#[actix_web::test]
async fn start_run_validates_before_creating_anything() {
    let app = TestApp::start().await;
    let mut client = client_with_model(&app, "invalid").await;
    assert_eq!(
        client.err("startRun", json!({})).await,
        (-32602, "model is required".to_string())
    );
    assert_eq!(
        client.err("startRun", json!({"model": "nosuch"})).await,
        (
            -32003,
            "Unknown model alias 'nosuch'. Define RUMMY_MODEL_nosuch in your environment."
                .to_string()
        )
    );
    for params in [
        json!({"model": "grok", "temperature": 3}),
        json!({"model": "grok", "temperature": -0.1}),
        json!({"model": "grok", "contextLimit": 512}),
    ] {
        let (code, message) = client.err("startRun", params.clone()).await;
        assert_eq!(code, -32602, "{params}: {message}");
    }
    assert_eq!(client.ok("getRuns", json!({})).await, json!([]));
    for bound in [
        json!({"model": "grok", "temperature": 0}),
        json!({"model": "grok", "temperature": 2}),
        json!({"model": "grok", "contextLimit": 1024}),
    ] {
        client.ok("startRun", bound).await;
    }
    assert_eq!(
        client
            .ok("getRuns", json!({}))
            .await
            .as_array()
            .unwrap()
            .len(),
        3
    );
}

#[actix_web::test]
async fn get_runs_lists_newest_first_and_pages() {
    let app = TestApp::start().await;
    let mut client = client_with_model(&app, "listing").await;
    let mut started = Vec::new();
    for _ in 0..3 {
        started.push(client.start_run("grok").await);
    }
    let all = client.ok("getRuns", json!({})).await;
    let newest_first: Vec<&str> = started.iter().rev().map(String::as_str).collect();
    assert_eq!(aliases(&all), newest_first);
    let page = client.ok("getRuns", json!({"limit": 1, "offset": 1})).await;
    assert_eq!(aliases(&page), [newest_first[1]]);
    let head = client.ok("getRuns", json!({"limit": 2})).await;
    assert_eq!(aliases(&head), newest_first[..2]);
    let (mut other, _) = app.client_in_project("elsewhere").await;
    assert_eq!(other.ok("getRuns", json!({})).await, json!([]));
}

#[actix_web::test]
async fn get_run_shows_settings_zero_telemetry_and_empty_history() {
    let app = TestApp::start().await;
    let mut client = client_with_model(&app, "detail").await;
    let started = client
        .ok(
            "startRun",
            json!({"model": "grok", "temperature": 0.2, "persona": "Terse.", "contextLimit": 32000}),
        )
        .await;
    let alias = started["run"].as_str().unwrap();
    let detail = client.ok("getRun", json!({"run": alias})).await;
    assert_eq!(detail["run"], json!(alias));
    assert_eq!(detail["turn"], json!(0));
    assert_eq!(detail["status"], json!(100));
    assert_eq!(detail["model"], json!("grok"));
    assert_eq!(detail["temperature"], json!(0.2));
    assert_eq!(detail["persona"], json!("Terse."));
    assert_eq!(detail["context_limit"], json!(32000));
    assert!(detail["last_user_prompt"].is_null(), "{detail}");
    assert!(detail["last_summary"].is_null(), "{detail}");
    let telemetry = &detail["context"]["telemetry"];
    for field in ["prompt_tokens", "completion_tokens", "total_tokens", "cost"] {
        assert_eq!(telemetry[field].as_f64(), Some(0.0), "{field}: {telemetry}");
    }
    for list in ["reasoning", "content", "history"] {
        assert_eq!(detail["context"][list], json!([]), "{list}");
    }
    let bare = client.start_run("grok").await;
    let detail = client.ok("getRun", json!({"run": bare})).await;
    for setting in ["temperature", "persona", "context_limit"] {
        assert!(detail[setting].is_null(), "{setting}: {detail}");
    }
}

#[actix_web::test]
async fn get_run_history_shows_skills_with_parsed_attributes() {
    let app = TestApp::start().await;
    let mut client = client_with_model(&app, "history").await;
    let run = client.start_run("grok").await;
    app.write_document("skills", "sql_style", "Lowercase keywords.");
    client
        .ok("skill/add", json!({"run": run, "name": "sql_style"}))
        .await;
    let detail = client.ok("getRun", json!({"run": run})).await;
    assert_eq!(
        detail["context"]["history"],
        json!([{
            "scheme": "skill", "path": "skill://sql_style", "status": 200,
            "body": "Lowercase keywords.",
            "attributes": {
                "name": "sql_style",
                "description": "Lowercase keywords.",
                "summary": "Lowercase keywords.",
                "source": "skills/sql_style.md",
            },
            "turn": 0,
        }])
    );
}

#[actix_web::test]
async fn get_run_needs_a_known_run() {
    let app = TestApp::start().await;
    let mut client = client_with_model(&app, "unknown").await;
    assert_eq!(
        client.err("getRun", json!({})).await,
        (-32602, "run is required".to_string())
    );
    assert_eq!(
        client.err("getRun", json!({"run": "nosuch"})).await,
        (-32002, "Run 'nosuch' not found.".to_string())
    );
}

/// The stored settings of `run`, as `getRun` shows them.
async fn settings_of(client: &mut Client, run: &str) -> Value {
    let detail = client.ok("getRun", json!({"run": run})).await;
    json!({
        "model": detail["model"],
        "temperature": detail["temperature"],
        "persona": detail["persona"],
        "context_limit": detail["context_limit"],
    })
}

#[actix_web::test]
async fn run_config_changes_only_the_fields_given() {
    let app = TestApp::start().await;
    let mut client = client_with_model(&app, "config").await;
    client.add_model("other").await;
    let run = client.start_run("grok").await;
    let ok = json!({"status": "ok"});
    let steps = [
        (
            json!({"temperature": 0.3}),
            json!({"model": "grok", "temperature": 0.3, "persona": null, "context_limit": null}),
        ),
        (
            json!({"persona": "You are a pirate."}),
            json!({"model": "grok", "temperature": 0.3, "persona": "You are a pirate.", "context_limit": null}),
        ),
        (
            json!({"contextLimit": 2048, "model": "other"}),
            json!({"model": "other", "temperature": 0.3, "persona": "You are a pirate.", "context_limit": 2048}),
        ),
        (
            json!({"temperature": null, "persona": null, "contextLimit": null, "model": null}),
            json!({"model": "other", "temperature": 0.3, "persona": "You are a pirate.", "context_limit": 2048}),
        ),
        (
            json!({}),
            json!({"model": "other", "temperature": 0.3, "persona": "You are a pirate.", "context_limit": 2048}),
        ),
    ];
    for (change, expected) in steps {
        let mut params = change.clone();
        params["run"] = json!(run);
        assert_eq!(client.ok("run/config", params).await, ok, "{change}");
        assert_eq!(
            settings_of(&mut client, &run).await,
            expected,
            "after {change}"
        );
    }
}

#[actix_web::test]
async fn run_config_refuses_bad_values_and_changes_nothing() {
    let app = TestApp::start().await;
    let mut client = client_with_model(&app, "config_errors").await;
    let run = client.start_run("grok").await;
    let before = settings_of(&mut client, &run).await;
    let cases = [
        (
            json!({"run": run, "temperature": 3, "persona": "x"}),
            -32602,
        ),
        (json!({"run": run, "contextLimit": 512}), -32602),
        (json!({"run": run, "model": "nosuch"}), -32003),
        (json!({"run": "nosuch", "temperature": 1}), -32002),
        (json!({"temperature": 1}), -32602),
    ];
    for (params, code) in cases {
        let (actual, message) = client.err("run/config", params.clone()).await;
        assert_eq!(actual, code, "{params}: {message}");
    }
    assert_eq!(settings_of(&mut client, &run).await, before);
}

#[actix_web::test]
async fn run_rename_validates_the_name_and_keeps_aliases_unique() {
    let app = TestApp::start().await;
    let mut client = client_with_model(&app, "rename").await;
    let run = client.start_run("grok").await;
    let renamed = client
        .ok("run/rename", json!({"run": run, "name": "custom_Name_2"}))
        .await;
    assert_eq!(
        renamed,
        json!({"run": "custom_Name_2", "title": "custom_Name_2"})
    );
    assert_eq!(
        client.err("getRun", json!({"run": run})).await,
        (-32002, format!("Run '{run}' not found."))
    );
    assert_eq!(
        client.ok("getRun", json!({"run": "custom_Name_2"})).await["status"],
        json!(100)
    );
    let bad = "Name must match [a-z_]+.".to_string();
    for name in [
        json!("bad-name"),
        json!(""),
        json!("white space"),
        json!("ünïcode"),
    ] {
        assert_eq!(
            client
                .err("run/rename", json!({"run": "custom_Name_2", "name": name}))
                .await,
            (-32602, bad.clone()),
            "{name}"
        );
    }
    assert_eq!(
        client
            .err("run/rename", json!({"run": "custom_Name_2"}))
            .await,
        (-32602, bad.clone())
    );
    let second = client.start_run("grok").await;
    assert_eq!(
        client
            .err(
                "run/rename",
                json!({"run": second, "name": "custom_Name_2"})
            )
            .await,
        (-32004, "Name 'custom_Name_2' is already taken.".to_string())
    );
    assert_eq!(
        client
            .err("run/rename", json!({"run": "nosuch", "name": "fine"}))
            .await,
        (-32002, "Run 'nosuch' not found.".to_string())
    );
    let mut elsewhere = client_with_model(&app, "rename_elsewhere").await;
    let foreign = elsewhere.start_run("grok").await;
    assert_eq!(
        elsewhere
            .ok(
                "run/rename",
                json!({"run": foreign, "name": "custom_Name_2"})
            )
            .await,
        json!({"run": "custom_Name_2", "title": "custom_Name_2"}),
        "names are unique per project: another project's taken name is no obstacle, nor told"
    );
    assert_eq!(
        elsewhere
            .ok("getRun", json!({"run": "custom_Name_2"}))
            .await["run"],
        json!("custom_Name_2")
    );
    let own = client.ok("getRun", json!({"run": "custom_Name_2"})).await;
    assert_eq!(
        (own["run"].clone(), own["status"].clone()),
        (json!("custom_Name_2"), json!(100)),
        "each project finds its own run under the shared name"
    );
    elsewhere
        .ok("run/abort", json!({"run": "custom_Name_2"}))
        .await;
    assert_eq!(
        client.ok("getRun", json!({"run": "custom_Name_2"})).await["status"],
        json!(100),
        "an abort in one project leaves the other's run of that name alone"
    );
}

#[actix_web::test]
async fn run_abort_on_an_idle_run_sets_499() {
    let app = TestApp::start().await;
    let mut client = client_with_model(&app, "abort").await;
    let aborted = client.start_run("grok").await;
    let untouched = client.start_run("grok").await;
    let ok = json!({"status": "ok"});
    assert_eq!(client.ok("run/abort", json!({"run": aborted})).await, ok);
    assert_eq!(
        client.ok("run/abort", json!({"run": aborted})).await,
        ok,
        "again"
    );
    let runs = client.ok("getRuns", json!({})).await;
    let statuses: Vec<(&str, &Value)> = runs
        .as_array()
        .unwrap()
        .iter()
        .map(|run| (run["run"].as_str().unwrap(), &run["status"]))
        .collect();
    assert_eq!(
        statuses,
        [
            (untouched.as_str(), &json!(100)),
            (aborted.as_str(), &json!(499))
        ]
    );
    assert_eq!(
        client.ok("getRun", json!({"run": aborted})).await["status"],
        json!(499)
    );
    assert_eq!(
        client.err("run/abort", json!({"run": "nosuch"})).await,
        (-32002, "Run 'nosuch' not found.".to_string())
    );
}

#[actix_web::test]
async fn a_run_of_another_project_is_not_found() {
    let app = TestApp::start().await;
    let mut owner = client_with_model(&app, "owner").await;
    let run = owner.start_run("grok").await;
    app.write_document("skills", "sql_style", "Lowercase keywords.");
    app.write_document("personas", "pirate", "Arr.");
    owner
        .ok("skill/add", json!({"run": run, "name": "sql_style"}))
        .await;
    let (mut stranger, _) = app.client_in_project("stranger").await;
    let not_found = format!("Run '{run}' not found.");
    let not_found_short = format!("Run not found: {run}");
    let cases = [
        ("getRun", json!({"run": run}), &not_found),
        (
            "run/config",
            json!({"run": run, "persona": "stolen"}),
            &not_found,
        ),
        (
            "run/rename",
            json!({"run": run, "name": "stolen"}),
            &not_found,
        ),
        ("run/abort", json!({"run": run}), &not_found),
        ("get", json!({"run": run, "path": "**"}), &not_found),
        ("store", json!({"run": run, "path": "**"}), &not_found_short),
        (
            "skill/add",
            json!({"run": run, "name": "sql_style"}),
            &not_found_short,
        ),
        (
            "skill/remove",
            json!({"run": run, "name": "sql_style"}),
            &not_found_short,
        ),
        ("getSkills", json!({"run": run}), &not_found_short),
        (
            "persona/set",
            json!({"run": run, "name": "pirate"}),
            &not_found_short,
        ),
    ];
    for (method, params, message) in cases {
        assert_eq!(
            stranger.err(method, params.clone()).await,
            (-32002, message.clone()),
            "{method} {params}"
        );
    }
    assert_eq!(
        stranger
            .ok("getEntries", json!({"run": run, "pattern": "**"}))
            .await,
        json!([])
    );
    let detail = owner.ok("getRun", json!({"run": run})).await;
    assert_eq!(
        detail["status"],
        json!(100),
        "the stranger's abort did nothing"
    );
    assert!(detail["persona"].is_null(), "{detail}");
    assert_eq!(
        owner.ok("getSkills", json!({"run": run})).await[0]["name"],
        json!("sql_style")
    );
}

#[actix_web::test]
async fn run_abort_works_from_any_connection_of_the_project() {
    let app = TestApp::start().await;
    let (mut starter, root) = app.client_in_project("shared").await;
    starter.add_model("grok").await;
    let run = starter.start_run("grok").await;
    let mut other = app.client().await;
    other.init("shared", &root).await;
    assert_eq!(
        other.ok("run/abort", json!({"run": run})).await,
        json!({"status": "ok"})
    );
    assert_eq!(
        starter.ok("getRun", json!({"run": run})).await["status"],
        json!(499)
    );
}
