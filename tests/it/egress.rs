//! rummy's egress proxy (issue 44 item 4), end to end: a project that allows destinations
//! by host has its commands — real `curl`, confined — reach them through the proxy and
//! nothing else; a destination not allowed is a 403 the command sees; a direct connection
//! fails; a project without hosts has no proxy and no network, as before.

use std::sync::{Arc, Mutex};

use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use crate::support::{Client, TestApp};
use rummy::testing::fake_llm::{FakeLlm, Step};

/// A loopback HTTP server answering `ok` to every request, keeping each request's head.
struct Upstream {
    port: u16,
    heads: Arc<Mutex<Vec<String>>>,
}

impl Upstream {
    async fn start() -> Upstream {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let heads = Arc::new(Mutex::new(Vec::new()));
        let kept = Arc::clone(&heads);
        tokio::spawn(async move {
            while let Ok((mut socket, _)) = listener.accept().await {
                let kept = Arc::clone(&kept);
                tokio::spawn(async move {
                    let mut head = Vec::new();
                    let mut byte = [0_u8; 1];
                    while !head.ends_with(b"\r\n\r\n") {
                        if socket.read(&mut byte).await.unwrap_or(0) == 0 {
                            return;
                        }
                        head.push(byte[0]);
                    }
                    kept.lock()
                        .unwrap()
                        .push(String::from_utf8_lossy(&head).into_owned());
                    let _ = socket
                        .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 12\r\nconnection: close\r\n\r\nupstream-ok\n")
                        .await;
                });
            }
        });
        Upstream { port, heads }
    }

    fn heads(&self) -> Vec<String> {
        self.heads.lock().unwrap().clone()
    }
}

/// Replies proposing each command, then a summary once its outcome is back.
fn proposing(commands: &[String]) -> Vec<Step> {
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

/// Each of `count` commands proposed in turn, accepted and run on the server: its entry's
/// status and body.
async fn run_each(app: &TestApp, client: &mut Client, count: usize) -> Vec<(i64, String)> {
    let mut outcomes = Vec::new();
    for index in 0..count {
        let (run, path) = client.act_until_proposal(&format!("command {index}")).await;
        client
            .ok(
                "run/resolve",
                json!({"run": run, "resolution": {"path": path, "action": "accept"}}),
            )
            .await;
        let (run, path) = (run.clone(), path.clone());
        outcomes.push(
            app.read(move |conn| crate::stored::entry_named(conn, &run, &path))
                .await
                .expect("the entry is stored"),
        );
    }
    outcomes
}

/// A server whose projects run commands on it and may allow `localhost` at `port`.
async fn server(llm: &FakeLlm, hosts: &str) -> TestApp {
    TestApp::with_llm(
        llm,
        &[
            ("RUMMY_RUN_COMMANDS", "server"),
            (
                "RUMMY_SANDBOX_LAUNCHER",
                env!("CARGO_BIN_EXE_rummy-sandbox"),
            ),
            ("RUMMY_SANDBOX_MAX_WALL_SECS", "20"),
            ("RUMMY_SANDBOX_HOSTS", hosts),
            ("RUMMY_SANDBOX_ALLOW_NETS", "127.0.0.0/8, ::1"),
        ],
    )
    .await
}

#[actix_web::test]
async fn allowed_hosts_are_reached_through_the_proxy_and_nothing_else() {
    let upstream = Upstream::start().await;
    let other = Upstream::start().await;
    let (up, elsewhere) = (upstream.port, other.port);
    let commands = [
        format!("curl -sS http://localhost:{up}/hello && env | sort"),
        format!("curl -sS -o /dev/null -w 'code=%{{http_code}}' http://localhost:{elsewhere}/"),
        format!("curl -sS --noproxy '*' --max-time 5 http://localhost:{up}/direct"),
        format!("curl -sS --max-time 5 -x '' http://127.0.0.1:{elsewhere}/direct"),
    ];
    let llm = FakeLlm::start(proposing(&commands));
    let app = server(&llm, &format!("localhost:{up}, localhost:{elsewhere}")).await;
    let (mut client, _) = app.client_in_project("egress").await;
    client
        .ok(
            "project/config",
            json!({"sandbox": {"hosts": [format!("localhost:{up}")]}}),
        )
        .await;
    let outcomes = run_each(&app, &mut client, commands.len()).await;
    let (status, body) = &outcomes[0];
    assert_eq!(*status, 200, "{body}");
    assert!(body.starts_with("upstream-ok"), "{body}");
    for variable in [
        "HTTP_PROXY=http://rummy:",
        "https_proxy=http://rummy:",
        "SSL_CERT_FILE=",
    ] {
        assert!(body.contains(variable), "{variable}: {body}");
    }
    assert!(body.contains("\nNO_PROXY=\n"), "{body}");
    let heads = upstream.heads();
    assert_eq!(heads.len(), 1, "{heads:?}");
    assert!(heads[0].starts_with("GET /hello HTTP/1.1"), "{heads:?}");
    assert!(
        !heads[0]
            .to_ascii_lowercase()
            .contains("proxy-authorization"),
        "the proxy's own credential is not passed on: {heads:?}"
    );
    let (status, body) = &outcomes[1];
    assert_eq!(
        (*status, body.as_str()),
        (200, "code=403"),
        "not allowed: refused"
    );
    for (status, body) in &outcomes[2..] {
        assert_eq!(*status, 500, "a direct connection fails: {body}");
    }
    assert!(other.heads().is_empty(), "{:?}", other.heads());
    assert_eq!(
        upstream.heads().len(),
        1,
        "no direct connection came through"
    );
}

#[actix_web::test]
async fn a_project_without_hosts_has_no_proxy_and_no_network() {
    let upstream = Upstream::start().await;
    let up = upstream.port;
    let commands = [format!(
        "env | grep -i proxy; curl -sS --max-time 5 http://localhost:{up}/"
    )];
    let llm = FakeLlm::start(proposing(&commands));
    let app = server(&llm, &format!("localhost:{up}")).await;
    let (mut client, _) = app.client_in_project("plain").await;
    let outcomes = run_each(&app, &mut client, commands.len()).await;
    let (status, body) = &outcomes[0];
    assert_eq!(*status, 500, "{body}");
    assert!(!body.to_ascii_lowercase().contains("proxy="), "{body}");
    assert!(upstream.heads().is_empty());
}

#[actix_web::test]
async fn a_project_may_allow_only_hosts_the_server_allows() {
    let llm = FakeLlm::start(Vec::new());
    let app = server(&llm, "*.example.com").await;
    let (mut client, _) = app.client_in_project("hosts").await;
    let (code, message) = client
        .err(
            "project/config",
            json!({"sandbox": {"hosts": ["github.com"]}}),
        )
        .await;
    assert_eq!(code, -32602);
    assert!(message.contains("RUMMY_SANDBOX_HOSTS"), "{message}");
    let set = client
        .ok(
            "project/config",
            json!({"sandbox": {"hosts": ["git.example.com"]}}),
        )
        .await;
    assert_eq!(set["effective"]["hosts"], json!(["git.example.com:443"]));
}
