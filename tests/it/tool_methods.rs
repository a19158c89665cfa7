//! The tool-dispatch methods (PROTOCOL §2.7): a client calls a model tool by name on a run.
//! Their validation (init, `path`, `run`, the run, paths confined to the project root), their
//! effects seen through `getEntries` and `getRun` (entries written at once, proposals at
//! 202), and the §6.6 scenario `set` → `getEntries` → `rm` → `sh` → a blocked `ask`.

use serde_json::{json, Value};

use crate::support::{Client, TestApp};
use rummy::testing::fake_llm::{FakeLlm, Step, WhenExhausted};

/// Every tool-dispatch method.
const TOOLS: [&str; 9] = [
    "set", "known", "unknown", "env", "sh", "rm", "cp", "mv", "ask_user",
];

/// The run's entries as `(path, status, fidelity)`, in path order.
async fn entries(client: &mut Client, run: &str) -> Vec<(String, i64, String)> {
    let listed = client
        .ok("getEntries", json!({"run": run, "pattern": "**"}))
        .await;
    listed
        .as_array()
        .unwrap()
        .iter()
        .map(|entry| {
            (
                entry["path"].as_str().unwrap().to_string(),
                entry["status"].as_i64().unwrap(),
                entry["fidelity"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// The run's `getRun` history row at `path` (body and attributes included).
async fn history_row(client: &mut Client, run: &str, path: &str) -> Value {
    let detail = client.ok("getRun", json!({"run": run})).await;
    detail["context"]["history"]
        .as_array()
        .unwrap()
        .iter()
        .find(|row| row["path"] == path)
        .cloned()
        .unwrap_or_else(|| panic!("no {path} in {detail}"))
}

fn status_of(listed: &[(String, i64, String)], path: &str) -> Option<i64> {
    listed
        .iter()
        .find(|(entry, _, _)| entry == path)
        .map(|(_, status, _)| *status)
}

#[actix_web::test]
async fn every_tool_method_checks_init_path_run_then_the_run() {
    let app = TestApp::start().await;
    let mut stranger = app.client().await;
    let (mut client, _) = app.client_in_project("tools").await;
    client.add_model("grok").await;
    let (mut other, _) = app.client_in_project("elsewhere").await;
    other.add_model("grok").await;
    let foreign = other.start_run("grok").await;
    let path_required = (-32602, "path is required".to_string());
    let run_required = (-32602, "run is required".to_string());
    for tool in TOOLS {
        let valid = json!({"run": "x", "path": "known://a", "body": "b"});
        assert_eq!(
            stranger.err(tool, valid).await,
            (-32001, "Project not initialized.".to_string()),
            "{tool}"
        );
        for params in [
            json!({}),
            json!({"run": "x"}),
            json!({"run": "x", "path": ""}),
        ] {
            assert_eq!(client.err(tool, params).await, path_required, "{tool}");
        }
        for params in [json!({"path": "a"}), json!({"path": "a", "run": ""})] {
            assert_eq!(client.err(tool, params).await, run_required, "{tool}");
        }
        assert_eq!(
            client
                .err(tool, json!({"run": "nosuch", "path": "known://a"}))
                .await,
            (-32002, "Run 'nosuch' not found.".to_string()),
            "{tool}"
        );
        assert_eq!(
            client
                .err(
                    tool,
                    json!({"run": foreign, "path": "known://a", "to": "known://b"})
                )
                .await,
            (-32002, format!("Run '{foreign}' not found.")),
            "{tool}: a run of another project"
        );
    }
    assert_eq!(entries(&mut other, &foreign).await, []);
}

#[actix_web::test]
async fn file_paths_outside_the_project_are_refused_but_commands_are_text() {
    let app = TestApp::start().await;
    let (mut client, root) = app.client_in_project("confined").await;
    client.add_model("grok").await;
    let run = client.start_run("grok").await;
    let outside = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(outside.path(), root.join("escape")).unwrap();
    let refused = [
        (
            "set",
            json!({"path": "../evil.js", "body": "x"}),
            "leaves the project",
        ),
        ("rm", json!({"path": "/etc/passwd"}), "is absolute"),
        (
            "set",
            json!({"path": "escape/evil.js", "body": "x"}),
            "symbolic link",
        ),
        (
            "cp",
            json!({"path": "known://a", "to": "../copy.js"}),
            "leaves the project",
        ),
        (
            "mv",
            json!({"path": "known://a", "to": "/tmp/moved.js"}),
            "is absolute",
        ),
        (
            "known",
            json!({"path": "../notes", "body": "x"}),
            "leaves the project",
        ),
    ];
    for (tool, mut params, reason) in refused {
        params["run"] = json!(run);
        let (code, message) = client.err(tool, params.clone()).await;
        assert_eq!(code, -32602, "{tool} {params}: {message}");
        assert!(message.contains(reason), "{tool} {params}: {message}");
    }
    assert_eq!(entries(&mut client, &run).await, [], "nothing recorded");
    let commands = [
        ("sh", "/usr/bin/make -C ../lib"),
        ("env", "../configure --help"),
        ("ask_user", "/usr or /opt?"),
    ];
    for (tool, text) in commands {
        client.ok(tool, json!({"run": run, "path": text})).await;
    }
    let detail = client.ok("getRun", json!({"run": run})).await;
    let proposed: Vec<Value> = detail["context"]["history"]
        .as_array()
        .unwrap()
        .iter()
        .map(|row| json!([row["body"], row["status"]]))
        .collect();
    let expected: Vec<Value> = commands
        .iter()
        .map(|(_, text)| json!([text, 202]))
        .collect();
    assert_eq!(proposed, expected, "each command is proposed as given");
}

#[actix_web::test]
async fn entry_tools_change_knowledge_at_once() {
    let app = TestApp::start().await;
    let (mut client, _) = app.client_in_project("knowledge").await;
    client.add_model("grok").await;
    let run = client.start_run("grok").await;
    let ok = json!({"status": "ok"});
    let calls = [
        (
            "set",
            json!({"path": "known://plan", "body": "ship friday"}),
        ),
        (
            "known",
            json!({"path": "known://db", "body": "postgres 16"}),
        ),
        ("known", json!({"path": "region", "body": "eu-west"})),
        ("unknown", json!({"path": "who owns the pager?"})),
        ("cp", json!({"path": "known://plan", "to": "known://draft"})),
        ("mv", json!({"path": "known://draft", "to": "known://old"})),
        ("rm", json!({"path": "known://old"})),
        (
            "set",
            json!({"path": "known://*", "attributes": {"fidelity": "summary"}}),
        ),
    ];
    for (tool, mut params) in calls {
        params["run"] = json!(run);
        assert_eq!(client.ok(tool, params.clone()).await, ok, "{tool} {params}");
    }
    let listed = entries(&mut client, &run).await;
    let knowledge: Vec<(&str, &str)> = listed
        .iter()
        .filter(|(path, _, _)| path.starts_with("known://") || path.starts_with("unknown://"))
        .map(|(path, _, fidelity)| (path.as_str(), fidelity.as_str()))
        .collect();
    assert_eq!(
        knowledge,
        [
            ("known://db", "summary"),
            ("known://plan", "summary"),
            ("known://region", "summary"),
            ("unknown://who%20owns%20the%20pager%3F", "full"),
        ],
        "{listed:?}"
    );
    for (path, body) in [
        ("known://plan", "ship friday"),
        ("known://db", "postgres 16"),
        ("known://region", "eu-west"),
        (
            "unknown://who%20owns%20the%20pager%3F",
            "who owns the pager?",
        ),
    ] {
        assert_eq!(
            history_row(&mut client, &run, path).await["body"],
            json!(body)
        );
    }
    for result in [
        "set://turn_1/known%3A//plan",
        "cp://turn_1/known%3A//plan",
        "mv://turn_1/known%3A//draft",
        "rm://turn_1/known%3A//old",
        "set://turn_1/known%3A//*",
    ] {
        assert_eq!(
            status_of(&listed, result),
            Some(200),
            "{result}: {listed:?}"
        );
    }
    let detail = client.ok("getRun", json!({"run": run})).await;
    assert_eq!(
        detail["status"],
        json!(100),
        "no loop ran, nothing proposed"
    );
}

#[actix_web::test]
async fn commands_questions_and_file_changes_become_proposals() {
    let llm = FakeLlm::builder([Step::reply("<summarize>looked</summarize>")])
        .when_exhausted(WhenExhausted::Error(500))
        .start();
    let app = TestApp::with_llm(&llm, &[]).await;
    let (mut client, root) = app.client_in_project("proposals").await;
    std::fs::write(root.join("app.js"), "const port = 3000;\n").unwrap();
    let scanned = client
        .ok("act", json!({"model": "fake", "prompt": "look around"}))
        .await;
    let run = scanned["run"].as_str().unwrap().to_string();
    let calls = [
        (
            "sh",
            json!({"path": "npm test", "attributes": {"command": "npm test"}}),
        ),
        ("env", json!({"path": "node --version"})),
        (
            "ask_user",
            json!({"path": "Which db?", "attributes": {"options": "pg; sqlite"}}),
        ),
        ("set", json!({"path": "src/new.js", "body": "let x;"})),
        ("rm", json!({"path": "app.js"})),
        ("cp", json!({"path": "app.js", "to": "app.backup.js"})),
    ];
    for (tool, mut params) in calls {
        params["run"] = json!(run);
        client.ok(tool, params).await;
    }
    let expected = [
        (
            "sh://turn_2/npm%20test",
            "npm test",
            json!({"command": "npm test"}),
        ),
        (
            "env://turn_2/node%20--version",
            "node --version",
            json!({"command": "node --version"}),
        ),
        (
            "ask_user://turn_2/Which%20db%3F",
            "Which db?",
            json!({"question": "Which db?", "options": ["pg", "sqlite"]}),
        ),
        ("rm://turn_2/app.js", "app.js", json!({"path": "app.js"})),
    ];
    for (path, body, attributes) in expected {
        let row = history_row(&mut client, &run, path).await;
        assert_eq!(row["status"], json!(202), "{row}");
        assert_eq!(row["body"], json!(body), "{row}");
        for (key, value) in attributes.as_object().unwrap() {
            assert_eq!(&row["attributes"][key], value, "{path}: {row}");
        }
    }
    let write = history_row(&mut client, &run, "set://turn_2/src/new.js").await;
    assert_eq!(write["status"], json!(202));
    assert!(write["attributes"]["merge"]
        .as_str()
        .unwrap()
        .contains("let x;"));
    let copy = history_row(&mut client, &run, "cp://turn_2/app.js").await;
    assert_eq!(copy["status"], json!(202), "{copy}");
    assert_eq!(copy["attributes"]["to"], json!("app.backup.js"));
    let detail = client.ok("getRun", json!({"run": run})).await;
    assert_eq!(
        detail["status"],
        json!(200),
        "client proposals leave the status alone"
    );
    assert_eq!(llm.requests().len(), 1);
}

/// A client call acts for the run's latest loop: what that loop's mode and flags exclude is
/// refused (403) for the client too.
#[actix_web::test]
async fn tool_methods_follow_the_latest_loops_mode_and_flags() {
    let llm = FakeLlm::builder([Step::reply("<summarize>fine</summarize>")])
        .when_exhausted(WhenExhausted::Error(500))
        .start();
    let app = TestApp::with_llm(&llm, &[]).await;
    let (mut client, _) = app.client_in_project("policy").await;
    let asked = client
        .ok(
            "ask",
            json!({"model": "fake", "prompt": "hi", "noInteraction": true}),
        )
        .await;
    let run = asked["run"].as_str().unwrap().to_string();
    for (tool, path) in [("sh", "make"), ("ask_user", "Go?"), ("env", "ls")] {
        client.ok(tool, json!({"run": run, "path": path})).await;
    }
    let listed = entries(&mut client, &run).await;
    assert_eq!(
        status_of(&listed, "sh://turn_2/make"),
        Some(403),
        "ask mode"
    );
    assert_eq!(
        status_of(&listed, "ask_user://turn_2/Go%3F"),
        Some(403),
        "noInteraction"
    );
    assert_eq!(
        status_of(&listed, "env://turn_2/ls"),
        Some(202),
        "allowed: {listed:?}"
    );
}

/// PROTOCOL §6.6 scenario 10: client tool calls leave a proposal; the next `ask` on the run
/// is blocked by it without calling the model.
#[actix_web::test]
async fn a_client_proposal_blocks_the_next_ask_without_calling_the_model() {
    let llm = FakeLlm::builder([])
        .when_exhausted(WhenExhausted::Error(500))
        .start();
    let app = TestApp::with_llm(&llm, &[]).await;
    let (mut client, _) = app.client_in_project("scenario").await;
    let run = client.start_run("fake").await;
    client
        .ok("set", json!({"run": run, "path": "known://a", "body": "x"}))
        .await;
    let listed = client
        .ok("getEntries", json!({"run": run, "pattern": "known://*"}))
        .await;
    assert_eq!(listed[0]["path"], json!("known://a"), "{listed}");
    client
        .ok("rm", json!({"run": run, "path": "known://a"}))
        .await;
    let listed = client
        .ok("getEntries", json!({"run": run, "pattern": "known://*"}))
        .await;
    assert_eq!(listed, json!([]));
    client.ok("sh", json!({"run": run, "path": "ls"})).await;
    let blocked = client
        .ok(
            "ask",
            json!({"model": "fake", "prompt": "go on", "run": run}),
        )
        .await;
    assert_eq!(blocked["run"], json!(run));
    assert_eq!(blocked["status"], json!(202), "{blocked}");
    assert_eq!(blocked["remainingCount"], json!(1), "{blocked}");
    let proposed = blocked["proposed"].as_array().unwrap();
    assert_eq!(proposed.len(), 1, "{blocked}");
    assert_eq!(proposed[0]["path"], json!("sh://turn_1/ls"));
    assert_eq!(proposed[0]["body"], json!("ls"));
    assert!(
        proposed[0]["attributes"].is_string(),
        "a JSON string: {blocked}"
    );
    assert_eq!(llm.requests().len(), 0, "the model is never called");
    let detail = client.ok("getRun", json!({"run": run})).await;
    assert_eq!(detail["status"], json!(100), "no loop started");
}
