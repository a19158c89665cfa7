//! `getEntries`, and `get`/`store` with their file constraints.

use serde_json::json;

use crate::support::{Client, TestApp};
use rummy::testing::fake_llm::{FakeLlm, Step};

/// A run in a fresh project, with the skill `sql_style` loaded into it.
async fn run_with_skill(app: &TestApp, project: &str) -> (Client, String) {
    let (mut client, _) = app.client_in_project(project).await;
    client.add_model("grok").await;
    let run = client.start_run("grok").await;
    app.write_document("skills", "sql_style", "Use lowercase SQL keywords.");
    let added = client
        .ok("skill/add", json!({"run": run, "name": "sql_style"}))
        .await;
    assert_eq!(added, json!({"status": "ok", "skill": "sql_style"}));
    (client, run)
}

#[actix_web::test]
async fn get_entries_matches_patterns_and_defaults_to_the_newest_run() {
    let app = TestApp::start().await;
    let (mut client, run) = run_with_skill(&app, "entries").await;
    let everything = client
        .ok("getEntries", json!({"run": run, "pattern": "**"}))
        .await;
    assert_eq!(
        everything,
        json!([{"path": "skill://sql_style", "scheme": "skill", "status": 200,
                "fidelity": "summary", "tokens": everything[0]["tokens"]}])
    );
    assert!(
        everything[0]["tokens"].as_i64().unwrap() > 0,
        "{everything}"
    );
    let by_scheme = client
        .ok("getEntries", json!({"run": run, "pattern": "skill://*"}))
        .await;
    assert_eq!(by_scheme, everything);
    let default_pattern = client.ok("getEntries", json!({"run": run})).await;
    assert_eq!(default_pattern, json!([]), "`*` does not cross `/`");
    let newest = client.ok("getEntries", json!({"pattern": "**"})).await;
    assert_eq!(newest, everything, "no run = the project's newest run");
    let by_body = client
        .ok(
            "getEntries",
            json!({"run": run, "pattern": "**", "body": "lowercase"}),
        )
        .await;
    assert_eq!(by_body, everything);
    let no_body_match = client
        .ok(
            "getEntries",
            json!({"run": run, "pattern": "**", "body": "uppercase"}),
        )
        .await;
    assert_eq!(no_body_match, json!([]));
    let unknown = client
        .ok("getEntries", json!({"run": "nosuch_1", "pattern": "**"}))
        .await;
    assert_eq!(unknown, json!([]));
}

#[actix_web::test]
async fn get_entries_of_a_project_without_runs_is_empty() {
    let app = TestApp::start().await;
    let (mut client, _) = app.client_in_project("empty").await;
    assert_eq!(
        client.ok("getEntries", json!({"pattern": "**"})).await,
        json!([])
    );
}

#[actix_web::test]
async fn get_and_store_with_persist_or_clear_need_no_run() {
    let app = TestApp::start().await;
    let root = app.project_root("constraints");
    let mut client = app.client().await;
    let project = client.init("constraints", &root).await;
    let steps = [
        (
            "get",
            json!({"path": "src/app.js", "persist": true}),
            vec![("src/app.js", "active")],
        ),
        (
            "get",
            json!({"path": "src/app.js", "persist": true, "readonly": true}),
            vec![("src/app.js", "readonly")],
        ),
        (
            "get",
            json!({"path": root.join("lib/util.js"), "persist": 1}),
            vec![("src/app.js", "readonly"), ("lib/util.js", "active")],
        ),
        (
            "store",
            json!({"path": "build/**", "persist": true, "ignore": true}),
            vec![
                ("src/app.js", "readonly"),
                ("lib/util.js", "active"),
                ("build/**", "ignore"),
            ],
        ),
        (
            "store",
            json!({"path": "./lib/util.js", "persist": true, "ignore": true}),
            vec![
                ("src/app.js", "readonly"),
                ("lib/util.js", "ignore"),
                ("build/**", "ignore"),
            ],
        ),
        (
            "store",
            json!({"path": "src/app.js", "clear": true, "persist": true}),
            vec![("lib/util.js", "ignore"), ("build/**", "ignore")],
        ),
        (
            "store",
            json!({"path": root.join("build/**"), "clear": true}),
            vec![("lib/util.js", "ignore")],
        ),
        (
            "store",
            json!({"path": "never/set.txt", "clear": true}),
            vec![("lib/util.js", "ignore")],
        ),
    ];
    for (method, params, expected) in steps {
        assert_eq!(
            client.ok(method, params.clone()).await,
            json!({"status": "ok"}),
            "{method} {params}"
        );
        let expected: Vec<(String, String)> = expected
            .into_iter()
            .map(|(pattern, visibility)| (pattern.to_string(), visibility.to_string()))
            .collect();
        assert_eq!(
            app.constraints(project).await,
            expected,
            "after {method} {params}"
        );
    }
}

#[actix_web::test]
async fn get_and_store_validate_path_then_run() {
    let app = TestApp::start().await;
    let (mut client, _) = app.client_in_project("validation").await;
    let cases = [
        ("get", json!({}), "path is required"),
        ("get", json!({"path": "", "run": "x"}), "path is required"),
        ("get", json!({"path": "a.txt"}), "run is required"),
        ("store", json!({"run": "x"}), "path is required"),
        ("store", json!({"path": "a.txt"}), "run is required"),
        (
            "store",
            json!({"path": "a.txt", "persist": false}),
            "run is required",
        ),
    ];
    for (method, params, message) in cases {
        assert_eq!(
            client.err(method, params.clone()).await,
            (-32602, message.to_string()),
            "{method} {params}"
        );
    }
    assert_eq!(
        client
            .err("get", json!({"path": "a.txt", "run": "nosuch"}))
            .await,
        (-32002, "Run 'nosuch' not found.".to_string())
    );
    assert_eq!(
        client
            .err("store", json!({"path": "a.txt", "run": "nosuch"}))
            .await,
        (-32002, "Run not found: nosuch".to_string())
    );
    let (code, _) = client
        .err("store", json!({"path": "../outside", "persist": true}))
        .await;
    assert_eq!(code, -32602, "a constraint outside the root is refused");
}

#[actix_web::test]
async fn store_with_a_run_archives_the_matching_entries() {
    let app = TestApp::start().await;
    let (mut client, run) = run_with_skill(&app, "archive").await;
    app.write_document("skills", "rust_style", "Prefer iterators.");
    client
        .ok("skill/add", json!({"run": run, "name": "rust_style"}))
        .await;
    let stored = client
        .ok("store", json!({"run": run, "path": "skill://sql_*"}))
        .await;
    assert_eq!(stored, json!({"status": "ok"}));
    let entries = client
        .ok("getEntries", json!({"run": run, "pattern": "**"}))
        .await;
    let fidelity: Vec<(&str, &str)> = entries
        .as_array()
        .unwrap()
        .iter()
        .map(|entry| {
            (
                entry["path"].as_str().unwrap(),
                entry["fidelity"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        fidelity,
        [
            ("skill://rust_style", "summary"),
            ("skill://sql_style", "archive")
        ]
    );
}

#[actix_web::test]
async fn get_entries_pages_in_path_order() {
    let app = TestApp::start().await;
    let (mut client, run) = run_with_skill(&app, "paging").await;
    for name in ["b_style", "a_style"] {
        app.write_document("skills", name, "Be brief.");
        client
            .ok("skill/add", json!({"run": run, "name": name}))
            .await;
    }
    let paths = |entries: serde_json::Value| -> Vec<String> {
        entries
            .as_array()
            .unwrap()
            .iter()
            .map(|entry| entry["path"].as_str().unwrap().to_string())
            .collect()
    };
    let all = client
        .ok("getEntries", json!({"run": run, "pattern": "**"}))
        .await;
    assert_eq!(
        paths(all),
        ["skill://a_style", "skill://b_style", "skill://sql_style"]
    );
    let page = client
        .ok(
            "getEntries",
            json!({"run": run, "pattern": "**", "limit": 1, "offset": 1}),
        )
        .await;
    assert_eq!(paths(page), ["skill://b_style"]);
    let tail = client
        .ok(
            "getEntries",
            json!({"run": run, "pattern": "**", "offset": 2}),
        )
        .await;
    assert_eq!(paths(tail), ["skill://sql_style"]);
}

#[actix_web::test]
async fn constraints_of_a_project_whose_root_is_missing_are_a_client_error() {
    let app = TestApp::start().await;
    let mut client = app.client().await;
    let root = app.home().join("not-there");
    client.init("ghost", &root).await;
    let expected = (
        -32602,
        format!("project root is not a directory: {}", root.display()),
    );
    assert_eq!(
        client
            .err("get", json!({"path": "a.txt", "persist": true}))
            .await,
        expected
    );
    assert_eq!(
        client
            .err("store", json!({"path": "a.txt", "clear": true}))
            .await,
        expected
    );
}

#[actix_web::test]
async fn the_globstar_lists_entries_whose_paths_hold_dot_segments() {
    let llm = FakeLlm::start([
        Step::reply("<get path=\"../../etc/passwd\"/><update>reading</update>"),
        Step::reply("<summarize>refused</summarize>"),
    ]);
    let app = TestApp::with_llm(&llm, &[]).await;
    let (mut client, _) = app.client_in_project("dots").await;
    let outcome = client
        .ok(
            "ask",
            json!({"model": "fake", "prompt": "read the passwords"}),
        )
        .await;
    let run = outcome["run"].as_str().unwrap();
    let everything = client
        .ok("getEntries", json!({"run": run, "pattern": "**"}))
        .await;
    let refusal = everything
        .as_array()
        .unwrap()
        .iter()
        .find(|entry| entry["path"] == json!("get://turn_1/../../etc/passwd"));
    assert_eq!(
        refusal.map(|entry| entry["status"].clone()),
        Some(json!(400)),
        "{everything}"
    );
    let gets = client
        .ok("getEntries", json!({"run": run, "pattern": "get://**"}))
        .await;
    assert_eq!(gets.as_array().unwrap().len(), 1, "{gets}");
}

#[actix_web::test]
async fn a_client_gives_a_no_repo_run_a_file_from_inside_the_root_only() {
    let llm = FakeLlm::start([
        Step::reply("<summarize>nothing scanned</summarize>"),
        Step::reply("<summarize>read it</summarize>"),
    ]);
    let app = TestApp::with_llm(&llm, &[]).await;
    let (mut client, root) = app.client_in_project("given").await;
    std::fs::write(root.join("notes.txt"), "GIVEN-NOTE-81").unwrap();
    std::fs::write(root.join("secret.env"), "IGNORED-KEY-12").unwrap();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.txt"), "OUTSIDE-99").unwrap();
    std::os::unix::fs::symlink(outside.path(), root.join("escape")).unwrap();
    let asked = client
        .ok(
            "ask",
            json!({"model": "fake", "prompt": "hi", "noRepo": true}),
        )
        .await;
    let run = asked["run"].as_str().unwrap().to_string();
    assert_eq!(client.statuses(&run, "notes.txt").await, [], "not scanned");

    client
        .ok("get", json!({"run": run, "path": "notes.txt"}))
        .await;
    let given = client
        .ok("getEntries", json!({"run": run, "pattern": "notes.txt"}))
        .await;
    assert_eq!(given[0]["fidelity"], json!("full"), "{given}");
    for refused in ["../outside/secret.txt", "escape/secret.txt"] {
        let (code, message) = client
            .err("get", json!({"run": run, "path": refused}))
            .await;
        assert_eq!(code, -32602, "{refused}: {message}");
    }
    client
        .ok(
            "store",
            json!({"path": "secret.env", "persist": true, "ignore": true}),
        )
        .await;
    client
        .ok("get", json!({"run": run, "path": "secret.env"}))
        .await;
    assert_eq!(client.statuses(&run, "secret.env").await, [], "ignored");

    client
        .ok(
            "ask",
            json!({"model": "fake", "prompt": "what do the notes say?", "run": run, "noRepo": true}),
        )
        .await;
    let seen = llm.requests()[1].to_string();
    assert!(
        seen.contains("GIVEN-NOTE-81"),
        "the model sees the given file"
    );
    assert!(!seen.contains("IGNORED-KEY-12") && !seen.contains("OUTSIDE-99"));
}
