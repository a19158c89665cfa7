//! Admins change the configured MCP servers (`mcp/add`, `mcp/remove`, `mcp/restart`):
//! `mcp.toml` edited keeping its comments, the change made to the running servers at once,
//! audited with the names of the env keys only.

use std::path::{Path, PathBuf};

use rummy::testing::fake_llm::{FakeLlm, Step};
use serde_json::{json, Value};

use super::{connect, server};
use crate::support::{eventually, system_message, user_message, Client};

/// The `mcp/add` params of the test MCP server (`tests/data/mcp_server.py`) as `glossary`,
/// logging to `log`.
fn glossary(log: &Path) -> Value {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/mcp_server.py");
    json!({
        "name": "glossary",
        "command": "python3",
        "args": ["-u", script.display().to_string()],
        "env": {"MCP_LOG": log.display().to_string()},
    })
}

/// The servers `getMcpServers` lists once `done` holds of them.
async fn servers_when(client: &mut Client, done: impl Fn(&[Value]) -> bool) -> Vec<Value> {
    eventually("getMcpServers to show the change", async || {
        let servers = client.ok("getMcpServers", json!({})).await;
        let servers = servers.as_array().cloned().unwrap_or_default();
        done(&servers).then_some(servers)
    })
    .await
}

fn connected(servers: &[Value]) -> bool {
    servers.len() == 1 && servers[0]["connected"] == json!(true)
}

/// The pids the test server logged starting with.
fn starts(log: &PathBuf) -> Vec<String> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter_map(|line| line.strip_prefix("start pid "))
        .map(str::to_owned)
        .collect()
}

#[actix_web::test]
async fn only_admins_change_mcp_servers_and_bad_input_says_why() {
    let llm = FakeLlm::start([]);
    let (app, _file, _dir) = server(&llm, &[]).await;
    let log = app.home().join("mcp.log");
    let mut mo = connect(&app, "mo-token").await;
    let catalogue = mo.ok("discover", json!({})).await;
    for (method, params) in [
        ("mcp/add", glossary(&log)),
        ("mcp/remove", json!({"name": "glossary"})),
        ("mcp/restart", json!({"name": "glossary"})),
    ] {
        assert_eq!(catalogue["methods"][method]["role"], json!("admin"));
        let (code, message) = mo.err(method, params).await;
        assert_eq!(code, -32005, "{method}: {message}");
    }
    assert!(!app.home().join("mcp.toml").exists());
    let mut ada = connect(&app, "ada-token").await;
    let refusals = [
        (
            "mcp/add",
            json!({"name": "Bad-Name", "command": "x"}),
            "name must be",
        ),
        (
            "mcp/add",
            json!({"name": "a", "command": "x", "url": "http://h"}),
            "either command",
        ),
        ("mcp/add", json!({"name": "a"}), "either command"),
        (
            "mcp/remove",
            json!({"name": "nope"}),
            "nope is not a server of mcp.toml",
        ),
        (
            "mcp/restart",
            json!({"name": "nope"}),
            "nope is not a running MCP server",
        ),
    ];
    for (method, params, why) in refusals {
        let (code, message) = ada.err(method, params.clone()).await;
        assert_eq!(code, -32602, "{method} {params}: {message}");
        assert!(message.contains(why), "{method} {params}: {message}");
    }
    assert!(!app.home().join("mcp.toml").exists(), "nothing written");
    let changes = ada.ok("admin/changes", json!({})).await;
    assert_eq!(changes, json!({"changes": []}));
}

#[actix_web::test]
async fn an_admin_adds_restarts_and_removes_a_server_and_the_model_sees_it() {
    let llm = FakeLlm::start([
        Step::reply(
            "<mcp_glossary tool=\"lookup\">{\"query\": \"rummy\"}</mcp_glossary><update>looking</update>",
        ),
        Step::reply("<summarize>one</summarize>"),
        Step::reply("<summarize>two</summarize>"),
    ]);
    let (app, _file, _dir) = server(&llm, &[]).await;
    let home = app.home().to_owned();
    let file = home.join("mcp.toml");
    let log = home.join("mcp.log");
    let comments = "# Our MCP servers.\n# Ask ada before adding one.\n";
    std::fs::write(&file, comments).unwrap();
    let mut ada = connect(&app, "ada-token").await;

    let added = ada.ok("mcp/add", glossary(&log)).await;
    assert_eq!(added, json!({"name": "glossary", "tag": "mcp_glossary"}));
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(text.starts_with(comments), "{text}");
    assert!(text.contains("name = \"glossary\""), "{text}");
    let (code, message) = ada.err("mcp/add", glossary(&log)).await;
    assert_eq!(code, -32004, "{message}");
    assert!(
        message.contains("glossary is already a server"),
        "{message}"
    );
    let servers = servers_when(&mut ada, connected).await;
    assert_eq!(servers[0]["tools"].as_array().unwrap().len(), 6);
    let secret = log.display().to_string();
    assert!(!Value::from(servers.clone()).to_string().contains(&secret));

    // Offered from the next turn, without a restart: the model reads its tools and calls one.
    let asked = ada
        .ok("ask", json!({"model": "fake", "prompt": "what is rummy?"}))
        .await;
    assert_eq!(asked["status"], json!(200), "{asked}");
    let run = asked["run"].as_str().unwrap();
    assert_eq!(
        ada.statuses(run, "mcp_glossary://*").await,
        [("mcp_glossary://turn_1/lookup".to_string(), 200)]
    );
    let requests = llm.requests();
    let first = system_message(&requests[0]);
    assert!(
        first.contains("### <mcp_glossary tool=\"lookup\">\nLook a word up in the glossary."),
        "{first}"
    );
    let next = format!(
        "{}{}",
        system_message(&requests[1]),
        user_message(&requests[1])
    );
    assert!(next.contains("glossary: rummy means a card game"), "{next}");

    let first = starts(&log);
    assert_eq!(first.len(), 1, "{first:?}");
    assert_eq!(
        ada.ok("mcp/restart", json!({"name": "glossary"})).await,
        json!({"restarted": "glossary"})
    );
    let again = eventually("the server to start again", async || {
        let pids = starts(&log);
        (pids.len() == 2).then_some(pids)
    })
    .await;
    assert_ne!(again[0], again[1]);
    servers_when(&mut ada, connected).await;

    let changes = ada.ok("admin/changes", json!({})).await;
    let said = changes.to_string();
    assert!(!said.contains(&secret), "no env value audited: {said}");
    let changes = changes["changes"].as_array().unwrap();
    assert_eq!(
        (
            &changes[1]["action"],
            &changes[1]["by"],
            &changes[1]["subject"]
        ),
        (&json!("mcp/add"), &json!("ada"), &json!("glossary"))
    );
    assert_eq!(changes[1]["detail"]["envKeys"], json!(["MCP_LOG"]));
    assert_eq!(changes[0]["action"], json!("mcp/restart"));

    // Removed: no longer offered from the next turn.
    assert_eq!(
        ada.ok("mcp/remove", json!({"name": "glossary"})).await,
        json!({"removed": "glossary"})
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), comments);
    assert_eq!(ada.ok("getMcpServers", json!({})).await, json!([]));
    let asked = ada
        .ok("ask", json!({"model": "fake", "prompt": "hi"}))
        .await;
    assert_eq!(asked["status"], json!(200), "{asked}");
    assert!(!system_message(&llm.requests()[2]).contains("mcp_glossary"));
    let changes = ada.ok("admin/changes", json!({"limit": 1})).await;
    assert_eq!(changes["changes"][0]["action"], json!("mcp/remove"));
}
