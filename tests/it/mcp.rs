//! MCP servers as tools, against a real MCP server process (`tests/data/mcp_server.py`,
//! JSON-RPC on stdio) and the scripted model: the tools reach the packet, read-only calls
//! run, changing calls wait for the client, trusted servers do not ask, and a server that
//! hangs, crashes, talks too much or does not serve the project never breaks a loop.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::support::{eventually, system_message, user_message, Client, TestApp};
use rummy::testing::fake_llm::{FakeLlm, Step};

/// The test server's script.
pub(crate) fn script() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/mcp_server.py")
        .display()
        .to_string()
}

/// A home whose `mcp.toml` declares the test server on stdio as `glossary`, with `extra`
/// lines in its table; and the file the server logs to.
fn home_with_server(extra: &str) -> (tempfile::TempDir, PathBuf) {
    let home = tempfile::tempdir().unwrap();
    let log = home.path().join("mcp.log");
    let config = format!(
        "[[server]]\nname = \"glossary\"\ncommand = \"python3\"\nargs = [\"-u\", {script:?}]\n\
         env = {{ MCP_LOG = {log:?} }}\n{extra}\n",
        script = script(),
        log = log.display().to_string(),
    );
    std::fs::write(home.path().join("mcp.toml"), config).unwrap();
    (home, log)
}

/// The test server on streamable HTTP, stopped when dropped.
pub(crate) struct HttpServer {
    child: std::process::Child,
    pub(crate) port: u16,
}

impl HttpServer {
    /// Starts it, logging to `log`.
    pub(crate) fn start(log: &Path) -> HttpServer {
        HttpServer::recording(log, "")
    }

    /// Starts it, logging to `log` each call with the value of the header `header` (none
    /// when empty).
    pub(crate) fn recording(log: &Path, header: &str) -> HttpServer {
        use std::io::BufRead;
        let mut child = std::process::Command::new("python3")
            .args(["-u", &script(), "--http"])
            .env("MCP_LOG", log)
            .env("MCP_RECORD_AS", header)
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let port = line.trim().parse().unwrap();
        HttpServer { child, port }
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// What the server logged so far.
pub(crate) fn logged(log: &Path) -> String {
    std::fs::read_to_string(log).unwrap_or_default()
}

/// Waits until `done` holds of the server's log.
async fn until_logged(log: &Path, done: impl Fn(&str) -> bool) -> String {
    let what = format!("the awaited line in {}", log.display());
    eventually(&what, async || {
        let text = logged(log);
        done(&text).then_some(text)
    })
    .await
}

/// Waits until `getMcpServers` says the server is connected; returns what it says.
async fn until_connected(client: &mut Client) -> Value {
    eventually("getMcpServers to say the server is connected", async || {
        let servers = client.ok("getMcpServers", json!({})).await;
        (servers[0]["connected"] == json!(true)).then_some(servers)
    })
    .await
}

/// A server started in `home`, a client in project `mcp` once the MCP server is up.
async fn connected_app(home: tempfile::TempDir, llm: &FakeLlm) -> (TestApp, Client) {
    let app = TestApp::with_llm_in(home, llm).await;
    let (mut client, _) = app.client_in_project("mcp").await;
    until_connected(&mut client).await;
    (app, client)
}

/// The body of the entry at `path` of `run`, as `getRun` shows it.
pub(crate) async fn body(client: &mut Client, run: &str, path: &str) -> String {
    let detail = client.ok("getRun", json!({"run": run})).await;
    let history = detail["context"]["history"].as_array().unwrap();
    let row = history.iter().find(|row| row["path"] == json!(path));
    let row = row.unwrap_or_else(|| panic!("no {path} in {detail}"));
    row["body"].as_str().unwrap_or_default().to_owned()
}

#[actix_web::test]
async fn the_model_reads_the_tools_and_a_read_only_call_runs() {
    let (home, log) = home_with_server("");
    let llm = FakeLlm::start([
        Step::reply(
            "<mcp_glossary tool=\"lookup\">{\"query\": \"rummy\"}</mcp_glossary><update>looking</update>",
        ),
        Step::reply("<summarize>done</summarize>"),
    ]);
    let (_app, mut client) = connected_app(home, &llm).await;
    let servers = client.ok("getMcpServers", json!({})).await;
    assert_eq!(servers[0]["tag"], json!("mcp_glossary"));
    assert_eq!(servers[0]["enabled"], json!(true));
    let tools = servers[0]["tools"].as_array().unwrap();
    assert_eq!(tools.len(), 6, "{servers}");
    assert_eq!(
        (
            &tools[0]["name"],
            &tools[0]["readOnly"],
            &tools[1]["asksFirst"]
        ),
        (&json!("lookup"), &json!(true), &json!(true))
    );
    let result = client
        .ok("ask", json!({"model": "fake", "prompt": "what is rummy?"}))
        .await;
    assert_eq!(result["status"], json!(200), "{result}");
    let run = result["run"].as_str().unwrap();
    assert_eq!(
        client.statuses(run, "mcp_glossary://*").await,
        [("mcp_glossary://turn_1/lookup".to_string(), 200)]
    );
    let requests = llm.requests();
    let first = system_message(&requests[0]);
    assert!(first.contains("## <mcp_glossary tool="), "{first}");
    assert!(
        first.contains("### <mcp_glossary tool=\"lookup\">\nLook a word up in the glossary."),
        "{first}"
    );
    assert!(first.contains("\"required\":[\"query\"]"), "{first}");
    assert!(first.contains("### <mcp_glossary tool=\"create_issue\"> (asks first)"));
    let next = format!(
        "{}{}",
        system_message(&requests[1]),
        user_message(&requests[1])
    );
    assert!(next.contains("glossary: rummy means a card game"), "{next}");
    assert!(logged(&log).contains("call lookup {\"query\": \"rummy\"}"));
}

#[actix_web::test]
async fn a_changing_call_is_proposed_and_made_only_when_accepted() {
    let (home, log) = home_with_server("");
    let llm = FakeLlm::start([
        Step::reply("<mcp_glossary tool=\"create_issue\">{\"title\": \"Fix it\"}</mcp_glossary>"),
        Step::reply("<summarize>filed</summarize>"),
    ]);
    let (_app, mut client) = connected_app(home, &llm).await;
    let result = client
        .ok("act", json!({"model": "fake", "prompt": "file an issue"}))
        .await;
    assert_eq!(result["status"], json!(202), "{result}");
    let path = result["proposed"][0]["path"].as_str().unwrap().to_owned();
    assert_eq!(path, "mcp_glossary://turn_1/create_issue");
    assert!(
        !logged(&log).contains("create_issue"),
        "called before approval"
    );
    let run = result["run"].as_str().unwrap().to_owned();
    let resolved = client
        .ok(
            "run/resolve",
            json!({"run": run, "resolution": {"path": path, "action": "accept"}}),
        )
        .await;
    assert_eq!(resolved["status"], json!(200), "{resolved}");
    assert!(logged(&log).contains("call create_issue {\"title\": \"Fix it\"}"));
    assert_eq!(
        client.statuses(&run, "mcp_glossary://*").await,
        [(path.clone(), 200)]
    );
    assert_eq!(
        body(&mut client, &run, &path).await,
        "created issue #7: Fix it"
    );
}

#[actix_web::test]
async fn a_rejected_call_is_never_made() {
    let (home, log) = home_with_server("");
    let llm = FakeLlm::start([Step::reply(
        "<mcp_glossary tool=\"create_issue\">{\"title\": \"Nope\"}</mcp_glossary>",
    )]);
    let (_app, mut client) = connected_app(home, &llm).await;
    let result = client
        .ok("act", json!({"model": "fake", "prompt": "file an issue"}))
        .await;
    let run = result["run"].as_str().unwrap().to_owned();
    let path = result["proposed"][0]["path"].as_str().unwrap().to_owned();
    client
        .ok(
            "run/resolve",
            json!({"run": run, "resolution": {"path": path, "action": "reject"}}),
        )
        .await;
    assert_eq!(
        client.statuses(&run, "mcp_glossary://*").await,
        [(path, 403)]
    );
    assert!(!logged(&log).contains("create_issue"));
}

#[actix_web::test]
async fn a_trusted_server_is_called_without_asking() {
    let (home, log) = home_with_server("trusted = true");
    let llm = FakeLlm::start([
        Step::reply(
            "<mcp_glossary tool=\"create_issue\">{\"title\": \"Go\"}</mcp_glossary><update>filing</update>",
        ),
        Step::reply("<summarize>filed</summarize>"),
    ]);
    let (_app, mut client) = connected_app(home, &llm).await;
    let result = client
        .ok("act", json!({"model": "fake", "prompt": "file an issue"}))
        .await;
    assert_eq!(result["status"], json!(200), "{result}");
    let run = result["run"].as_str().unwrap();
    assert_eq!(
        client.statuses(run, "mcp_glossary://*").await,
        [("mcp_glossary://turn_1/create_issue".to_string(), 200)]
    );
    assert!(logged(&log).contains("call create_issue"));
}

#[actix_web::test]
async fn a_hanging_server_times_out_and_the_loop_goes_on() {
    let (home, log) = home_with_server("timeout_secs = 1");
    let llm = FakeLlm::start([
        Step::reply("<mcp_glossary tool=\"hang\"></mcp_glossary><update>waiting</update>"),
        Step::reply("<summarize>gave up</summarize>"),
    ]);
    let (_app, mut client) = connected_app(home, &llm).await;
    let result = client
        .ok("ask", json!({"model": "fake", "prompt": "hang"}))
        .await;
    assert_eq!(result["status"], json!(200), "{result}");
    let run = result["run"].as_str().unwrap();
    let path = "mcp_glossary://turn_1/hang";
    assert_eq!(
        client.statuses(run, "mcp_glossary://*").await,
        [(path.to_string(), 504)]
    );
    assert!(body(&mut client, run, path)
        .await
        .contains("no answer within 1 s"));
    until_logged(&log, |text| text.contains("cancelled")).await;
}

#[actix_web::test]
async fn a_crashed_server_is_a_502_and_comes_back() {
    let (home, log) = home_with_server("");
    let llm = FakeLlm::start([
        Step::reply("<mcp_glossary tool=\"crash\"></mcp_glossary><update>oops</update>"),
        Step::reply("<summarize>it crashed</summarize>"),
        Step::reply(
            "<mcp_glossary tool=\"lookup\">{\"query\": \"again\"}</mcp_glossary><update>again</update>",
        ),
        Step::reply("<summarize>back</summarize>"),
    ]);
    let (_app, mut client) = connected_app(home, &llm).await;
    let result = client
        .ok("ask", json!({"model": "fake", "prompt": "crash"}))
        .await;
    assert_eq!(result["status"], json!(200), "{result}");
    let run = result["run"].as_str().unwrap().to_owned();
    assert_eq!(
        client.statuses(&run, "mcp_glossary://*").await,
        [("mcp_glossary://turn_1/crash".to_string(), 502)]
    );
    until_logged(&log, |text| text.matches("start").count() == 2).await;
    until_connected(&mut client).await;
    let again = client
        .ok(
            "ask",
            json!({"model": "fake", "prompt": "again", "run": run}),
        )
        .await;
    assert_eq!(again["status"], json!(200), "{again}");
    assert_eq!(
        client.statuses(&run, "mcp_glossary://*").await,
        [
            ("mcp_glossary://turn_1/crash".to_string(), 502),
            ("mcp_glossary://turn_3/lookup".to_string(), 200)
        ]
    );
}

#[actix_web::test]
async fn a_long_result_is_cut_with_a_marker() {
    let (home, _log) = home_with_server("max_output_bytes = 100");
    let llm = FakeLlm::start([
        Step::reply("<mcp_glossary tool=\"big\"></mcp_glossary><update>reading</update>"),
        Step::reply("<summarize>read</summarize>"),
    ]);
    let (_app, mut client) = connected_app(home, &llm).await;
    let result = client
        .ok("ask", json!({"model": "fake", "prompt": "big"}))
        .await;
    let run = result["run"].as_str().unwrap();
    assert_eq!(
        body(&mut client, run, "mcp_glossary://turn_1/big").await,
        format!("{}\n[output cut: 100 of 5000 bytes shown]", "x".repeat(100))
    );
}

#[actix_web::test]
async fn a_project_the_server_does_not_serve_is_not_offered_its_tools() {
    let (home, log) = home_with_server("projects = [\"web-*\"]");
    let llm = FakeLlm::start([
        Step::reply(
            "<mcp_glossary tool=\"lookup\">{\"query\": \"x\"}</mcp_glossary><update>trying</update>",
        ),
        Step::reply("<summarize>done</summarize>"),
    ]);
    let (_app, mut client) = connected_app(home, &llm).await;
    let servers = client.ok("getMcpServers", json!({})).await;
    assert_eq!(servers[0]["enabled"], json!(false), "{servers}");
    let result = client
        .ok("ask", json!({"model": "fake", "prompt": "look it up"}))
        .await;
    let run = result["run"].as_str().unwrap();
    assert_eq!(
        client.statuses(run, "mcp_glossary://*").await,
        [("mcp_glossary://turn_1/lookup".to_string(), 403)]
    );
    assert!(!system_message(&llm.requests()[0]).contains("mcp_glossary"));
    assert!(!logged(&log).contains("call"));
}

#[actix_web::test]
async fn an_http_server_is_called_with_its_headers() {
    let home = tempfile::tempdir().unwrap();
    let log = home.path().join("mcp.log");
    let server = HttpServer::start(&log);
    let config = format!(
        "[[server]]\nname = \"glossary\"\nurl = \"http://127.0.0.1:{}/mcp\"\n\
         headers = {{ Authorization = \"Bearer s3cret\" }}\n",
        server.port
    );
    std::fs::write(home.path().join("mcp.toml"), config).unwrap();
    let llm = FakeLlm::start([
        Step::reply(
            "<mcp_glossary tool=\"lookup\">{\"query\": \"http\"}</mcp_glossary><update>asking</update>",
        ),
        Step::reply("<summarize>done</summarize>"),
    ]);
    let (_app, mut client) = connected_app(home, &llm).await;
    let servers = client.ok("getMcpServers", json!({})).await;
    assert_eq!(servers[0]["transport"], json!("http"));
    let result = client
        .ok("ask", json!({"model": "fake", "prompt": "what is http?"}))
        .await;
    let run = result["run"].as_str().unwrap();
    let path = "mcp_glossary://turn_1/lookup";
    assert_eq!(
        body(&mut client, run, path).await,
        "glossary: http means a card game"
    );
    let text = logged(&log);
    assert!(text.contains("authorization Bearer s3cret"), "{text}");
    assert!(!text.contains("authorization None"), "{text}");
}

#[actix_web::test]
async fn aborting_the_loop_cancels_its_call() {
    let (home, log) = home_with_server("timeout_secs = 300");
    let llm = FakeLlm::start([Step::reply(
        "<mcp_glossary tool=\"hang\"></mcp_glossary><update>waiting</update>",
    )]);
    let (app, mut client) = connected_app(home, &llm).await;
    let run = client.start_run("fake").await;
    let asked = client
        .send(
            "ask",
            json!({"model": "fake", "prompt": "hang", "run": run}),
        )
        .await;
    until_logged(&log, |text| text.contains("call hang")).await;
    let (mut other, _) = app.client_in_project("mcp").await;
    other.ok("run/abort", json!({"run": run})).await;
    let reply = client.reply(&asked).await;
    assert_eq!(reply["result"]["status"], json!(499), "{reply}");
    until_logged(&log, |text| text.contains("cancelled")).await;
}

#[actix_web::test]
async fn stopping_rummy_stops_its_servers() {
    let (home, log) = home_with_server("");
    let llm = FakeLlm::start([]);
    let (app, _client) = connected_app(home, &llm).await;
    let started = until_logged(&log, |text| text.contains("start pid ")).await;
    let pid = started.trim().trim_start_matches("start pid ").to_owned();
    let process = Path::new("/proc").join(&pid);
    assert!(process.exists());
    let TestApp { server, home, .. } = app;
    server.stop().await;
    eventually(&format!("MCP server {pid} to exit"), async || {
        (!process.exists()).then_some(())
    })
    .await;
    drop(home);
}

#[actix_web::test]
async fn a_server_that_does_not_start_is_a_502_and_rummy_runs_on() {
    let home = tempfile::tempdir().unwrap();
    let config = "[[server]]\nname = \"broken\"\ncommand = \"/nonexistent/mcp-server\"\n";
    std::fs::write(home.path().join("mcp.toml"), config).unwrap();
    let llm = FakeLlm::start([
        Step::reply("<mcp_broken tool=\"anything\"></mcp_broken><update>trying</update>"),
        Step::reply("<summarize>it is down</summarize>"),
    ]);
    let app = TestApp::with_llm_in(home, &llm).await;
    let (mut client, _) = app.client_in_project("mcp").await;
    let servers = eventually("getMcpServers to give the start error", async || {
        let servers = client.ok("getMcpServers", json!({})).await;
        servers[0]["error"].is_string().then_some(servers)
    })
    .await;
    assert_eq!(servers[0]["connected"], json!(false));
    let error = servers[0]["error"].as_str().unwrap();
    assert!(
        error.contains("/nonexistent/mcp-server did not start"),
        "{error}"
    );
    let result = client
        .ok("ask", json!({"model": "fake", "prompt": "try it"}))
        .await;
    assert_eq!(result["status"], json!(200), "{result}");
    let run = result["run"].as_str().unwrap();
    assert_eq!(
        client.statuses(run, "mcp_broken://*").await,
        [("mcp_broken://turn_1/anything".to_string(), 502)]
    );
    let system = system_message(&llm.requests()[0]);
    assert!(
        system.contains("### <mcp_broken>\nNot connected now"),
        "{system}"
    );
}

#[actix_web::test]
async fn a_tool_that_reports_an_error_is_a_500_the_model_reads() {
    let (home, _log) = home_with_server("");
    let llm = FakeLlm::start([
        Step::reply("<mcp_glossary tool=\"fail\"></mcp_glossary><update>trying</update>"),
        Step::reply("<summarize>it failed</summarize>"),
    ]);
    let (_app, mut client) = connected_app(home, &llm).await;
    let result = client
        .ok("ask", json!({"model": "fake", "prompt": "fail"}))
        .await;
    assert_eq!(result["status"], json!(200), "{result}");
    let run = result["run"].as_str().unwrap();
    let path = "mcp_glossary://turn_1/fail";
    assert_eq!(
        client.statuses(run, "mcp_glossary://*").await,
        [(path.to_string(), 500)]
    );
    assert_eq!(body(&mut client, run, path).await, "the tracker is closed");
}

#[actix_web::test]
async fn ask_mode_never_calls_a_changing_tool_even_of_a_trusted_server() {
    let (home, log) = home_with_server("trusted = true");
    let llm = FakeLlm::start([
        Step::reply(
            "<mcp_glossary tool=\"create_issue\">{\"title\": \"No\"}</mcp_glossary><update>filing</update>",
        ),
        Step::reply("<summarize>not filed</summarize>"),
    ]);
    let (_app, mut client) = connected_app(home, &llm).await;
    let result = client
        .ok("ask", json!({"model": "fake", "prompt": "file an issue"}))
        .await;
    let run = result["run"].as_str().unwrap();
    assert_eq!(
        client.statuses(run, "mcp_glossary://*").await,
        [("mcp_glossary://turn_1/create_issue".to_string(), 403)]
    );
    assert!(!logged(&log).contains("create_issue"));
}

/// The test server on stdio as a client describes it to `run/mcp`, logging to `log`.
fn attached_glossary(log: &Path) -> Value {
    json!({
        "name": "glossary",
        "command": "python3",
        "args": ["-u", script()],
        "env": {"MCP_LOG": log.display().to_string()},
    })
}

#[actix_web::test]
async fn a_server_a_client_attaches_serves_its_run_only_and_leaves_with_the_connection() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("mcp.log");
    let llm = FakeLlm::start([
        Step::reply(
            "<mcp server=\"glossary\" tool=\"lookup\">{\"query\": \"rummy\"}</mcp><update>looking</update>",
        ),
        Step::reply("<summarize>done</summarize>"),
        Step::reply("<summarize>nothing to look up</summarize>"),
        Step::reply(
            "<mcp server=\"glossary\" tool=\"lookup\">{\"query\": \"again\"}</mcp><summarize>tried</summarize>",
        ),
    ]);
    let app = TestApp::with_llm(&llm, &[("RUMMY_CLIENT_MCP", "all")]).await;
    let (mut editor, _) = app.client_in_project("mcp").await;
    let run = editor.start_run("fake").await;
    let attached = editor
        .ok(
            "run/mcp",
            json!({"run": run, "servers": [attached_glossary(&log)]}),
        )
        .await;
    assert_eq!(
        attached,
        json!({"servers": [{"name": "glossary", "connected": true, "error": null, "tools": 6}]})
    );
    let result = editor
        .ok(
            "ask",
            json!({"model": "fake", "run": run, "prompt": "what is rummy?"}),
        )
        .await;
    assert_eq!(result["status"], json!(200), "{result}");
    assert_eq!(
        editor.statuses(&run, "mcp://*").await,
        [("mcp://turn_1/glossary/lookup".to_string(), 200)]
    );
    let requests = llm.requests();
    let first = system_message(&requests[0]);
    assert!(
        first.contains("## <mcp server=\"[server]\" tool="),
        "{first}"
    );
    assert!(
        first.contains(
            "### <mcp server=\"glossary\" tool=\"lookup\">\nLook a word up in the glossary."
        ),
        "{first}"
    );
    assert!(first.contains("### <mcp server=\"glossary\" tool=\"create_issue\"> (asks first)"));
    let next = format!(
        "{}{}",
        system_message(&requests[1]),
        user_message(&requests[1])
    );
    assert!(next.contains("glossary: rummy means a card game"), "{next}");
    assert!(logged(&log).contains("call lookup {\"query\": \"rummy\"}"));

    // Another run of the project is not offered it.
    let other = editor
        .ok("ask", json!({"model": "fake", "prompt": "anything?"}))
        .await;
    assert_eq!(other["status"], json!(200), "{other}");
    let elsewhere = system_message(&llm.requests()[2]);
    assert!(!elsewhere.contains("<mcp server="), "{elsewhere}");

    // While the editor is connected, another connection cannot take its name; once the
    // editor has gone, the run has no server and the name is free.
    let mut other_client = app.client().await;
    other_client.init("mcp", &app.project_root("mcp")).await;
    let (code, message) = other_client
        .err(
            "run/mcp",
            json!({"run": run, "servers": [attached_glossary(&log)]}),
        )
        .await;
    assert_eq!(code, -32004, "{message}");
    assert!(message.contains("already attached"), "{message}");
    // A connection of another project does not find the run at all.
    let (mut stranger, _) = app.client_in_project("elsewhere").await;
    let (code, message) = stranger
        .err(
            "run/mcp",
            json!({"run": run, "servers": [attached_glossary(&log)]}),
        )
        .await;
    assert_eq!(code, -32002, "{message}");
    drop(editor);
    eventually("run/mcp to succeed once the editor left", async || {
        let answer = other_client
            .call(
                "run/mcp",
                json!({"run": run, "servers": [attached_glossary(&log)]}),
            )
            .await;
        if answer.get("result").is_some() {
            return Some(());
        }
        assert_eq!(answer["error"]["code"], json!(-32004), "{answer}");
        None
    })
    .await;
    other_client
        .ok("run/mcp", json!({"run": run, "servers": []}))
        .await;
    let again = other_client
        .ok(
            "ask",
            json!({"model": "fake", "run": run, "prompt": "look again"}),
        )
        .await;
    assert_eq!(again["status"], json!(200), "{again}");
    let refused = other_client.statuses(&run, "mcp://*").await;
    assert_eq!(refused.len(), 2, "{refused:?}");
    assert_eq!(refused[1].1, 403, "{refused:?}");
    let why = body(&mut other_client, &run, &refused[1].0).await;
    assert!(
        why.contains("no MCP server is attached to this run"),
        "{why}"
    );
    assert!(
        !logged(&log).contains("again"),
        "called after the editor left"
    );
}

/// A client of `app` in project `mcp`, with a run of its own.
async fn client_with_run(app: &TestApp) -> (Client, String) {
    let (mut client, _) = app.client_in_project("mcp").await;
    let run = client.start_run("fake").await;
    (client, run)
}

/// Why `run/mcp` of `server` on `run` is refused (`-32005`).
async fn refused(client: &mut Client, run: &str, server: &Value) -> String {
    let (code, message) = client
        .err("run/mcp", json!({"run": run, "servers": [server]}))
        .await;
    assert_eq!(code, -32005, "{message}");
    message
}

#[actix_web::test]
async fn what_a_client_may_attach_is_the_servers_choice() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("mcp.log");
    let glossary = attached_glossary(&log);
    let llm = FakeLlm::start([]);
    let off = TestApp::with_llm(&llm, &[]).await;
    let (mut client, run) = client_with_run(&off).await;
    let message = refused(&mut client, &run, &glossary).await;
    assert!(message.contains("RUMMY_CLIENT_MCP is off"), "{message}");
    let detached = client
        .ok("run/mcp", json!({"run": run, "servers": []}))
        .await;
    assert_eq!(detached, json!({"servers": []}));

    let http_only = TestApp::with_llm(&llm, &[("RUMMY_CLIENT_MCP", "http")]).await;
    let (mut client, run) = client_with_run(&http_only).await;
    let message = refused(&mut client, &run, &glossary).await;
    assert!(message.contains("runs no client's commands"), "{message}");
    let server = HttpServer::start(&log);
    let at_loopback =
        json!({"name": "docs", "url": format!("http://127.0.0.1:{}/mcp", server.port)});
    let message = refused(&mut client, &run, &at_loopback).await;
    assert!(message.contains("loopback"), "{message}");
    let (code, message) = client
        .err("run/mcp", json!({"run": "no_such_run", "servers": []}))
        .await;
    assert_eq!(code, -32002, "{message}");

    let allowed = TestApp::with_llm(
        &llm,
        &[
            ("RUMMY_CLIENT_MCP", "http"),
            ("RUMMY_WEB_ALLOW_NETS", "127.0.0.1/32"),
        ],
    )
    .await;
    let (mut client, run) = client_with_run(&allowed).await;
    let attached = client
        .ok("run/mcp", json!({"run": run, "servers": [at_loopback]}))
        .await;
    assert_eq!(
        attached["servers"][0]["connected"],
        json!(true),
        "{attached}"
    );
    assert_eq!(attached["servers"][0]["tools"], json!(6), "{attached}");
}

#[actix_web::test]
async fn a_changing_call_to_a_clients_server_waits_for_approval() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("mcp.log");
    let llm = FakeLlm::start([
        Step::reply("<mcp tool=\"create_issue\" server=\"glossary\">{\"title\": \"Fix it\"}</mcp>"),
        Step::reply("<summarize>filed</summarize>"),
    ]);
    let app = TestApp::with_llm(&llm, &[("RUMMY_CLIENT_MCP", "all")]).await;
    let (mut editor, _) = app.client_in_project("mcp").await;
    let run = editor.start_run("fake").await;
    editor
        .ok(
            "run/mcp",
            json!({"run": run, "servers": [attached_glossary(&log)]}),
        )
        .await;
    let result = editor
        .ok(
            "act",
            json!({"model": "fake", "run": run, "prompt": "file an issue"}),
        )
        .await;
    assert_eq!(result["status"], json!(202), "{result}");
    let path = result["proposed"][0]["path"].as_str().unwrap().to_owned();
    assert_eq!(path, "mcp://turn_1/glossary/create_issue");
    assert!(
        !logged(&log).contains("create_issue"),
        "called before approval"
    );
    let resolved = editor
        .ok(
            "run/resolve",
            json!({"run": run, "resolution": {"path": path, "action": "accept"}}),
        )
        .await;
    assert_eq!(resolved["status"], json!(200), "{resolved}");
    assert!(logged(&log).contains("call create_issue {\"title\": \"Fix it\"}"));
    assert_eq!(
        body(&mut editor, &run, &path).await,
        "created issue #7: Fix it"
    );
}
