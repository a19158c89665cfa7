//! A member keeps their own credentials for the MCP servers that take each person's own on
//! the Keys page in chromium (two such servers, added by an admin with `mcp/add`): sets one,
//! replaces it, sets and removes the other; the page never shows a value, and the member's
//! next run reaches the server with the credential the page set last.

use serde_json::json;

use super::{browse, team_server};
use crate::mcp::{logged, script};
use crate::support::Client;
use rummy::testing::fake_llm::{FakeLlm, Step};

const FIRST: &str = "tracker-cred-5a1f0e";
const SECOND: &str = "tracker-cred-c3d2b1";

#[actix_web::test]
#[ignore = "needs Debian's chromium and Playwright in tests/console/.venv: tests/run.sh installs both"]
async fn a_person_keeps_their_mcp_credentials_in_the_keys_page_and_their_runs_carry_them() {
    let llm = FakeLlm::start([
        Step::reply(
            "<mcp_tracker tool=\"lookup\">{\"query\": \"x\"}</mcp_tracker><update>looking</update>",
        ),
        Step::reply("<summarize>done</summarize>"),
    ]);
    let (app, _users) = team_server(&llm, &[]).await;
    let outside = tempfile::tempdir().unwrap();
    let log = outside.path().join("mcp.log");
    let mut ada = Client::connect(&format!("ws://{}/?token=ada-token", app.addr())).await;
    for (name, variable) in [("tracker", "TRACKER_TOKEN"), ("wiki", "WIKI_TOKEN")] {
        let server = json!({
            "name": name,
            "command": "python3",
            "args": ["-u", script()],
            "env": {"MCP_LOG": log.display().to_string(), "MCP_RECORD_AS": variable},
            "personal": {"env": variable},
        });
        ada.ok("mcp/add", server).await;
    }
    browse(
        "mcp-credentials",
        format!("http://{}/ui/", app.addr()),
        &[
            ("MO", "mo-token".into()),
            ("FIRST", FIRST.into()),
            ("SECOND", SECOND.into()),
        ],
    )
    .await;
    let mut mo = Client::connect(&format!("ws://{}/?token=mo-token", app.addr())).await;
    mo.init("web", &app.project_root("web")).await;
    let listed = mo.ok("mcpCredentials/list", json!({})).await;
    let servers: Vec<&str> = listed["credentials"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|credential| credential["server"].as_str())
        .collect();
    assert_eq!(servers, ["tracker"], "{listed}");
    let outcome = mo
        .ok("ask", json!({"model": "fake", "prompt": "look it up"}))
        .await;
    assert_eq!(outcome["status"], json!(200), "{outcome}");
    let calls: Vec<String> = logged(&log)
        .lines()
        .filter(|line| line.starts_with("call lookup"))
        .map(str::to_owned)
        .collect();
    assert_eq!(
        calls,
        [format!("call lookup {{\"query\": \"x\"}} as {SECOND}")]
    );
}
