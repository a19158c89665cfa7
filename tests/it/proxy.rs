//! rummy (the real binary) behind the real nginx, configured by `docker/nginx.conf` and
//! `docker/nginx-upstream.conf` with only the listen address, the upstream's address and
//! `proxy_read_timeout` rewritten: the WebSocket upgrade
//! and a whole session go through it; rummy's pings keep an idle connection open past
//! nginx's read timeout, which does close one without them; and rummy logs the client's
//! address from `X-Forwarded-For` only when nginx is a trusted proxy.
//!
//! They need nginx, which `tests/run.sh` installs: they are `#[ignore]`d, so that a plain
//! `cargo test` lists them as ignored instead of counting them as passed, and run.sh runs
//! them (`--ignored`) once nginx is there. Run without nginx, they fail and say why.

use std::io::{BufRead, BufReader};
use std::net::{IpAddr, Ipv4Addr};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::{json, Value};
use tokio::sync::mpsc;

use crate::process::{free_port, wait_until_healthy};
use crate::support::{project_root, Client};
use rummy::testing::fake_llm::{FakeLlm, Step};

/// The configuration under test, as shipped: the server block and its upstream.
const NGINX_CONF: &str = include_str!("../../docker/nginx.conf");
const NGINX_UPSTREAM: &str = include_str!("../../docker/nginx-upstream.conf");

/// nginx's `proxy_read_timeout` in these tests: far below the shipped 60 s, to stay quick.
const READ_TIMEOUT_SECS: u64 = 2;

/// How long an idle connection is watched: three of nginx's read timeouts.
const IDLE: Duration = Duration::from_secs(3 * READ_TIMEOUT_SECS);

/// How long a test waits for rummy to log a line it expects.
const LOG_WAIT: Duration = Duration::from_secs(30);

/// The address clients connect from: loopback, but not the 127.0.0.1 of nginx, so that
/// the addresses rummy logs tell the two apart.
const CLIENT_IP: IpAddr = IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2));

/// A `rummy serve` process whose stderr the test reads line by line.
struct Rummy {
    child: Child,
    port: u16,
    log: mpsc::UnboundedReceiver<String>,
    _home: tempfile::TempDir,
}

impl Rummy {
    /// Starts the binary with the scripted `llm` and `extra` variables; waits for `/healthz`.
    async fn start(llm: &FakeLlm, extra: &[(&str, &str)]) -> Rummy {
        let home = tempfile::tempdir().unwrap();
        let port = free_port();
        let mut command = Command::new(env!("CARGO_BIN_EXE_rummy"));
        command
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("RUMMY_HOME", home.path())
            .env("PORT", port.to_string())
            .env("RUMMY_LOG", "info")
            .env("NO_COLOR", "1")
            .env("OPENAI_BASE_URL", llm.base_url())
            .env("RUMMY_MODEL_fake", "openai/fake")
            .env("RUMMY_CONTEXT_fake", "32768")
            .env("RUMMY_LLM_ATTEMPTS", "1")
            // No session notes: a loop is then one request to the scripted model.
            .env("RUMMY_MEMORY_SESSION_TOKENS", "0")
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        for (key, value) in extra {
            command.env(key, value);
        }
        let mut child = command.spawn().unwrap();
        let stderr = child.stderr.take().unwrap();
        let (lines, log) = mpsc::unbounded_channel();
        // Drained all along, so that rummy never blocks on a full pipe.
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                let _ = lines.send(line);
            }
        });
        wait_until_healthy(port).await;
        Rummy {
            child,
            port,
            log,
            _home: home,
        }
    }

    /// The `client.addr` of the next connection rummy logs as opened.
    async fn next_client_addr(&mut self) -> String {
        loop {
            let line = tokio::time::timeout(LOG_WAIT, self.log.recv())
                .await
                .expect("rummy logged no opened connection in time")
                .expect("rummy's stderr closed");
            if let Some(addr) = opened_client_addr(&line) {
                return addr;
            }
        }
    }
}

impl Drop for Rummy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The client address of a "connection opened" line, in either log format.
fn opened_client_addr(line: &str) -> Option<String> {
    if let Ok(event) = serde_json::from_str::<Value>(line) {
        if event["fields"]["message"] != "connection opened" {
            return None;
        }
        return event["span"]["client.addr"].as_str().map(str::to_string);
    }
    if !line.contains("connection opened") {
        return None;
    }
    let (_, rest) = line.split_once("client.addr=")?;
    let addr = rest.split(|c: char| c == '}' || c.is_whitespace()).next()?;
    Some(addr.to_string())
}

/// nginx in the foreground as one process (no workers to outlive it), with its files in a
/// directory of its own.
pub(crate) struct Nginx {
    child: Child,
    pub(crate) port: u16,
    _dir: tempfile::TempDir,
}

impl Nginx {
    /// Checks `docker/nginx.conf` with `nginx -t`, proxying to rummy on `upstream` with a
    /// read timeout of [`READ_TIMEOUT_SECS`], then runs it on a free port.
    pub(crate) async fn start(upstream: u16) -> Nginx {
        let binary = nginx_binary();
        let dir = tempfile::tempdir().unwrap();
        let port = free_port();
        let site = rewritten(
            NGINX_CONF,
            &[
                ("listen 8080;", format!("listen 127.0.0.1:{port};")),
                (
                    "proxy_read_timeout 60s;",
                    format!("proxy_read_timeout {READ_TIMEOUT_SECS}s;"),
                ),
            ],
        );
        let instances = rewritten(
            NGINX_UPSTREAM,
            &[("rummy:3044", format!("127.0.0.1:{upstream}"))],
        );
        let path = |name: &str| dir.path().join(name).display().to_string();
        std::fs::write(path("rummy.conf"), site).unwrap();
        std::fs::write(path("upstream.conf"), instances).unwrap();
        let temp_paths: String = ["client_body", "proxy", "fastcgi", "uwsgi", "scgi"]
            .iter()
            .map(|kind| format!("    {kind}_temp_path {};\n", path(kind)))
            .collect();
        let main = format!(
            "events {{}}\nhttp {{\n    access_log {};\n{temp_paths}    include {};\n    include {};\n}}\n",
            path("access.log"),
            path("upstream.conf"),
            path("rummy.conf"),
        );
        std::fs::write(path("nginx.conf"), main).unwrap();
        let globals = format!(
            "daemon off; master_process off; pid {}; error_log {} info;",
            path("nginx.pid"),
            path("error.log"),
        );
        let arguments = ["-p", &path(""), "-c", &path("nginx.conf"), "-g", &globals];
        let checked = tokio::process::Command::new(&binary)
            .arg("-t")
            .args(arguments)
            .output()
            .await
            .unwrap();
        assert!(
            checked.status.success(),
            "nginx -t refuses docker/nginx.conf with its upstream: {}",
            String::from_utf8_lossy(&checked.stderr)
        );
        let child = Command::new(&binary)
            .args(arguments)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let nginx = Nginx {
            child,
            port,
            _dir: dir,
        };
        // Through nginx: the health location reaches rummy.
        wait_until_healthy(port).await;
        nginx
    }

    /// A client connected through nginx from [`CLIENT_IP`], sending `forwarded_for` as its
    /// own `X-Forwarded-For` when given.
    async fn client(&self, forwarded_for: Option<&str>) -> Client {
        connect(self.port, forwarded_for).await
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A client on `port` from [`CLIENT_IP`], with `forwarded_for` as its `X-Forwarded-For`.
async fn connect(port: u16, forwarded_for: Option<&str>) -> Client {
    let http = awc::Client::builder().local_address(CLIENT_IP).finish();
    let mut request = http.ws(format!("ws://127.0.0.1:{port}/"));
    if let Some(forwarded_for) = forwarded_for {
        request = request.header("X-Forwarded-For", forwarded_for);
    }
    Client::connect_with(request).await
}

/// `text` with each `(from, to)` replaced; a `from` that is not in it fails the test, since
/// the configuration under test would no longer be the one shipped.
fn rewritten(text: &str, replacements: &[(&str, String)]) -> String {
    replacements
        .iter()
        .fold(text.to_string(), |text, (from, to)| {
            assert!(text.contains(from), "the shipped file has no `{from}`");
            text.replace(from, to)
        })
}

/// nginx from PATH or where Debian installs it; a test without it fails, saying so.
fn nginx_binary() -> PathBuf {
    let on_path = std::env::var_os("PATH")
        .map(|path| std::env::split_paths(&path).collect::<Vec<_>>())
        .unwrap_or_default();
    on_path
        .into_iter()
        .chain([PathBuf::from("/usr/sbin")])
        .map(|dir| dir.join("nginx"))
        .find(|candidate| candidate.is_file())
        .expect("nginx is not installed: tests/run.sh installs it (apt-get install nginx)")
}

#[actix_web::test]
#[ignore = "needs nginx: tests/run.sh installs it and runs these"]
async fn a_session_runs_through_nginx() {
    let llm = FakeLlm::start([Step::reply("<summarize>The answer is 4.</summarize>")]);
    let rummy = Rummy::start(&llm, &[]).await;
    let nginx = Nginx::start(rummy.port).await;
    let project = tempfile::tempdir().unwrap();
    let mut client = nginx.client(None).await;
    client.init("proxied", &project_root(project.path())).await;
    let outcome = client
        .ok("ask", json!({"model": "fake", "prompt": "What is 2 + 2?"}))
        .await;
    assert_eq!(outcome["status"], json!(200), "{outcome}");
    let thinking = client.notification("run/progress").await;
    assert_eq!(thinking["params"]["status"], json!("thinking"));
    assert_eq!(thinking["params"]["run"], outcome["run"]);
    let processing = client.notification("run/progress").await;
    assert_eq!(processing["params"]["status"], json!("processing"));
    let state = client.notification("run/state").await;
    assert_eq!(state["params"]["summary"], json!("The answer is 4."));
    assert_eq!(llm.requests().len(), 1);
}

#[actix_web::test]
#[ignore = "needs nginx: tests/run.sh installs it and runs these"]
async fn rummys_pings_keep_an_idle_connection_open_past_nginxs_read_timeout() {
    let llm = FakeLlm::start([]);
    let rummy = Rummy::start(&llm, &[("RUMMY_HEARTBEAT_SECS", "1")]).await;
    let nginx = Nginx::start(rummy.port).await;
    let mut client = nginx.client(None).await;
    // Answers pings, as editors do, and gets nothing else.
    let idle = tokio::time::timeout(IDLE, client.next_frame()).await;
    assert!(idle.is_err(), "the connection ended while idle: {idle:?}");
    assert_eq!(client.ok("ping", json!({})).await, json!({}));
}

#[actix_web::test]
#[ignore = "needs nginx: tests/run.sh installs it and runs these"]
async fn without_pings_nginx_closes_an_idle_connection_after_its_read_timeout() {
    let llm = FakeLlm::start([]);
    let rummy = Rummy::start(
        &llm,
        &[
            ("RUMMY_HEARTBEAT_SECS", "600"),
            ("RUMMY_CLIENT_TIMEOUT_SECS", "600"),
        ],
    )
    .await;
    let nginx = Nginx::start(rummy.port).await;
    let mut client = nginx.client(None).await;
    let idle = tokio::time::timeout(IDLE, client.next_frame()).await;
    assert!(
        matches!(idle, Ok(None | Some(awc::ws::Frame::Close(_)))),
        "nginx should have closed the silent connection: {idle:?}"
    );
}

#[actix_web::test]
#[ignore = "needs nginx: tests/run.sh installs it and runs these"]
async fn the_client_address_comes_from_x_forwarded_for_only_through_a_trusted_proxy() {
    let llm = FakeLlm::start([]);
    let forged = Some("203.0.113.9");
    let mut trusting = Rummy::start(
        &llm,
        &[
            ("RUMMY_TRUSTED_PROXIES", "127.0.0.1"),
            ("RUMMY_LOG_FORMAT", "json"),
        ],
    )
    .await;
    let nginx = Nginx::start(trusting.port).await;
    let mut proxied = nginx.client(forged).await;
    assert_eq!(proxied.ok("ping", json!({})).await, json!({}));
    assert_eq!(
        trusting.next_client_addr().await,
        CLIENT_IP.to_string(),
        "the hop nginx added, not the one the client forged"
    );
    let mut direct = connect(trusting.port, forged).await;
    assert_eq!(direct.ok("ping", json!({})).await, json!({}));
    assert_eq!(
        trusting.next_client_addr().await,
        CLIENT_IP.to_string(),
        "an untrusted peer's X-Forwarded-For is ignored"
    );

    let mut untrusting = Rummy::start(&llm, &[]).await;
    let nginx = Nginx::start(untrusting.port).await;
    let mut proxied = nginx.client(forged).await;
    assert_eq!(proxied.ok("ping", json!({})).await, json!({}));
    assert_eq!(
        untrusting.next_client_addr().await,
        "127.0.0.1",
        "without trust, nginx itself is the client"
    );
}
