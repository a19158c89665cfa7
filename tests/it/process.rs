//! The `rummy` binary as a newcomer and an operator meet it: `cargo run` picks the server,
//! and a server killed (`kill -9`) or stopped (SIGTERM) mid-loop comes back with the run
//! aborted and its loop pending, spending no LLM call until a client drives the run again;
//! a server on PostgreSQL exits 0 on SIGTERM.

use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::{json, Value};

use crate::support::{eventually, llm_env, project_root, user_message, Client};
use rummy::testing::fake_llm::{FakeLlm, Step, WhenExhausted};
use rummy::testing::ScratchDatabase;

/// A `rummy serve` process on a loopback port, with its home kept across restarts.
pub(crate) struct ServerProcess {
    child: Child,
    pub port: u16,
}

impl ServerProcess {
    /// Starts the binary on `home` and waits until `/healthz` answers (no session notes, as
    /// `support::llm_env`: the scripted steps answer turns only).
    async fn start(home: &Path, llm: &FakeLlm) -> ServerProcess {
        ServerProcess::start_with(home, llm, &[]).await
    }

    /// [`ServerProcess::start`] with extra environment variables.
    pub(crate) async fn start_with(
        home: &Path,
        llm: &FakeLlm,
        extra: &[(&str, &str)],
    ) -> ServerProcess {
        let port = free_port();
        let child = Command::new(env!("CARGO_BIN_EXE_rummy"))
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("RUMMY_HOME", home)
            .env("PORT", port.to_string())
            .env("RUMMY_LOG", "warn")
            .envs(llm_env(llm))
            .envs(extra.iter().copied())
            .stdout(Stdio::null())
            .spawn()
            .unwrap();
        let server = ServerProcess { child, port };
        wait_until_healthy(server.port).await;
        server
    }

    pub(crate) async fn client(&self) -> Client {
        Client::connect(&format!("ws://127.0.0.1:{}/", self.port)).await
    }

    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Sends `signal` (a `kill` option such as `-9`) and waits for the process to exit.
    pub(crate) fn stop_with(mut self, signal: &str) -> std::process::ExitStatus {
        let sent = Command::new("kill")
            .arg(signal)
            .arg(self.child.id().to_string())
            .status()
            .unwrap();
        assert!(sent.success());
        self.child.wait().unwrap()
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A `rummy serve` process on a home of its own, logging warnings, whose log is read as it
/// comes (so the server never waits on a full pipe).
pub(crate) struct LoggedServer {
    child: tokio::process::Child,
    pub port: u16,
    lines: tokio::sync::mpsc::UnboundedReceiver<String>,
    _home: tempfile::TempDir,
}

impl LoggedServer {
    /// How long [`logged`](Self::logged) waits for a line.
    const WAIT: Duration = Duration::from_secs(60);

    /// Starts the binary on `home` with `env` and nothing else from this environment.
    pub(crate) async fn start(home: tempfile::TempDir, env: &[(&str, &str)]) -> LoggedServer {
        use tokio::io::AsyncBufReadExt;
        let port = free_port();
        let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_rummy"))
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("RUMMY_HOME", home.path())
            .env("PORT", port.to_string())
            .env("RUMMY_LOG", "warn")
            .env("NO_COLOR", "1")
            .envs(env.iter().copied())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let mut log = tokio::io::BufReader::new(child.stderr.take().unwrap()).lines();
        let (sent, lines) = tokio::sync::mpsc::unbounded_channel();
        actix_web::rt::spawn(async move {
            while let Ok(Some(line)) = log.next_line().await {
                if sent.send(line).is_err() {
                    return;
                }
            }
        });
        wait_until_healthy(port).await;
        LoggedServer {
            child,
            port,
            lines,
            _home: home,
        }
    }

    pub(crate) fn url(&self) -> String {
        format!("ws://127.0.0.1:{}/", self.port)
    }

    /// Its home.
    pub(crate) fn home(&self) -> &std::path::Path {
        self._home.path()
    }

    pub(crate) fn pid(&self) -> u32 {
        self.child.id().unwrap()
    }

    /// The next log line with every one of `parts`.
    pub(crate) async fn logged(&mut self, parts: &[&str]) -> String {
        let found = async {
            while let Some(line) = self.lines.recv().await {
                if parts.iter().all(|part| line.contains(part)) {
                    return Some(line);
                }
            }
            None
        };
        match tokio::time::timeout(Self::WAIT, found).await {
            Ok(Some(line)) => line,
            Ok(None) => panic!("the server's log ended without a line with {parts:?}"),
            Err(_) => panic!("the server logged no line with {parts:?}"),
        }
    }

    /// Kills the server and gives the lines of its log not read yet.
    pub(crate) async fn stop(mut self) -> String {
        self.child.start_kill().unwrap();
        self.child.wait().await.unwrap();
        self.rest().await
    }

    /// Sends SIGTERM and gives the server's exit status and the lines of its log not read
    /// yet.
    pub(crate) async fn terminate(mut self) -> (std::process::ExitStatus, String) {
        let sent = tokio::process::Command::new("kill")
            .arg("-TERM")
            .arg(self.pid().to_string())
            .status()
            .await
            .unwrap();
        assert!(sent.success());
        let status = self.child.wait().await.unwrap();
        (status, self.rest().await)
    }

    /// The lines of the log not read yet, up to its end.
    async fn rest(&mut self) -> String {
        let mut rest = String::new();
        while let Some(line) = self.lines.recv().await {
            rest.push_str(&line);
            rest.push('\n');
        }
        rest
    }
}

/// Waits until `/healthz` on `port` answers.
pub(crate) async fn wait_until_healthy(port: u16) {
    let url = format!("http://127.0.0.1:{}/healthz", port);
    let http = awc::Client::new();
    eventually(&format!("rummy to be healthy on port {port}"), async || {
        let response = http.get(&url).send().await.ok()?;
        response.status().is_success().then_some(())
    })
    .await;
}

/// A loopback port nothing listens on now.
pub(crate) fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[actix_web::test]
async fn cargo_run_starts_the_server() {
    let output = tokio::process::Command::new(env!("CARGO"))
        .args([
            "metadata",
            "--no-deps",
            "--offline",
            "--format-version",
            "1",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .await
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    let metadata: Value = serde_json::from_slice(&output.stdout).unwrap();
    let package = &metadata["packages"][0];
    assert_eq!(
        package["default_run"],
        json!("rummy"),
        "`cargo run` needs --bin"
    );
    let binaries: Vec<&str> = package["targets"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|target| target["kind"] == json!(["bin"]))
        .map(|target| target["name"].as_str().unwrap())
        .collect();
    assert!(binaries.contains(&"rummy-load"), "{binaries:?}");
}

/// `rummy healthcheck` (with `extra` arguments) in the environment of a server on `port`,
/// as a container runs it.
async fn healthcheck(home: &Path, port: u16, extra: &[&str]) -> std::process::ExitStatus {
    tokio::process::Command::new(env!("CARGO_BIN_EXE_rummy"))
        .arg("healthcheck")
        .args(extra)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env_clear()
        .env("RUMMY_HOME", home)
        .env("PORT", port.to_string())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .await
        .unwrap()
}

#[actix_web::test]
async fn the_healthcheck_subcommand_exits_0_only_when_its_probe_answers_200() {
    let llm = FakeLlm::builder([Step::error(503), Step::error(503)])
        .when_exhausted(WhenExhausted::Error(500))
        .start();
    let home = tempfile::tempdir().unwrap();
    let server = ServerProcess::start(home.path(), &llm).await;
    let port = server.port;
    assert_eq!(healthcheck(home.path(), port, &[]).await.code(), Some(0));
    assert_eq!(
        healthcheck(home.path(), port, &["--ready"]).await.code(),
        Some(0),
        "a started server is ready"
    );
    server.stop_with("-TERM");
    assert_eq!(
        healthcheck(home.path(), port, &[]).await.code(),
        Some(1),
        "nothing listens"
    );
    let unhealthy: u16 = llm.base_url().rsplit(':').next().unwrap().parse().unwrap();
    assert_eq!(
        healthcheck(home.path(), unhealthy, &[]).await.code(),
        Some(1),
        "a server answering 503"
    );
    assert_eq!(
        healthcheck(home.path(), unhealthy, &["--ready"])
            .await
            .code(),
        Some(1),
        "a server answering 503 is not ready"
    );
    let asked: Vec<String> = llm.recorded().into_iter().map(|seen| seen.path).collect();
    assert_eq!(asked, ["/healthz", "/readyz"], "what each probe asked");
}

#[actix_web::test]
async fn the_server_logs_to_stderr_one_line_per_event() {
    let home = tempfile::tempdir().unwrap();
    let port = free_port();
    let child = Command::new(env!("CARGO_BIN_EXE_rummy"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("RUMMY_HOME", home.path())
        .env("PORT", port.to_string())
        .env("RUMMY_LOG", "info")
        .env("NO_COLOR", "1")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let server = ServerProcess {
        child: Command::new("true").spawn().unwrap(),
        port,
    };
    wait_until_healthy(server.port).await;
    let stopped = Command::new("kill")
        .arg("-TERM")
        .arg(child.id().to_string())
        .status()
        .unwrap();
    assert!(stopped.success());
    let output = child.wait_with_output().unwrap();
    let log = String::from_utf8_lossy(&output.stderr);
    assert!(
        log.lines()
            .any(|line| line.contains(&format!("rummy listening addr=127.0.0.1:{port}"))),
        "{log}"
    );
}

/// Interrupts a loop by `signal`, restarts, and checks the run waits for its client.
async fn interrupted_loop_waits_for_its_client(signal: &str, clean_exit: bool) {
    let llm = FakeLlm::builder([
        Step::Hang,
        Step::reply("<summarize>first, resumed</summarize>"),
        Step::reply("<summarize>second</summarize>"),
    ])
    .when_exhausted(WhenExhausted::Error(500))
    .start();
    let home = tempfile::tempdir().unwrap();
    let root = project_root(home.path());
    let server = ServerProcess::start(home.path(), &llm).await;
    let mut client = server.client().await;
    client.init("recovery", &root).await;
    client
        .send("ask", json!({"model": "fake", "prompt": "first prompt"}))
        .await;
    let progress = client.notification("run/progress").await;
    let run = progress["params"]["run"].as_str().unwrap().to_string();
    llm.wait_for_requests(1).await;
    let exit = server.stop_with(signal);
    assert_eq!(exit.success(), clean_exit, "{exit:?}");

    let server = ServerProcess::start(home.path(), &llm).await;
    let mut client = server.client().await;
    client.init("recovery", &root).await;
    let stored = client.ok("getRun", json!({"run": run})).await;
    assert_eq!(stored["status"], json!(499), "{stored}");
    let idle = client.start_run("fake").await;
    assert_eq!(
        client.ok("getRun", json!({"run": idle})).await["status"],
        json!(100),
        "runs created after the restart are untouched"
    );
    assert_eq!(llm.requests().len(), 1, "nothing ran before a client asked");

    let outcome = client
        .ok(
            "ask",
            json!({"model": "fake", "prompt": "second prompt", "run": run}),
        )
        .await;
    assert_eq!(
        outcome,
        json!({"run": run, "status": 200, "reason": "done"})
    );
    let requests = llm.requests();
    assert_eq!(requests.len(), 3);
    assert!(user_message(&requests[1]).contains("first prompt"));
    assert!(user_message(&requests[2]).contains("second prompt"));
}

#[actix_web::test]
async fn a_killed_server_leaves_the_run_aborted_until_a_client_drives_it() {
    interrupted_loop_waits_for_its_client("-9", false).await;
}

#[actix_web::test]
async fn a_stopped_server_leaves_the_run_aborted_until_a_client_drives_it() {
    interrupted_loop_waits_for_its_client("-TERM", true).await;
}

/// `rummy serve` on PostgreSQL (over verified TLS in tests/run.sh's pass) that has run a
/// loop, so that its writer, its readers and both threads of its frame bus have used TLS,
/// exits 0 on SIGTERM, as a server in a container must. Several rounds: what this guards
/// against, OpenSSL's exit clean-up racing the threads that end with the process (see
/// `db::connect_postgres`), struck one exit in many.
#[actix_web::test]
#[ignore = "needs PostgreSQL: RUMMY_TEST_DATABASE_URL"]
async fn a_server_on_postgresql_exits_0_on_sigterm() {
    let database = ScratchDatabase::required();
    let llm = FakeLlm::start([]);
    for round in 1..=5 {
        let home = tempfile::tempdir().unwrap();
        let root = project_root(home.path());
        let mut env = llm_env(&llm);
        env.push(("RUMMY_DATABASE_URL", database.url()));
        // glibc reports a heap error on the terminal when there is one; here, on the log.
        env.push(("LIBC_FATAL_STDERR_", "1"));
        let server = LoggedServer::start(home, &env).await;
        let mut client = Client::connect(&server.url()).await;
        client.init(&format!("stop-{round}"), &root).await;
        let outcome = client
            .ok(
                "ask",
                json!({"model": "fake", "prompt": "hello", "noRepo": true}),
            )
            .await;
        assert_eq!(outcome["status"], json!(200), "round {round}: {outcome}");
        let (status, log) = server.terminate().await;
        assert_eq!(status.code(), Some(0), "round {round}: {status:?}\n{log}");
    }
}

#[actix_web::test]
async fn a_run_created_before_a_crash_is_aborted_after_it() {
    let llm = FakeLlm::builder([])
        .when_exhausted(WhenExhausted::Error(500))
        .start();
    let home = tempfile::tempdir().unwrap();
    let root = project_root(home.path());
    let server = ServerProcess::start(home.path(), &llm).await;
    let mut client = server.client().await;
    client.init("recovery", &root).await;
    let created = client.start_run("fake").await;
    server.stop_with("-9");
    let server = ServerProcess::start(home.path(), &llm).await;
    let mut client = server.client().await;
    client.init("recovery", &root).await;
    let stored = client.ok("getRun", json!({"run": created})).await;
    assert_eq!(stored["status"], json!(499));
}

#[actix_web::test]
async fn abort_replies_only_after_the_499_is_stored_in_a_real_process() {
    let rounds = 10;
    let llm = FakeLlm::builder(std::iter::repeat_with(|| Step::Hang).take(rounds))
        .when_exhausted(WhenExhausted::Error(500))
        .start();
    let home = tempfile::tempdir().unwrap();
    let root = project_root(home.path());
    let server = ServerProcess::start(home.path(), &llm).await;
    let mut driver = server.client().await;
    let mut other = server.client().await;
    driver.init("abort", &root).await;
    other.init("abort", &root).await;
    for round in 1..=rounds {
        let id = driver
            .send(
                "ask",
                json!({"model": "fake", "prompt": "think forever", "noRepo": true}),
            )
            .await;
        let progress = other.notification("run/progress").await;
        let run = progress["params"]["run"].as_str().unwrap().to_string();
        llm.wait_for_requests(round).await;
        other.ok("run/abort", json!({"run": run})).await;
        let stored = other.ok("getRun", json!({"run": run})).await;
        assert_eq!(stored["status"], json!(499), "round {round}");
        assert_eq!(driver.reply(&id).await["result"]["status"], json!(499));
    }
}

#[actix_web::test]
async fn sighup_reloads_the_users_file() {
    let home = tempfile::tempdir().unwrap();
    let users = home.path().join("users.toml");
    let person = |role: &str| {
        format!(
            "[[person]]\nname = \"mo\"\ntoken_sha256 = \"{}\"\nrole = \"{role}\"\n\
             projects = [\"web\"]\n",
            rummy::hash_token("mo-token")
        )
    };
    std::fs::write(&users, person("member")).unwrap();
    let llm = FakeLlm::start([]);
    let server =
        ServerProcess::start_with(home.path(), &llm, &[("RUMMY_USERS_FILE", "users.toml")]).await;
    let mut mo = Client::connect(&format!("ws://127.0.0.1:{}/?token=mo-token", server.port)).await;
    mo.init("web", &project_root(home.path())).await;
    mo.ok("startRun", json!({"model": "fake"})).await;

    // The same size and modification time: only the signal can make the server look again.
    let written = std::fs::metadata(&users).unwrap().modified().unwrap();
    std::fs::write(&users, person("viewer")).unwrap();
    std::fs::File::options()
        .write(true)
        .open(&users)
        .unwrap()
        .set_modified(written)
        .unwrap();
    // Longer than the watch's interval (1 s): the watch saw no change, so mo is a member still.
    tokio::time::sleep(Duration::from_millis(2500)).await;
    mo.ok("startRun", json!({"model": "fake"})).await;
    let sent = Command::new("kill")
        .arg("-HUP")
        .arg(server.child.id().to_string())
        .status()
        .unwrap();
    assert!(sent.success());
    eventually("SIGHUP to reload the users file", async || {
        let reply = mo.call("startRun", json!({"model": "fake"})).await;
        let refused = json!("mo is a viewer; 'startRun' needs the member role.");
        (reply["error"]["message"] == refused).then_some(())
    })
    .await;
}

#[test]
fn hash_token_prints_the_users_file_line() {
    use std::io::Write;
    let mut child = Command::new(env!("CARGO_BIN_EXE_rummy"))
        .arg("hash-token")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(b"abc\n").unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(output.status.success());
    assert_eq!(
        String::from_utf8(output.stdout).unwrap(),
        "token_sha256 = \"ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad\"\n"
    );
    let empty = Command::new(env!("CARGO_BIN_EXE_rummy"))
        .arg("hash-token")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(!empty.success(), "no token, no hash");
}
