//! Plugins as processes (docs/src/plugins-at-run-time.md): real plugin programs of
//! `tests/plugins/` (Python, standard library only; one in Node.js), declared by a variable
//! or a file, add a tool the scripted model calls, a section it reads, an observer, a
//! filter that refuses commands and a method a client calls. Plugins that crash, hang or
//! write garbage are contained, restarted, then disabled, and one that hangs delays no run
//! of a project it does not serve; the configuration disables one and names the projects
//! one serves. No plugin adds a model call.

use std::path::PathBuf;

use rummy::testing::fake_llm::{FakeLlm, Step};
use serde_json::{json, Value};

use crate::access::users;
use crate::stored::entry_named;
use crate::support::{eventually, system_message, Client, TestApp};

/// A plugin program of `tests/plugins/`.
pub(crate) fn program(file: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/plugins")
        .join(file)
        .display()
        .to_string()
}

/// `python3 tests/plugins/guard.py` with `args`, as a `RUMMY_PLUGIN_<NAME>` line.
fn guard(args: &str) -> String {
    format!("python3 {} {args}", program("guard.py"))
}

/// The entries of `run` matching `pattern` as a client lists them: path, status, and the
/// body as stored.
pub(crate) async fn entries(
    app: &TestApp,
    client: &mut Client,
    run: &str,
    pattern: &str,
) -> Vec<(String, i64, String)> {
    let mut entries = Vec::new();
    for (path, status) in client.statuses(run, pattern).await {
        let (alias, named) = (run.to_owned(), path.clone());
        let stored = app
            .read(move |conn| entry_named(conn, &alias, &named))
            .await;
        entries.push((
            path,
            status,
            stored.map(|(_, body)| body).unwrap_or_default(),
        ));
    }
    entries
}

pub(crate) async fn status_of(client: &mut Client, name: &str) -> Value {
    let statuses = client.ok("plugins/status", json!({})).await;
    statuses
        .as_array()
        .unwrap()
        .iter()
        .find(|status| status["name"] == name)
        .cloned()
        .unwrap_or(Value::Null)
}

#[actix_web::test]
async fn a_plugin_process_adds_a_tool_a_section_an_observer_and_a_method() {
    let llm = FakeLlm::start([
        Step::reply("<word_count>one two three</word_count><update>counted</update>"),
        Step::reply("<summarize>three words</summarize>"),
    ]);
    let line = guard("");
    let app = TestApp::with_llm(&llm, &[("RUMMY_PLUGIN_GUARD", line.as_str())]).await;
    let (mut client, _) = app.client_in_project("count").await;
    let result = client
        .ok("ask", json!({"model": "fake", "prompt": "count my words"}))
        .await;
    assert_eq!(result["status"], json!(200), "{result}");
    let run = result["run"].as_str().unwrap();
    assert_eq!(
        entries(&app, &mut client, run, "word_count://*").await,
        [(
            "word_count://turn_1/one%20two%20three".to_owned(),
            200,
            "3".to_owned()
        )]
    );
    let requests = llm.requests();
    assert_eq!(requests.len(), 2, "the plugin adds no model call");
    let system = system_message(&requests[0]);
    assert!(
        system.contains("## <word_count>[text]</word_count>"),
        "{system}"
    );
    assert!(
        system.contains("<house_rules>Count before turn 1.</house_rules>"),
        "{system}"
    );
    let second = system_message(&requests[1]);
    assert!(
        second.contains("<house_rules>Count before turn 2.</house_rules>"),
        "asked again before each turn: {second}"
    );
    let catalogue = client.ok("discover", json!({})).await;
    assert_eq!(
        catalogue["methods"]["guard/hooks"],
        json!({"description": "The hooks observed so far.", "params": {}, "role": "member"})
    );
    let expected = [
        "run.created",
        "loop.started",
        "turn.started",
        "entry.created",
        "entry.created",
        "turn.completed",
        "turn.started",
        "entry.created",
        "turn.completed",
        "loop.completed",
    ];
    let hooks = eventually("the observer told of the loop's end", async || {
        let hooks = client.ok("guard/hooks", json!({})).await;
        (hooks.as_array()?.len() == expected.len()).then_some(hooks)
    })
    .await;
    assert_eq!(hooks, json!(expected));
    let status = status_of(&mut client, "guard").await;
    assert_eq!(
        (&status["state"], &status["plugin"], &status["version"]),
        (&json!("running"), &json!("guard"), &json!("1.0.0"))
    );
}

#[actix_web::test]
async fn a_filter_refuses_sh_commands_matching_its_pattern_and_the_loop_goes_on() {
    let llm = FakeLlm::start([
        Step::reply("<sh>rm -rf build</sh><update>cleaning</update>"),
        Step::reply("<summarize>could not clean</summarize>"),
    ]);
    let line = guard("--refuse rm\\s+-rf");
    let app = TestApp::with_llm(&llm, &[("RUMMY_PLUGIN_GUARD", line.as_str())]).await;
    let (mut client, _) = app.client_in_project("clean").await;
    let result = client
        .ok("act", json!({"model": "fake", "prompt": "clean up"}))
        .await;
    assert_eq!(result["status"], json!(200), "{result}");
    let run = result["run"].as_str().unwrap();
    let refused = entries(&app, &mut client, run, "sh://*").await;
    assert_eq!(refused.len(), 1, "{refused:?}");
    assert_eq!(refused[0].1, 403);
    assert_eq!(refused[0].2, "guard (priority 100) refuses: rm -rf build");
    assert_eq!(llm.requests().len(), 2, "the loop went on to its next turn");
}

#[actix_web::test]
async fn filters_of_two_plugins_run_in_priority_order() {
    let llm = FakeLlm::start([
        Step::reply("<sh>rm -rf build</sh><update>cleaning</update>"),
        Step::reply("<summarize>done</summarize>"),
    ]);
    let late = guard("--refuse rm --priority 50 --tag count_late");
    let early = guard("--refuse rm --priority 10 --tag count_early");
    let env = [
        ("RUMMY_PLUGIN_LATE", late.as_str()),
        ("RUMMY_PLUGIN_EARLY", early.as_str()),
    ];
    let app = TestApp::with_llm(&llm, &env).await;
    let (mut client, _) = app.client_in_project("order").await;
    let result = client
        .ok("act", json!({"model": "fake", "prompt": "clean up"}))
        .await;
    let run = result["run"].as_str().unwrap();
    let refused = entries(&app, &mut client, run, "sh://*").await;
    assert_eq!(refused[0].2, "guard (priority 10) refuses: rm -rf build");
}

/// A server whose `flaky` plugin misbehaves as `mode` says at every tool call, disabled
/// after two failures in a row, calls timing out after 500 ms; and where it counts its
/// starts.
async fn flaky(mode: &str, llm: &FakeLlm) -> (TestApp, PathBuf) {
    let starts = tempfile::NamedTempFile::new().unwrap().into_temp_path();
    let starts = starts.keep().unwrap();
    let line = format!(
        "python3 {} {mode} {}",
        program("misbehaving.py"),
        starts.display()
    );
    let env = [
        ("RUMMY_PLUGIN_FLAKY", line.as_str()),
        ("RUMMY_PLUGINS_MAX_FAILURES", "2"),
        ("RUMMY_PLUGINS_TIMEOUT_MS", "500"),
    ];
    (TestApp::with_llm(llm, &env).await, starts)
}

fn flaky_script() -> FakeLlm {
    let asks = (0..3).flat_map(|_| {
        [
            Step::reply("<flaky>x</flaky><update>trying</update>"),
            Step::reply("<summarize>done</summarize>"),
        ]
    });
    FakeLlm::start(asks)
}

/// Asks once: the flaky call is an error entry, and the loop still completes.
async fn ask_contained(app: &TestApp, client: &mut Client) -> String {
    let result = client
        .ok("ask", json!({"model": "fake", "prompt": "try it"}))
        .await;
    assert_eq!(result["status"], json!(200), "{result}");
    let run = result["run"].as_str().unwrap().to_owned();
    let called = entries(app, client, &run, "flaky://*").await;
    assert_eq!(called.len(), 1, "{called:?}");
    assert_eq!(called[0].1, 502, "{called:?}");
    called[0].2.clone()
}

async fn misbehaving_plugin_is_contained_restarted_then_disabled(mode: &str) {
    let llm = flaky_script();
    let (app, starts) = flaky(mode, &llm).await;
    let (mut client, _) = app.client_in_project("flaky").await;
    ask_contained(&app, &mut client).await;
    let restarted = eventually("the plugin started again", async || {
        let status = status_of(&mut client, "flaky").await;
        (status["state"] == "running" && status["restarts"] == 1).then_some(status)
    })
    .await;
    assert_eq!(restarted["failures"], json!(1), "{restarted}");
    ask_contained(&app, &mut client).await;
    let status = status_of(&mut client, "flaky").await;
    assert_eq!(
        (&status["state"], &status["failures"]),
        (&json!("disabled"), &json!(2)),
        "{status}"
    );
    let disabled = ask_contained(&app, &mut client).await;
    assert!(disabled.contains("disabled after 2 failures"), "{disabled}");
    let started = std::fs::read_to_string(&starts).unwrap();
    assert_eq!(started.lines().count(), 2, "started, then once again");
    assert_eq!(
        llm.requests().len(),
        6,
        "two model calls per ask, none more"
    );
}

#[actix_web::test]
async fn a_plugin_that_crashes_is_contained_restarted_then_disabled() {
    misbehaving_plugin_is_contained_restarted_then_disabled("crash").await;
}

#[actix_web::test]
async fn a_plugin_that_hangs_is_contained_restarted_then_disabled() {
    misbehaving_plugin_is_contained_restarted_then_disabled("hang").await;
}

#[actix_web::test]
async fn a_plugin_that_writes_garbage_is_contained_restarted_then_disabled() {
    misbehaving_plugin_is_contained_restarted_then_disabled("garbage").await;
}

#[actix_web::test]
async fn a_hanging_plugin_delays_no_run_of_a_project_it_does_not_serve() {
    let llm = FakeLlm::start([
        Step::reply("<flaky>x</flaky><update>trying</update>"),
        Step::reply("<summarize>fast</summarize>"),
        Step::reply("<summarize>slow</summarize>"),
    ]);
    let home = tempfile::tempdir().unwrap();
    let plugins = home.path().join("plugins");
    std::fs::create_dir_all(&plugins).unwrap();
    let starts = home.path().join("starts");
    let args = json!([
        program("misbehaving.py"),
        "hang",
        starts.display().to_string()
    ]);
    let declaration = json!({"command": "python3", "args": args, "projects": ["slow"]});
    std::fs::write(plugins.join("flaky.json"), declaration.to_string()).unwrap();
    let mut env = crate::support::llm_env(&llm);
    env.push(("RUMMY_PLUGINS_TIMEOUT_MS", "5000"));
    let app = TestApp::start_in(home, &env, |plugins| plugins).await;
    let (mut slow, _) = app.client_in_project("slow").await;
    let (mut fast, _) = app.client_in_project("fast").await;
    let waiting = slow
        .send("ask", json!({"model": "fake", "prompt": "try it"}))
        .await;
    eventually("the slow run's turn reached the model", async || {
        (llm.requests().len() == 1).then_some(())
    })
    .await;
    let result = fast
        .ok("ask", json!({"model": "fake", "prompt": "hello"}))
        .await;
    assert_eq!(result["status"], json!(200), "{result}");
    let status = status_of(&mut fast, "flaky").await;
    assert_eq!(
        (&status["state"], &status["failures"]),
        (&json!("running"), &json!(0)),
        "the fast run ended while the plugin still hung: {status}"
    );
    let slow_result = slow.reply(&waiting).await;
    assert_eq!(slow_result["result"]["status"], json!(200), "{slow_result}");
    assert_eq!(status_of(&mut fast, "flaky").await["failures"], json!(1));
}

#[actix_web::test]
async fn a_plugin_process_the_configuration_disables_is_never_started() {
    let llm = FakeLlm::start([Step::reply("<summarize>done</summarize>")]);
    let starts = tempfile::tempdir().unwrap();
    let counted = starts.path().join("starts");
    let line = format!(
        "python3 {} crash {}",
        program("misbehaving.py"),
        counted.display()
    );
    let env = [
        ("RUMMY_PLUGIN_FLAKY", line.as_str()),
        ("RUMMY_PLUGINS_DISABLED", "flaky"),
    ];
    let app = TestApp::with_llm(&llm, &env).await;
    let (mut client, _) = app.client_in_project("quiet").await;
    client
        .ok("ask", json!({"model": "fake", "prompt": "hello"}))
        .await;
    let system = system_message(&llm.requests()[0]);
    assert!(!system.contains("<flaky>"), "{system}");
    assert!(!counted.exists(), "never started");
    let status = status_of(&mut client, "flaky").await;
    assert_eq!(
        (&status["state"], &status["error"]),
        (&json!("stopped"), &json!("disabled by configuration"))
    );
}

#[actix_web::test]
async fn a_plugin_file_names_the_projects_it_serves() {
    let llm = FakeLlm::start([
        Step::reply("<word_count>a b</word_count><update>counted</update>"),
        Step::reply("<summarize>done</summarize>"),
        Step::reply("<word_count>a b</word_count><update>counted</update>"),
        Step::reply("<summarize>done</summarize>"),
    ]);
    let home = tempfile::tempdir().unwrap();
    let plugins = home.path().join("plugins");
    std::fs::create_dir_all(&plugins).unwrap();
    let declaration =
        json!({"command": "python3", "args": [program("guard.py")], "projects": ["web"]});
    std::fs::write(plugins.join("guard.json"), declaration.to_string()).unwrap();
    let app = TestApp::with_llm_in(home, &llm).await;
    let (mut web, _) = app.client_in_project("web").await;
    let served = web
        .ok("ask", json!({"model": "fake", "prompt": "count"}))
        .await;
    let run = served["run"].as_str().unwrap();
    assert_eq!(
        entries(&app, &mut web, run, "word_count://*").await[0].1,
        200
    );
    let (mut api, _) = app.client_in_project("api").await;
    let other = api
        .ok("ask", json!({"model": "fake", "prompt": "count"}))
        .await;
    let run = other["run"].as_str().unwrap();
    assert_eq!(
        entries(&app, &mut api, run, "word_count://*").await[0].1,
        403
    );
    let requests = llm.requests();
    let (in_web, in_api) = (system_message(&requests[0]), system_message(&requests[2]));
    assert!(
        in_web.contains("## <word_count>") && in_web.contains("<house_rules>"),
        "{in_web}"
    );
    assert!(
        !in_api.contains("## <word_count>") && !in_api.contains("<house_rules>"),
        "{in_api}"
    );
    let (code, message) = api.err("guard/hooks", json!({})).await;
    assert_eq!(
        (code, message.as_str()),
        (-32603, "plugin guard does not serve this project")
    );
    assert!(web.ok("guard/hooks", json!({})).await.is_array());
}

#[actix_web::test]
async fn a_plugin_method_is_refused_to_a_role_below_its_own() {
    let llm = FakeLlm::start([]);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("users.toml");
    let people = users(&[
        ("vera", "vera-token", "viewer", &["web"]),
        ("mo", "mo-token", "member", &["web"]),
    ]);
    std::fs::write(&file, people).unwrap();
    let (file, line) = (file.display().to_string(), guard(""));
    let env = [
        ("RUMMY_AUTH_TOKEN", "shared-token"),
        ("RUMMY_USERS_FILE", file.as_str()),
        ("RUMMY_PLUGIN_GUARD", line.as_str()),
    ];
    let app = TestApp::with_llm(&llm, &env).await;
    let root = app.project_root("web");
    let connect = async |token: &str| {
        let mut client = Client::connect(&format!("ws://{}/?token={token}", app.addr())).await;
        client.init("web", &root).await;
        client
    };
    let mut mo = connect("mo-token").await;
    let mut vera = connect("vera-token").await;
    assert_eq!(mo.ok("guard/hooks", json!({})).await, json!([]));
    let (code, _) = vera.err("guard/hooks", json!({})).await;
    assert_eq!(code, -32005, "a viewer may not call a member's method");
}

/// The example in another language: needs node, which `tests/run.sh` installs.
mod node {
    use rummy::testing::fake_llm::{FakeLlm, Step};
    use serde_json::json;

    use super::{entries, program};
    use crate::support::TestApp;

    #[actix_web::test]
    #[ignore = "needs node: tests/run.sh runs it (plugin_processes::node::)"]
    async fn the_node_example_plugin_adds_a_tool_and_a_method() {
        let llm = FakeLlm::start([
            Step::reply("<shout>hello there</shout><update>shouted</update>"),
            Step::reply("<summarize>done</summarize>"),
        ]);
        let line = format!("node {}", program("shout.js"));
        let app = TestApp::with_llm(&llm, &[("RUMMY_PLUGIN_SHOUT", line.as_str())]).await;
        let (mut client, _) = app.client_in_project("loud").await;
        let result = client
            .ok("ask", json!({"model": "fake", "prompt": "shout"}))
            .await;
        let run = result["run"].as_str().unwrap();
        let shouted = entries(&app, &mut client, run, "shout://*").await;
        assert_eq!(shouted[0].1, 200);
        assert_eq!(shouted[0].2, "HELLO THERE");
        assert_eq!(client.ok("shout/ping", json!({})).await, json!("pong"));
    }
}

#[test]
fn the_book_shows_the_example_plugins_as_they_are() {
    let chapter = include_str!("../../docs/src/plugins-at-run-time.md");
    for example in [
        include_str!("../plugins/guard.py"),
        include_str!("../plugins/shout.js"),
    ] {
        assert!(
            chapter.contains(example.trim_end()),
            "the copy in docs/src/plugins-at-run-time.md differs from {}",
            example.lines().nth(1).unwrap_or_default()
        );
    }
}
