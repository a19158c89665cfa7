//! Commands run on the server (issue 27), through the protocol: the scripted model proposes
//! a command, a client with no shell accepts it, and the server runs it confined in the
//! project root — its output streamed as `run/output`, its entry the outcome, the loop
//! resumed as if a client had resolved it. The launcher's own tests (`sandbox`) try each
//! confinement mechanism in depth; these try the escapes end to end, as root in CI.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::json;

use crate::support::{eventually, user_message, Client, TestApp, CPU_BURNERS};
use rummy::testing::fake_llm::{FakeLlm, Step};

/// Small limits, so the escapes end quickly.
const LIMITS: &[(&str, &str)] = &[
    ("RUMMY_RUN_COMMANDS", "server"),
    (
        "RUMMY_SANDBOX_LAUNCHER",
        env!("CARGO_BIN_EXE_rummy-sandbox"),
    ),
    ("RUMMY_SANDBOX_MAX_CPU_SECS", "1"),
    ("RUMMY_SANDBOX_MAX_WALL_SECS", "8"),
    ("RUMMY_SANDBOX_MAX_PROCESSES", "64"),
    ("RUMMY_SANDBOX_MAX_OUTPUT_BYTES", "65536"),
    ("RUMMY_SANDBOX_KILL_OUTPUT_BYTES", "1048576"),
];

/// A server whose projects run their commands on it, the scripted model proposing each of
/// `commands` in turn (each then summarized).
async fn server(llm: &FakeLlm) -> TestApp {
    TestApp::with_llm(llm, LIMITS).await
}

/// Replies proposing each command, then a summary once its outcome is back.
fn proposing(commands: &[&str]) -> Vec<Step> {
    commands
        .iter()
        .flat_map(|command| {
            [
                Step::reply(format!("<sh>{command}</sh><update>running it</update>")),
                Step::reply("<summarize>ran it</summarize>"),
            ]
        })
        .collect()
}

/// One command proposed by the model and accepted by `client` with no output: its entry's
/// status and body, and the run.
async fn accepted(app: &TestApp, client: &mut Client, prompt: &str) -> (i64, String, String) {
    let (run, path) = client.act_until_proposal(prompt).await;
    let resolved = client
        .ok(
            "run/resolve",
            json!({"run": run, "resolution": {"path": path, "action": "accept"}}),
        )
        .await;
    assert_ne!(resolved["status"], json!(202), "{resolved}");
    let (status, body) = entry(app, &run, &path).await;
    (status, body, run)
}

/// The status and body of `run`'s entry at `path`, as stored.
async fn entry(app: &TestApp, run: &str, path: &str) -> (i64, String) {
    let (run, path) = (run.to_owned(), path.to_owned());
    app.read(move |conn| crate::stored::entry_named(conn, &run, &path))
        .await
        .expect("the entry is stored")
}

/// Whether a process whose command line contains `marker` is alive.
fn process_alive(marker: &str) -> bool {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter(|entry| entry.file_name().to_string_lossy().parse::<u32>().is_ok())
        .filter_map(|entry| std::fs::read(entry.path().join("cmdline")).ok())
        .any(|cmdline| {
            String::from_utf8_lossy(&cmdline)
                .replace('\0', " ")
                .contains(marker)
        })
}

#[actix_web::test]
async fn an_accepted_command_runs_in_the_root_streams_its_output_and_resumes_the_loop() {
    let llm = FakeLlm::start(proposing(&[
        "echo hello-from-the-server > made.txt; cat made.txt",
    ]));
    let app = server(&llm).await;
    let (mut client, root) = app.client_in_project("commands").await;
    let (status, body, run) = accepted(&app, &mut client, "make a file").await;
    assert_eq!((status, body.as_str()), (200, "hello-from-the-server\n"));
    assert_eq!(
        std::fs::read_to_string(root.join("made.txt")).unwrap(),
        "hello-from-the-server\n"
    );
    let streamed = client
        .until_notified("run/output", |params| params["text"].is_string())
        .await;
    assert_eq!(streamed["params"]["run"], json!(run));
    assert_eq!(streamed["params"]["text"], json!("hello-from-the-server\n"));
    let done = client
        .until_notified("run/output", |params| params["done"] == json!(true))
        .await;
    assert_eq!(done["params"]["status"], json!(200));
    assert_eq!(done["params"]["exit"], json!(0));
    let requests = llm.requests();
    assert_eq!(requests.len(), 2, "the loop resumed once");
    assert!(user_message(&requests[1]).contains("hello-from-the-server"));
}

#[actix_web::test]
async fn the_clients_output_is_ignored_and_a_failure_is_a_500_with_its_exit_status() {
    let llm = FakeLlm::start(proposing(&["echo real; exit 3"]));
    let app = server(&llm).await;
    let (mut client, _) = app.client_in_project("commands").await;
    let (run, path) = client.act_until_proposal("fail").await;
    client
        .ok(
            "run/resolve",
            json!({"run": run, "resolution": {"path": path, "action": "accept", "output": "forged"}}),
        )
        .await;
    let (status, body) = entry(&app, &run, &path).await;
    assert_eq!((status, body.as_str()), (500, "real\n[exit status 3]"));
}

#[actix_web::test]
async fn a_rejected_command_does_not_run() {
    let llm = FakeLlm::start(proposing(&["touch rejected.txt"]));
    let app = server(&llm).await;
    let (mut client, root) = app.client_in_project("commands").await;
    let (run, path) = client.act_until_proposal("touch").await;
    client
        .ok(
            "run/resolve",
            json!({"run": run, "resolution": {"path": path, "action": "reject"}}),
        )
        .await;
    assert!(!root.join("rejected.txt").exists());
}

#[actix_web::test]
async fn a_whole_act_loop_edits_runs_the_tests_reads_the_failure_fixes_and_passes() {
    let test = "import unittest\nfrom calc import add\n\nclass T(unittest.TestCase):\n    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n";
    let llm = FakeLlm::start([
        Step::reply(
            "<set path=\"calc.py\">def add(a, b):\n    return a - b\n</set><update>wrote it</update>",
        ),
        Step::reply(format!(
            "<set path=\"test_calc.py\">{test}</set><update>and its test</update>"
        )),
        Step::reply("<sh>python3 -B -m unittest -q</sh><update>testing</update>"),
        Step::reply("<set path=\"calc.py\">def add(a, b):\n    return a + b\n</set><update>fixing</update>"),
        Step::reply("<sh>python3 -B -m unittest -q</sh><update>testing again</update>"),
        Step::reply("<summarize>add works</summarize>"),
    ]);
    let app = server(&llm).await;
    let (mut client, root) = app.client_in_project("act").await;
    let mut result = client
        .ok(
            "act",
            json!({"model": "fake", "prompt": "write add with a test"}),
        )
        .await;
    let run = result["run"].as_str().unwrap().to_owned();
    let mut outcomes = Vec::new();
    while result["status"] == json!(202) {
        for proposal in result["proposed"].as_array().unwrap().clone() {
            let path = proposal["path"].as_str().unwrap().to_owned();
            result = client
                .ok(
                    "run/resolve",
                    json!({"run": run, "resolution": {"path": path, "action": "accept"}}),
                )
                .await;
            if path.starts_with("sh://") {
                outcomes.push(entry(&app, &run, &path).await);
            }
        }
    }
    assert_eq!(result["status"], json!(200), "{result}");
    assert_eq!(outcomes.len(), 2, "{outcomes:?}");
    assert_eq!(outcomes[0].0, 500, "the first run fails: {}", outcomes[0].1);
    assert!(
        outcomes[0].1.contains("AssertionError"),
        "{}",
        outcomes[0].1
    );
    assert_eq!(outcomes[1].0, 200, "the second passes: {}", outcomes[1].1);
    assert!(
        std::fs::read_to_string(root.join("calc.py"))
            .unwrap()
            .contains("a + b"),
        "the fix is on disk, written by the server"
    );
    let requests = llm.requests();
    assert!(
        user_message(&requests[3]).contains("AssertionError"),
        "the model read the failure"
    );
}

#[actix_web::test]
async fn writes_and_reads_outside_the_root_are_denied() {
    let outside = tempfile::tempdir().unwrap();
    let secret = outside.path().join("secret");
    std::fs::write(&secret, "the secret").unwrap();
    let llm = FakeLlm::start(proposing(&[
        &format!("echo pwned > {}/written", outside.path().display()),
        &format!("cat {}", secret.display()),
        "cat /etc/shadow",
    ]));
    let app = server(&llm).await;
    let (mut client, _) = app.client_in_project("escapes").await;
    let (status, body, _) = accepted(&app, &mut client, "write outside").await;
    assert_eq!(status, 500, "{body}");
    assert!(body.contains("Permission denied"), "{body}");
    assert!(!outside.path().join("written").exists());
    let (status, body, _) = accepted(&app, &mut client, "read outside").await;
    assert_eq!(status, 500, "{body}");
    assert!(!body.contains("the secret"), "{body}");
    let (status, body, _) = accepted(&app, &mut client, "read shadow").await;
    assert_eq!(status, 500, "{body}");
    assert!(!body.contains("root:"), "{body}");
}

/// A command run for each escape in one run after another; each returns its status and body.
async fn try_each(app: &TestApp, client: &mut Client, prompts: usize) -> Vec<(i64, String)> {
    let mut outcomes = Vec::new();
    for index in 0..prompts {
        let (status, body, _) = accepted(app, client, &format!("escape {index}")).await;
        outcomes.push((status, body));
    }
    assert!(app.home().exists());
    outcomes
}

#[actix_web::test]
async fn the_store_the_home_other_projects_and_links_out_are_out_of_reach() {
    let llm_commands = |home: &Path, other: &Path| {
        vec![
            format!("head -c 16 {}/rummy.db", home.display()),
            format!("ls {}", home.display()),
            format!("cat {}/secret.txt", other.display()),
            format!(
                "ln -s {}/rummy.db db-link && head -c 16 db-link",
                home.display()
            ),
            format!(
                "ln {}/secret.txt hard-link && cat hard-link",
                other.display()
            ),
            format!("touch {}/planted", home.display()),
        ]
    };
    let home = tempfile::tempdir().unwrap();
    let home_path = home.path().to_path_buf();
    let other = home_path.join("project-other");
    std::fs::create_dir_all(&other).unwrap();
    std::fs::write(other.join("secret.txt"), "other project's secret").unwrap();
    let commands = llm_commands(&home_path, &other);
    let llm = FakeLlm::start(proposing(
        &commands.iter().map(String::as_str).collect::<Vec<_>>(),
    ));
    let mut env = crate::support::llm_env(&llm);
    env.extend_from_slice(LIMITS);
    let app = TestApp::start_in(home, &env, |plugins| plugins).await;
    let (mut other_client, _) = app.client_in_project("other").await;
    drop(other_client.ok("ping", json!({})).await);
    let (mut client, root) = app.client_in_project("escapes").await;
    let outcomes = try_each(&app, &mut client, commands.len()).await;
    for ((status, body), command) in outcomes.iter().zip(&commands) {
        assert_ne!(*status, 200, "{command} was not contained: {body}");
        assert!(!body.contains("SQLite format"), "{command}: {body}");
        assert!(
            !body.contains("other project's secret"),
            "{command}: {body}"
        );
        assert!(
            !body.contains("rummy.db\n"),
            "{command} listed the home: {body}"
        );
    }
    assert!(
        outcomes[4].1.contains("Invalid cross-device link")
            || outcomes[4].1.contains("Permission denied"),
        "a hard link out is refused: {}",
        outcomes[4].1
    );
    assert!(!app.home().join("planted").exists());
    assert!(!root.join("hard-link").exists());
}

#[actix_web::test]
async fn rummys_port_its_process_and_the_network_are_out_of_reach() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let connect = |port: String| {
        format!(
            "python3 -c \"import socket; socket.create_connection(('127.0.0.1', {port}), 2); print('connected')\""
        )
    };
    let commands = [
        connect("int(open('port').read())".to_owned()),
        connect(listener.local_addr().unwrap().port().to_string()),
        format!("kill -TERM {}", std::process::id()),
        "kill -9 -1; echo survived".to_owned(),
    ];
    let llm = FakeLlm::start(proposing(
        &commands.iter().map(String::as_str).collect::<Vec<_>>(),
    ));
    let app = server(&llm).await;
    let (mut client, root) = app.client_in_project("network").await;
    std::fs::write(root.join("port"), app.addr().port().to_string()).unwrap();
    let outcomes = try_each(&app, &mut client, commands.len()).await;
    for ((status, body), command) in outcomes.iter().zip(&commands).take(3) {
        assert_eq!(*status, 500, "{command}: {body}");
        assert!(!body.contains("connected"), "{command}: {body}");
    }
    assert!(listener.accept().is_err(), "the listener saw no connection");
    assert!(outcomes[3].1.contains("survived"), "{}", outcomes[3].1);
    assert_eq!(
        client.ok("ping", json!({})).await,
        json!({}),
        "the server is alive"
    );
}

#[actix_web::test]
async fn limits_end_a_fork_bomb_an_endless_loop_and_a_flood_of_output() {
    let _burning = CPU_BURNERS.read().await;
    let llm = FakeLlm::start(proposing(&[
        "while :; do :; done",
        "head -c 1000000000 /dev/zero | tr '\\0' a",
        "sleep 1001 & (setsid sleep 1002 &); echo left-behind",
        "bomb() { bomb | bomb & }; bomb; sleep 2; echo outlived-the-bomb",
    ]));
    let app = server(&llm).await;
    let (mut client, _) = app.client_in_project("limits").await;
    let mut other = app.client().await;
    let (run, path) = client.act_until_proposal("spin").await;
    let resolving = client
        .send(
            "run/resolve",
            json!({"run": run, "resolution": {"path": path, "action": "accept"}}),
        )
        .await;
    assert_eq!(
        other.ok("ping", json!({})).await,
        json!({}),
        "another client is answered while the loop spins"
    );
    let reply = client.reply(&resolving).await;
    assert!(reply.get("error").is_none(), "{reply}");
    let (status, body) = entry(&app, &run, &path).await;
    assert!(
        (status == 422 && body.contains("CPU limit")) || status == 504,
        "{status} {body}"
    );
    let (status, body, _) = accepted(&app, &mut client, "flood").await;
    assert_eq!(status, 413, "{}", &body[body.len().saturating_sub(200)..]);
    assert!(
        body.len() <= 65536 + 200,
        "the entry keeps the cap: {}",
        body.len()
    );
    assert!(body.contains("bytes omitted"));
    let (status, body, _) = accepted(&app, &mut client, "leave things").await;
    assert_eq!((status, body.as_str()), (200, "left-behind\n"));
    assert!(
        !process_alive("sleep 1001"),
        "the background job was killed"
    );
    assert!(
        !process_alive("sleep 1002"),
        "the one in its own session too"
    );
}

#[actix_web::test]
async fn abort_kills_a_long_command_and_stops_the_run() {
    let llm = FakeLlm::start(proposing(&["echo started; sleep 1003; echo finished"]));
    let app = server(&llm).await;
    let (mut client, _) = app.client_in_project("abort").await;
    let mut other = app.client().await;
    other.init("abort", &app.project_root("abort")).await;
    let (run, path) = client.act_until_proposal("sleep").await;
    let resolving = client
        .send(
            "run/resolve",
            json!({"run": run, "resolution": {"path": path, "action": "accept"}}),
        )
        .await;
    client
        .until_notified("run/output", |params| params["text"] == json!("started\n"))
        .await;
    let started = Instant::now();
    other.ok("run/abort", json!({"run": run})).await;
    let reply = client.reply(&resolving).await;
    let took = started.elapsed();
    assert_eq!(reply["result"]["status"], json!(499), "{reply}");
    assert!(took < Duration::from_secs(3), "killed in {took:?}");
    assert!(!process_alive("sleep 1003"));
    let (status, body) = entry(&app, &run, &path).await;
    assert_eq!(status, 500);
    assert!(body.ends_with("[aborted]"), "{body}");
    assert_eq!(llm.requests().len(), 1, "an aborted run does not resume");
}

#[actix_web::test]
async fn the_environment_is_scrubbed() {
    let llm = FakeLlm::start(proposing(&["env"]));
    let app = server(&llm).await;
    let (mut client, _) = app.client_in_project("env").await;
    let (status, body, _) = accepted(&app, &mut client, "env").await;
    assert_eq!(status, 200, "{body}");
    assert!(!body.contains("RUMMY_"), "{body}");
    assert!(!body.contains("API_KEY"), "{body}");
    let home = body
        .lines()
        .find_map(|line| line.strip_prefix("HOME="))
        .unwrap();
    assert!(
        home.starts_with(&app.home().join("sandbox").display().to_string()),
        "{home}"
    );
}

#[actix_web::test]
async fn project_config_is_read_by_members_set_by_admins_and_held_within_the_maxima() {
    let llm = FakeLlm::start(proposing(&["echo from-the-client-side"]));
    let app = TestApp::with_llm(
        &llm,
        &[
            (
                "RUMMY_SANDBOX_LAUNCHER",
                env!("CARGO_BIN_EXE_rummy-sandbox"),
            ),
            ("RUMMY_SANDBOX_MAX_CPU_SECS", "60"),
        ],
    )
    .await;
    let (mut client, root) = app.client_in_project("config").await;
    let read = client.ok("project/config", json!({})).await;
    assert_eq!(read["effective"]["commands"], json!("client"));
    assert_eq!(read["effective"]["cpuSecs"], json!(60));
    let (code, message) = client
        .err("project/config", json!({"sandbox": {"cpuSecs": 61}}))
        .await;
    assert_eq!(code, -32602);
    assert!(message.contains("RUMMY_SANDBOX_MAX_CPU_SECS"), "{message}");
    let (code, _) = client
        .err("project/config", json!({"sandbox": {"network": "all"}}))
        .await;
    assert_eq!(code, -32602, "an unknown key is refused");
    let (run, path) = client.act_until_proposal("client side").await;
    client
        .ok(
            "run/resolve",
            json!({"run": run, "resolution": {"path": path, "action": "accept", "output": "the client's"}}),
        )
        .await;
    assert_eq!(
        entry(&app, &run, &path).await,
        (200, "the client's".to_owned()),
        "under client, the client's output is the entry"
    );
    let set = client
        .ok(
            "project/config",
            json!({"commands": "server", "sandbox": {"cpuSecs": 30}}),
        )
        .await;
    assert_eq!(
        set["own"],
        json!({"commands": "server", "sandbox": {"cpuSecs": 30}})
    );
    assert_eq!(set["effective"]["commands"], json!("server"));
    let again = client.ok("project/config", json!({})).await;
    assert_eq!(again["effective"]["cpuSecs"], json!(30), "kept");
    let bound = client
        .ok("init", json!({"name": "config", "projectRoot": root}))
        .await;
    assert_eq!(bound["commands"], json!("server"), "init tells the client");
}

#[actix_web::test]
async fn server_mode_refuses_to_start_where_commands_cannot_be_confined() {
    let home = tempfile::tempdir().unwrap();
    let mut env = std::collections::HashMap::new();
    env.insert("RUMMY_HOME".to_owned(), home.path().display().to_string());
    env.insert("PORT".to_owned(), "0".to_owned());
    env.insert("RUMMY_RUN_COMMANDS".to_owned(), "server".to_owned());
    env.insert("RUMMY_SANDBOX_LAUNCHER".to_owned(), "/bin/false".to_owned());
    let settings = crate::support::settings(&env);
    let error = rummy::app::start(settings)
        .await
        .err()
        .expect("the start fails");
    let message = error.to_string();
    assert!(message.contains("cannot run confined"), "{message}");
    assert!(message.contains("RUMMY_SANDBOX=off"), "{message}");
}

#[actix_web::test]
async fn a_command_aborted_while_it_waits_for_a_place_never_runs() {
    let llm = FakeLlm::start([
        Step::reply("<sh>echo started; sleep 1005</sh><update>holding</update>"),
        Step::reply("<sh>touch never-ran</sh><update>waiting</update>"),
    ]);
    let mut env = LIMITS.to_vec();
    env.push(("RUMMY_SANDBOX_MAX_CONCURRENT", "1"));
    let app = TestApp::with_llm(&llm, &env).await;
    let (mut first, root) = app.client_in_project("places").await;
    let (busy, busy_path) = first.act_until_proposal("hold the place").await;
    let holding = first
        .send(
            "run/resolve",
            json!({"run": busy, "resolution": {"path": busy_path, "action": "accept"}}),
        )
        .await;
    first
        .until_notified("run/output", |params| params["text"] == json!("started\n"))
        .await;
    let mut second = app.client().await;
    second.init("places", &root).await;
    let (waiting, path) = second.act_until_proposal("wait for it").await;
    let queued = second
        .send(
            "run/resolve",
            json!({"run": waiting, "resolution": {"path": path, "action": "accept"}}),
        )
        .await;
    let mut aborter = app.client().await;
    aborter.init("places", &root).await;
    // A resolution of a path the run never had changes nothing, and says whether the run
    // has a command under way.
    eventually("the second command to wait for its place", async || {
        let (_, message) = aborter
            .err(
                "run/resolve",
                json!({"run": waiting, "resolution": {"path": "sh://none", "action": "reject"}}),
            )
            .await;
        message.contains("running on the server").then_some(())
    })
    .await;
    aborter.ok("run/abort", json!({"run": waiting})).await;
    let reply = second.reply(&queued).await;
    assert_eq!(reply["result"]["status"], json!(499), "{reply}");
    assert!(!root.join("never-ran").exists(), "it never started");
    assert_eq!(entry(&app, &waiting, &path).await.0, 500);
    aborter.ok("run/abort", json!({"run": busy})).await;
    assert_eq!(first.reply(&holding).await["result"]["status"], json!(499));
}
