//! MCP servers that take each person's own credential (`personal` in `mcp.toml`), against
//! the real test MCP server (`tests/data/mcp_server.py`, which logs each call with the
//! credential it was reached with) and the scripted model: two people's runs reach one
//! server each with their own credential, on a connection of their own (a stdio server:
//! the variable of their own process; an HTTP one: the header of each request); a run of a
//! person without one is refused (403) and the server sees no call; a changed credential
//! reaches a new connection; `mcpCredentials/list` never shows a value; each change and
//! each connection made is audited; the store, the server's log, the frames logged, the
//! entries and the packets hold no credential.

use std::path::Path;

use rummy::testing::fake_llm::{FakeLlm, Step};
use serde_json::{json, Value};

use crate::mcp::{body, logged, script, HttpServer};
use crate::personal_keys::{files_under, holds, team};
use crate::process::LoggedServer;
use crate::support::{llm_env, system_message, Client, TestApp};

const MO_FIRST: &str = "mo-cred-1f2e3d";
const MO_SECOND: &str = "mo-cred-9a8b7c";
const OLGA: &str = "olga-cred-4c5d6e";

/// The reply that calls the server's read-only tool, then the summary.
fn lookup_then_done() -> [Step; 2] {
    [
        Step::reply(
            "<mcp_tracker tool=\"lookup\">{\"query\": \"x\"}</mcp_tracker><update>looking</update>",
        ),
        Step::reply("<summarize>done</summarize>"),
    ]
}

async fn member(url: &str, name: &str, root: &Path) -> Client {
    let mut client = Client::connect(&format!("{url}?token={name}-token")).await;
    client.init("web", root).await;
    client
}

/// Sets the client's person's credential for `tracker`.
async fn set(client: &mut Client, value: &str) {
    let params = json!({"server": "tracker", "value": value});
    client.ok("mcpCredentials/set", params).await;
}

/// Asks for a lookup; the run, once done.
async fn ask(client: &mut Client) -> String {
    let result = client
        .ok("ask", json!({"model": "fake", "prompt": "look it up"}))
        .await;
    assert_eq!(result["status"], json!(200), "{result}");
    result["run"].as_str().unwrap().to_owned()
}

/// The lines of the MCP server's log that start with `prefix`.
fn lines(log: &Path, prefix: &str) -> Vec<String> {
    logged(log)
        .lines()
        .filter(|line| line.starts_with(prefix))
        .map(str::to_owned)
        .collect()
}

/// `admin/changes` as (action, by, subject), and its text.
async fn changes(admin: &mut Client) -> (Vec<(String, String, String)>, String) {
    let changes = admin.ok("admin/changes", json!({})).await;
    let rows = changes["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|change| {
            let text = |field: &str| change[field].as_str().unwrap_or("").to_owned();
            (text("action"), text("by"), text("subject"))
        })
        .collect();
    (rows, changes.to_string())
}

#[actix_web::test]
async fn each_persons_runs_reach_a_personal_stdio_server_with_their_own_credential() {
    let llm = FakeLlm::start(
        [
            lookup_then_done(),
            lookup_then_done(),
            lookup_then_done(),
            lookup_then_done(),
        ]
        .concat(),
    );
    let home = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let log = outside.path().join("mcp.log");
    let users = team(home.path());
    let config = format!(
        "[[server]]\nname = \"tracker\"\ncommand = \"python3\"\nargs = [\"-u\", {script:?}]\n\
         env = {{ MCP_LOG = {log:?}, MCP_RECORD_AS = \"TRACKER_TOKEN\" }}\n\
         personal = {{ env = \"TRACKER_TOKEN\" }}\n\n\
         [[server]]\nname = \"shared\"\ncommand = \"python3\"\nargs = [\"-u\", {script:?}]\n\
         env = {{ MCP_LOG = {log:?} }}\nprojects = [\"elsewhere\"]\n",
        script = script(),
        log = log.display().to_string(),
    );
    std::fs::write(home.path().join("mcp.toml"), config).unwrap();
    let root = home.path().join("project-web");
    std::fs::create_dir_all(&root).unwrap();
    let mut env = llm_env(&llm);
    env.extend_from_slice(&[
        ("RUMMY_USERS_FILE", users.as_str()),
        ("RUMMY_LOG", "debug"),
        ("RUMMY_DEBUG", "true"),
    ]);
    let server = LoggedServer::start(home, &env).await;
    let url = server.url();
    let mut mo = member(&url, "mo", &root).await;
    let mut olga = member(&url, "olga", &root).await;
    let mut ada = member(&url, "ada", &root).await;

    let unknown = mo
        .call(
            "mcpCredentials/set",
            json!({"server": "nope", "value": "x"}),
        )
        .await;
    assert_eq!(unknown["error"]["code"], json!(-32602), "{unknown}");
    assert!(unknown.to_string().contains("\\\"nope\\\""), "{unknown}");
    let shared = mo
        .call(
            "mcpCredentials/set",
            json!({"server": "shared", "value": "x"}),
        )
        .await;
    assert_eq!(shared["error"]["code"], json!(-32602), "{shared}");
    set(&mut mo, MO_FIRST).await;
    set(&mut olga, OLGA).await;

    let mo_run = ask(&mut mo).await;
    let olga_run = ask(&mut olga).await;
    let calls = lines(&log, "call lookup");
    assert_eq!(
        calls,
        [
            format!("call lookup {{\"query\": \"x\"}} as {MO_FIRST}"),
            format!("call lookup {{\"query\": \"x\"}} as {OLGA}"),
        ]
    );
    let path = "mcp_tracker://turn_1/lookup";
    assert_eq!(
        mo.statuses(&mo_run, "mcp_tracker://*").await,
        [(path.into(), 200)]
    );
    assert_eq!(
        olga.statuses(&olga_run, "mcp_tracker://*").await,
        [(path.into(), 200)]
    );

    let ada_run = ask(&mut ada).await;
    assert_eq!(
        ada.statuses(&ada_run, "mcp_tracker://*").await,
        [(path.into(), 403)]
    );
    let refusal = body(&mut ada, &ada_run, path).await;
    assert!(
        refusal.contains("server tracker") && refusal.contains("ada has none"),
        "{refusal}"
    );
    assert!(refusal.contains("mcpCredentials/set"), "{refusal}");
    assert_eq!(
        lines(&log, "call lookup").len(),
        2,
        "ada's call reached no server"
    );
    let packets = llm.requests();
    let ada_packet = system_message(&packets[4]);
    assert!(
        ada_packet.contains("they have none for it"),
        "the catalogue says why: {ada_packet}"
    );
    assert!(system_message(&packets[0]).contains("tool=\"lookup\""));

    let starts = lines(&log, "start pid").len();
    set(&mut mo, MO_SECOND).await;
    ask(&mut mo).await;
    let calls = lines(&log, "call lookup");
    assert_eq!(
        calls.last().unwrap(),
        &format!("call lookup {{\"query\": \"x\"}} as {MO_SECOND}")
    );
    assert_eq!(
        lines(&log, "start pid").len(),
        starts + 1,
        "a new process for the new credential"
    );

    let listed = mo.ok("mcpCredentials/list", json!({})).await;
    assert_eq!(listed["servers"], json!(["tracker"]), "{listed}");
    let credentials = listed["credentials"].as_array().unwrap();
    assert_eq!(credentials.len(), 1, "{listed}");
    assert_eq!(credentials[0]["server"], json!("tracker"));
    assert!(credentials[0]["lastUsedAt"].is_string(), "{listed}");
    assert!(!listed.to_string().contains("mo-cred"), "{listed}");
    let removed = mo
        .ok("mcpCredentials/remove", json!({"server": "tracker"}))
        .await;
    assert_eq!(removed["removed"], json!(true));

    let (rows, text) = changes(&mut ada).await;
    let count = |action: &str, by: &str| {
        rows.iter()
            .filter(|(its, who, _)| its == action && who == by)
            .count()
    };
    assert_eq!(count("mcpCredentials/set", "mo"), 2, "{text}");
    assert_eq!(count("mcpCredentials/set", "olga"), 1, "{text}");
    assert_eq!(count("mcp/credential", "mo"), 2, "{text}");
    assert_eq!(count("mcp/credential", "olga"), 1, "{text}");
    assert_eq!(count("mcp/credential", "ada"), 0, "{text}");
    assert_eq!(count("mcpCredentials/remove", "mo"), 1, "{text}");
    assert!(text.contains("tracker"), "{text}");

    let secrets = [MO_FIRST, MO_SECOND, OLGA];
    for secret in secrets {
        assert!(!text.contains(secret), "{secret} in the audit");
        for (file, bytes) in files_under(server.home()) {
            assert!(!holds(&bytes, secret), "{secret} in {}", file.display());
        }
        for packet in llm.requests() {
            assert!(!packet.to_string().contains(secret), "{secret} in a packet");
        }
        for (run, client) in [(&mo_run, &mut mo), (&olga_run, &mut olga)] {
            let detail = client.ok("getRun", json!({"run": run})).await;
            assert!(!detail.to_string().contains(secret), "{secret} in {run}");
        }
    }
    let server_log = server.stop().await;
    assert!(
        server_log.contains("mcpCredentials/set"),
        "the frames were logged: {server_log}"
    );
    for secret in secrets {
        assert!(!server_log.contains(secret), "{secret} in the server's log");
    }
}

#[actix_web::test]
async fn each_persons_requests_to_a_personal_http_server_carry_their_own_header() {
    let llm = FakeLlm::start([lookup_then_done(), lookup_then_done()].concat());
    let outside = tempfile::tempdir().unwrap();
    let log = outside.path().join("mcp.log");
    let http = HttpServer::recording(&log, "Authorization");
    let home = tempfile::tempdir().unwrap();
    let users = team(home.path());
    let config = format!(
        "[[server]]\nname = \"tracker\"\nurl = \"http://127.0.0.1:{}/mcp\"\n\
         personal = {{ header = \"Authorization\", prefix = \"Bearer \" }}\n",
        http.port
    );
    std::fs::write(home.path().join("mcp.toml"), config).unwrap();
    let mut env = llm_env(&llm);
    env.push(("RUMMY_USERS_FILE", users.as_str()));
    let app = TestApp::start_in(home, &env, |plugins| plugins).await;
    let root = app.project_root("web");
    let url = format!("ws://{}/", app.addr());
    let mut mo = member(&url, "mo", &root).await;
    let mut olga = member(&url, "olga", &root).await;
    set(&mut mo, MO_FIRST).await;
    set(&mut olga, OLGA).await;
    assert!(
        lines(&log, "authorization").is_empty(),
        "no connection before a run"
    );
    ask(&mut mo).await;
    ask(&mut olga).await;
    assert_eq!(
        lines(&log, "call lookup"),
        [
            format!("call lookup {{\"query\": \"x\"}} as Bearer {MO_FIRST}"),
            format!("call lookup {{\"query\": \"x\"}} as Bearer {OLGA}"),
        ]
    );
    let carried = lines(&log, "authorization");
    assert!(
        carried
            .iter()
            .all(|line| *line == format!("authorization Bearer {MO_FIRST}")
                || *line == format!("authorization Bearer {OLGA}")),
        "every request carried one person's own header: {carried:?}"
    );
    let servers: Value = mo.ok("getMcpServers", json!({})).await;
    assert_eq!(servers[0]["personal"], json!(true), "{servers}");
    assert_eq!(servers[0]["connected"], json!(true), "mo's own: {servers}");
}

#[actix_web::test]
async fn a_personal_server_an_admin_adds_is_reached_with_each_persons_credential() {
    let llm = FakeLlm::start(lookup_then_done());
    let home = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let log = outside.path().join("mcp.log");
    let users = team(home.path());
    let root = home.path().join("project-web");
    std::fs::create_dir_all(&root).unwrap();
    let file = home.path().join("mcp.toml");
    let mut env = llm_env(&llm);
    env.push(("RUMMY_USERS_FILE", users.as_str()));
    let app = TestApp::start_in(home, &env, |plugins| plugins).await;
    let url = format!("ws://{}/", app.addr());
    let mut ada = member(&url, "ada", &root).await;
    let mut mo = member(&url, "mo", &root).await;
    let server = |personal: Value| {
        json!({
            "name": "tracker",
            "command": "python3",
            "args": ["-u", script()],
            "env": {"MCP_LOG": log.display().to_string(), "MCP_RECORD_AS": "TRACKER_TOKEN"},
            "personal": personal,
        })
    };

    let (code, message) = ada
        .err("mcp/add", server(json!({"header": "Authorization"})))
        .await;
    assert_eq!(code, -32602, "{message}");
    assert!(message.contains("{ env } for a command"), "{message}");
    ada.ok("mcp/add", server(json!({"env": "TRACKER_TOKEN"})))
        .await;
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(
        text.contains("personal = { env = \"TRACKER_TOKEN\" }"),
        "{text}"
    );

    set(&mut mo, MO_FIRST).await;
    ask(&mut mo).await;
    assert_eq!(
        lines(&log, "call lookup"),
        [format!("call lookup {{\"query\": \"x\"}} as {MO_FIRST}")]
    );
    let (rows, _) = changes(&mut ada).await;
    let added = rows
        .iter()
        .find(|(action, ..)| action == "mcp/add")
        .unwrap();
    assert_eq!(added.2, "tracker");
}
