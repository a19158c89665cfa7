//! An admin changes the MCP servers from the Admin page in chromium: adds the test MCP
//! server (`tests/data/mcp_server.py`) with an env value the page never shows again, sees
//! it connected with its tools, restarts it (its process starts again) and removes it after
//! a confirmation (gone from `mcp.toml`); each change is audited.

use serde_json::json;

use super::{browse, team_server};
use crate::support::Client;
use rummy::testing::fake_llm::FakeLlm;

#[actix_web::test]
#[ignore = "needs Debian's chromium and Playwright in tests/console/.venv: tests/run.sh installs both"]
async fn an_admin_adds_restarts_and_removes_an_mcp_server_from_the_admin_page() {
    let llm = FakeLlm::start([]);
    let (app, _users) = team_server(&llm, &[]).await;
    let log = app.home().join("mcp.log");
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/mcp_server.py");
    // The page shows the servers as a project sees them: one exists.
    let mut ada = Client::connect(&format!("ws://{}/?token=ada-token", app.addr())).await;
    ada.init("web", &app.project_root("web")).await;
    browse(
        "mcp",
        format!("http://{}/ui/", app.addr()),
        &[
            ("ADA", "ada-token".into()),
            ("MCP_SCRIPT", script.display().to_string()),
            ("MCP_LOG", log.display().to_string()),
        ],
    )
    .await;
    let file = std::fs::read_to_string(app.home().join("mcp.toml")).unwrap();
    assert!(file.contains("name = \"docs\""), "{file}");
    assert!(!file.contains("glossary"), "{file}");
    let changes = ada.ok("admin/changes", json!({"limit": 3})).await;
    let actions: Vec<_> = changes["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|change| (change["action"].clone(), change["subject"].clone()))
        .collect();
    assert_eq!(
        actions,
        [
            (json!("mcp/remove"), json!("glossary")),
            (json!("mcp/restart"), json!("glossary")),
            (json!("mcp/add"), json!("glossary")),
        ]
    );
    assert_eq!(
        changes["changes"][2]["detail"]["envKeys"],
        json!(["MCP_LOG"])
    );
    assert!(!changes.to_string().contains(&log.display().to_string()));
    let started = std::fs::read_to_string(&log).unwrap();
    let starts = started
        .lines()
        .filter(|line| line.starts_with("start pid "))
        .count();
    assert_eq!(starts, 2, "started, then restarted: {started}");
}
