//! The foundation methods that are not about one run's lifecycle: `ping`, `discover`,
//! `init`, the model catalogue, `get`/`store`/`getEntries`, skills and personas, and the
//! errors for ill-typed params.

use serde_json::{json, Value};

use crate::support::TestApp;

#[actix_web::test]
async fn ping_answers_an_empty_object_before_and_after_init() {
    let app = TestApp::start().await;
    let mut client = app.client().await;
    assert_eq!(client.ok("ping", json!({"ignored": true})).await, json!({}));
    client.init("pinged", &app.project_root("pinged")).await;
    assert_eq!(client.ok("ping", json!({})).await, json!({}));
}

#[actix_web::test]
async fn discover_describes_every_method_and_notification() {
    let app = TestApp::start().await;
    let mut client = app.client().await;
    let catalogue = client.ok("discover", json!({})).await;
    let methods = catalogue["methods"].as_object().unwrap();
    let expected = [
        "ping",
        "discover",
        "init",
        "getModels",
        "addModel",
        "removeModel",
        "get",
        "store",
        "getEntries",
        "startRun",
        "ask",
        "act",
        "run/resolve",
        "run/abort",
        "run/rename",
        "run/inject",
        "run/config",
        "getRuns",
        "getRun",
        "skill/add",
        "skill/remove",
        "getSkills",
        "listSkills",
        "persona/set",
        "listPersonas",
        "set",
        "known",
        "unknown",
        "env",
        "sh",
        "rm",
        "cp",
        "mv",
        "summarize",
        "update",
        "ask_user",
    ];
    for name in expected {
        let method = &methods[name];
        assert!(method["description"].is_string(), "{name}: {method}");
        assert!(method["params"].is_object(), "{name}: {method}");
    }
    assert_eq!(methods.len(), expected.len(), "{:?}", methods.keys());
    assert!(!methods.contains_key("rpc/discover"));
    assert_eq!(methods["ping"]["params"], json!({}));
    let init_params = methods["init"]["params"].as_object().unwrap();
    assert!(init_params.contains_key("name") && init_params.contains_key("projectRoot"));
    let set_params: Vec<&String> = methods["set"]["params"]
        .as_object()
        .unwrap()
        .keys()
        .collect();
    assert_eq!(set_params, ["run", "path", "body", "to", "attributes"]);
    for notification in ["run/state", "run/progress", "ui/render", "ui/notify"] {
        assert!(
            catalogue["notifications"][notification]["description"].is_string(),
            "{notification}"
        );
    }
    assert_eq!(client.ok("rpc/discover", json!({})).await, catalogue);
}

#[actix_web::test]
async fn init_upserts_the_project_by_name() {
    let app = TestApp::start().await;
    let mut client = app.client().await;
    let root = app.project_root("alpha");
    let first = client
        .ok(
            "init",
            json!({"name": "alpha", "projectRoot": root, "configPath": "rummy.toml"}),
        )
        .await;
    assert!(first["projectId"].is_i64(), "{first}");
    assert_eq!(first.as_object().unwrap().len(), 1, "{first}");
    let again = client
        .ok(
            "init",
            json!({"name": "alpha", "projectRoot": root.join("sub/..")}),
        )
        .await;
    assert_eq!(again, first, "the same name is the same project");
    let other = client.init("beta", &app.project_root("beta")).await;
    assert_ne!(json!(other), first["projectId"]);
}

#[actix_web::test]
async fn init_requires_a_name_and_an_absolute_root() {
    let app = TestApp::start().await;
    let mut client = app.client().await;
    let root = app.project_root("gamma");
    let cases = [
        (json!({"projectRoot": root}), "name is required"),
        (json!({"name": "", "projectRoot": root}), "name is required"),
        (json!({"name": "gamma"}), "projectRoot is required"),
        (
            json!({"name": "gamma", "projectRoot": null}),
            "projectRoot is required",
        ),
    ];
    for (params, message) in cases {
        assert_eq!(
            client.err("init", params.clone()).await,
            (-32602, message.to_string()),
            "{params}"
        );
    }
    let (code, message) = client
        .err(
            "init",
            json!({"name": "gamma", "projectRoot": "relative/dir"}),
        )
        .await;
    assert_eq!(code, -32602);
    assert!(message.contains("projectRoot"), "{message}");
    let (code, _) = client.err("getRuns", json!({})).await;
    assert_eq!(code, -32001, "a failed init binds nothing");
}

#[actix_web::test]
async fn models_are_listed_by_alias_and_paged() {
    let app = TestApp::start().await;
    let mut client = app.client().await;
    assert_eq!(client.ok("getModels", json!({})).await, json!([]));
    for (alias, actual) in [
        ("zeta", "ollama/z"),
        ("alpha", "openai/a"),
        ("mid", "x.ai/m"),
    ] {
        let added = client
            .ok("addModel", json!({"alias": alias, "actual": actual}))
            .await;
        assert_eq!(added["alias"], json!(alias));
        assert!(added["id"].is_i64(), "{added}");
    }
    let all = client.ok("getModels", json!({})).await;
    assert_eq!(
        all,
        json!([
            {"alias": "alpha", "actual": "openai/a", "context_length": null},
            {"alias": "mid", "actual": "x.ai/m", "context_length": null},
            {"alias": "zeta", "actual": "ollama/z", "context_length": null},
        ])
    );
    let page = client
        .ok("getModels", json!({"limit": 1, "offset": 1}))
        .await;
    assert_eq!(page, json!([all[1]]));
    let tail = client.ok("getModels", json!({"offset": 2})).await;
    assert_eq!(tail, json!([all[2]]));
    let head = client.ok("getModels", json!({"limit": 2})).await;
    assert_eq!(head, json!([all[0], all[1]]));
}

#[actix_web::test]
async fn add_model_updates_in_place_and_keeps_the_context_length() {
    let app = TestApp::start().await;
    let mut client = app.client().await;
    let first = client
        .ok(
            "addModel",
            json!({"alias": "potato", "actual": "openai/potato-3000", "contextLength": 16000}),
        )
        .await;
    let updated = client
        .ok(
            "addModel",
            json!({"alias": "potato", "actual": "openai/potato-4000"}),
        )
        .await;
    assert_eq!(updated, first, "an update keeps the row id");
    let models = client.ok("getModels", json!({})).await;
    assert_eq!(
        models,
        json!([{"alias": "potato", "actual": "openai/potato-4000", "context_length": 16000}])
    );
    client
        .ok(
            "addModel",
            json!({"alias": "potato", "actual": "openai/potato-4000", "contextLength": 32000}),
        )
        .await;
    let models = client.ok("getModels", json!({})).await;
    assert_eq!(models[0]["context_length"], json!(32000));
}

#[actix_web::test]
async fn add_model_requires_alias_and_actual() {
    let app = TestApp::start().await;
    let mut client = app.client().await;
    let cases = [
        (json!({"actual": "openai/x"}), "alias is required"),
        (json!({"alias": "x"}), "actual is required"),
        (
            json!({"alias": "", "actual": "openai/x"}),
            "alias is required",
        ),
        (
            json!({"alias": "x", "actual": "openai/x", "contextLength": "big"}),
            "contextLength is required",
        ),
    ];
    for (params, message) in cases {
        assert_eq!(
            client.err("addModel", params.clone()).await,
            (-32602, message.to_string()),
            "{params}"
        );
    }
    assert_eq!(client.ok("getModels", json!({})).await, json!([]));
}

#[actix_web::test]
async fn remove_model_is_ok_whether_or_not_the_alias_exists() {
    let app = TestApp::start().await;
    let mut client = app.client().await;
    client.add_model("gone").await;
    client.add_model("kept").await;
    let removed = client.ok("removeModel", json!({"alias": "gone"})).await;
    assert_eq!(removed, json!({"status": "ok"}));
    let again = client.ok("removeModel", json!({"alias": "gone"})).await;
    assert_eq!(again, json!({"status": "ok"}));
    let models = client.ok("getModels", json!({})).await;
    assert_eq!(models.as_array().unwrap().len(), 1);
    assert_eq!(models[0]["alias"], json!("kept"));
    assert_eq!(
        client.err("removeModel", json!({})).await,
        (-32602, "alias is required".to_string())
    );
}

/// A run in a fresh project, with the skill `sql_style` loaded into it.
async fn run_with_skill(app: &TestApp, project: &str) -> (crate::support::Client, String) {
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
                "fidelity": "full", "tokens": everything[0]["tokens"]}])
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
    let (mut client, root) = app.client_in_project("constraints").await;
    let ok = json!({"status": "ok"});
    let calls = [
        ("get", json!({"path": "src/app.js", "persist": true})),
        (
            "get",
            json!({"path": "src/app.js", "persist": true, "readonly": true}),
        ),
        (
            "get",
            json!({"path": root.join("lib/util.js"), "persist": 1}),
        ),
        (
            "store",
            json!({"path": "build/**", "persist": true, "ignore": true}),
        ),
        ("store", json!({"path": "docs/*.md", "persist": true})),
        ("store", json!({"path": "docs/*.md", "clear": true})),
        ("store", json!({"path": "never/set.txt", "clear": true})),
    ];
    for (method, params) in calls {
        assert_eq!(
            client.ok(method, params.clone()).await,
            ok,
            "{method} {params}"
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
            ("skill://rust_style", "full"),
            ("skill://sql_style", "archive")
        ]
    );
}

#[actix_web::test]
async fn skills_are_listed_loaded_and_removed() {
    let app = TestApp::start().await;
    let (mut client, _) = app.client_in_project("skills").await;
    assert_eq!(client.ok("listSkills", json!({})).await, json!([]));
    let sql = app.write_document("skills", "sql_style", "Use lowercase SQL keywords.");
    let rust = app.write_document("skills", "rust_style", "Prefer iterators.");
    std::fs::write(app.home().join("skills/notes.txt"), "not a skill").unwrap();
    let listed = client.ok("listSkills", json!({})).await;
    assert_eq!(
        listed,
        json!([
            {"name": "rust_style", "path": rust},
            {"name": "sql_style", "path": sql},
        ])
    );
    client.add_model("grok").await;
    let run = client.start_run("grok").await;
    assert_eq!(client.ok("getSkills", json!({"run": run})).await, json!([]));
    client
        .ok("skill/add", json!({"run": run, "name": "sql_style"}))
        .await;
    assert_eq!(
        client.ok("getSkills", json!({"run": run})).await,
        json!([{"name": "sql_style", "status": 200}])
    );
    let missing = app.home().join("skills/nosuch.md");
    assert_eq!(
        client
            .err("skill/add", json!({"run": run, "name": "nosuch"}))
            .await,
        (-32602, format!("Not found: {}", missing.display()))
    );
    let removed = client
        .ok("skill/remove", json!({"run": run, "name": "sql_style"}))
        .await;
    assert_eq!(removed, json!({"status": "ok"}));
    assert_eq!(client.ok("getSkills", json!({"run": run})).await, json!([]));
    let absent = client
        .ok("skill/remove", json!({"run": run, "name": "sql_style"}))
        .await;
    assert_eq!(absent, json!({"status": "ok"}));
}

#[actix_web::test]
async fn skill_methods_check_name_then_run() {
    let app = TestApp::start().await;
    let (mut client, _) = app.client_in_project("skill_errors").await;
    for method in ["skill/add", "skill/remove"] {
        let cases = [
            (json!({"run": "x"}), -32602, "name is required"),
            (json!({}), -32602, "name is required"),
            (json!({"name": "sql_style"}), -32602, "run is required"),
            (
                json!({"name": "sql_style", "run": "nosuch"}),
                -32002,
                "Run not found: nosuch",
            ),
        ];
        for (params, code, message) in cases {
            assert_eq!(
                client.err(method, params.clone()).await,
                (code, message.to_string()),
                "{method} {params}"
            );
        }
    }
    assert_eq!(
        client.err("getSkills", json!({})).await,
        (-32602, "run is required".to_string())
    );
    assert_eq!(
        client.err("getSkills", json!({"run": "nosuch"})).await,
        (-32002, "Run not found: nosuch".to_string())
    );
}

/// The persona stored on `run`, as `getRun` shows it.
async fn persona_of(client: &mut crate::support::Client, run: &str) -> Value {
    client.ok("getRun", json!({"run": run})).await["persona"].clone()
}

#[actix_web::test]
async fn personas_are_set_from_text_or_a_named_file() {
    let app = TestApp::start().await;
    let (mut client, _) = app.client_in_project("personas").await;
    assert_eq!(client.ok("listPersonas", json!({})).await, json!([]));
    let pirate = app.write_document("personas", "pirate", "You are a pirate.");
    assert_eq!(
        client.ok("listPersonas", json!({})).await,
        json!([{"name": "pirate", "path": pirate}])
    );
    client.add_model("grok").await;
    let run = client.start_run("grok").await;
    assert_eq!(persona_of(&mut client, &run).await, Value::Null);
    let ok = json!({"status": "ok"});
    let by_text = client
        .ok(
            "persona/set",
            json!({"run": run, "text": "You are a grumpy reviewer."}),
        )
        .await;
    assert_eq!(by_text, ok);
    assert_eq!(
        persona_of(&mut client, &run).await,
        json!("You are a grumpy reviewer.")
    );
    let by_name = client
        .ok("persona/set", json!({"run": run, "name": "pirate"}))
        .await;
    assert_eq!(by_name, ok);
    assert_eq!(
        persona_of(&mut client, &run).await,
        json!("You are a pirate.")
    );
    client
        .ok(
            "persona/set",
            json!({"run": run, "name": "pirate", "text": "Text wins."}),
        )
        .await;
    assert_eq!(persona_of(&mut client, &run).await, json!("Text wins."));
    let missing = app.home().join("personas/nosuch.md");
    assert_eq!(
        client
            .err("persona/set", json!({"run": run, "name": "nosuch"}))
            .await,
        (-32602, format!("Not found: {}", missing.display()))
    );
    assert_eq!(persona_of(&mut client, &run).await, json!("Text wins."));
    assert_eq!(
        client.err("persona/set", json!({"text": "x"})).await,
        (-32602, "run is required".to_string())
    );
    assert_eq!(
        client
            .err("persona/set", json!({"run": "nosuch", "text": "x"}))
            .await,
        (-32002, "Run not found: nosuch".to_string())
    );
}

#[actix_web::test]
async fn ill_typed_params_name_the_param() {
    let app = TestApp::start().await;
    let (mut client, root) = app.client_in_project("typed").await;
    client.add_model("grok").await;
    let run = client.start_run("grok").await;
    let cases = [
        (
            "init",
            json!({"name": 5, "projectRoot": root}),
            "name is required",
        ),
        (
            "init",
            json!({"name": "typed", "projectRoot": ["/"]}),
            "projectRoot is required",
        ),
        (
            "init",
            json!({"name": "typed", "projectRoot": root, "configPath": 1}),
            "configPath is required",
        ),
        ("getModels", json!({"limit": "ten"}), "limit is required"),
        ("getModels", json!({"offset": -1}), "offset is required"),
        (
            "addModel",
            json!({"alias": "x", "actual": {"a": 1}}),
            "actual is required",
        ),
        ("removeModel", json!({"alias": false}), "alias is required"),
        ("getEntries", json!({"pattern": 5}), "pattern is required"),
        (
            "getEntries",
            json!({"run": run, "limit": 1.5}),
            "limit is required",
        ),
        (
            "get",
            json!({"path": 7, "persist": true}),
            "path is required",
        ),
        ("store", json!({"path": "a", "run": 7}), "run is required"),
        (
            "startRun",
            json!({"model": "grok", "temperature": "hot"}),
            "temperature is required",
        ),
        ("startRun", json!({"model": ["grok"]}), "model is required"),
        (
            "startRun",
            json!({"model": "grok", "contextLimit": "big"}),
            "contextLimit is required",
        ),
        ("getRuns", json!({"limit": "all"}), "limit is required"),
        ("getRun", json!({"run": 12}), "run is required"),
        (
            "run/config",
            json!({"run": run, "persona": 3}),
            "persona is required",
        ),
        (
            "run/rename",
            json!({"run": run, "name": 3}),
            "name is required",
        ),
        ("run/abort", json!({"run": null}), "run is required"),
        (
            "skill/add",
            json!({"run": run, "name": 1}),
            "name is required",
        ),
        ("getSkills", json!({"run": true}), "run is required"),
        (
            "persona/set",
            json!({"run": run, "text": 9}),
            "text is required",
        ),
    ];
    for (method, params, message) in cases {
        assert_eq!(
            client.err(method, params.clone()).await,
            (-32602, message.to_string()),
            "{method} {params}"
        );
    }
}

#[actix_web::test]
async fn unwired_methods_still_validate_their_params_first() {
    let app = TestApp::start().await;
    let (mut client, _) = app.client_in_project("tools").await;
    for tool in ["set", "rm", "sh", "known"] {
        assert_eq!(
            client.err(tool, json!({"run": "x"})).await,
            (-32602, "path is required".to_string()),
            "{tool}"
        );
        assert_eq!(
            client.err(tool, json!({"path": "known://a"})).await,
            (-32602, "run is required".to_string()),
            "{tool}"
        );
    }
}
