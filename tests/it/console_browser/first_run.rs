//! A newcomer's first run in chromium, from an empty home (no model, no project): the
//! operator signs in, adds the scripted model from the Admin page with a key and a price,
//! tests it (the model sees one call carrying the key, the page shows its reply), makes a
//! project of the one folder under the projects directory, asks a first question, opens
//! its run and watches the answer come in as the model writes it (part of it shown before
//! the whole). The key is never in `getModels` nor in the page.

use std::time::Duration;

use rummy::testing::fake_llm::{FakeLlm, Reply, Step};
use serde_json::json;

use super::{browse, NEEDS};
use crate::support::{Client, TestApp};

const KEY: &str = "sk-newcomer-4d1c9e";

/// The model's answer to the first question, written slowly enough to be watched.
const ANSWER: &str = "It serves a web page on port 3000. The server is one file, server.js, \
which listens on that port and answers every request with the same page; there is no \
database and no configuration to read, so starting it is all it needs.";

#[actix_web::test]
#[ignore = "needs Debian's chromium and Playwright in tests/console/.venv: tests/run.sh installs both"]
async fn a_newcomer_adds_a_model_makes_a_project_and_asks_from_an_empty_home() {
    let _ = NEEDS;
    let llm = FakeLlm::start([
        Step::reply("Ready when you are."),
        Step::Paced(
            Reply::new(format!("<summarize>{ANSWER}</summarize>")),
            Duration::from_millis(60),
        ),
    ]);
    let projects = tempfile::tempdir().unwrap();
    let projects_dir = std::fs::canonicalize(projects.path()).unwrap();
    let folder = projects_dir.join("app");
    std::fs::create_dir(&folder).unwrap();
    std::fs::write(folder.join("server.js"), "listen(3000);\n").unwrap();
    let dirs = projects_dir.display().to_string();
    let app = TestApp::start_with(&[
        ("RUMMY_AUTH_TOKEN", "first-token"),
        ("RUMMY_PROJECTS_DIR", dirs.as_str()),
        ("RUMMY_LLM_ATTEMPTS", "1"),
        ("RUMMY_MEMORY_SESSION_TOKENS", "0"),
    ])
    .await;

    browse(
        "first-run",
        format!("http://{}/ui/", app.addr()),
        &[
            ("TOKEN", "first-token".into()),
            ("FAKE_URL", llm.base_url().into()),
            ("KEY", KEY.into()),
            ("FOLDER", folder.display().to_string()),
            ("ANSWER", ANSWER.into()),
        ],
    )
    .await;

    let calls = llm.recorded();
    assert_eq!(calls.len(), 2, "the test and the question: {calls:?}");
    let bearer = format!("Bearer {KEY}");
    for call in &calls {
        assert_eq!(call.header("authorization"), Some(bearer.as_str()));
    }
    assert!(calls[0].body["messages"]
        .to_string()
        .contains("connection test"));
    assert!(calls[1].body["messages"]
        .to_string()
        .contains("What does this project do?"));
    let mut operator = Client::connect(&format!("ws://{}/?token=first-token", app.addr())).await;
    let models = operator.ok("getModels", json!({})).await;
    assert_eq!(models[0]["keySet"], json!(true), "{models}");
    assert!(!models.to_string().contains(KEY), "{models}");
    let made = operator.ok("getProjects", json!({})).await;
    assert_eq!(made[0]["name"], json!("app"), "{made}");
}
