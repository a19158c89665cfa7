//! rummy's egress proxy (issue 44 item 4), end to end: a project that allows destinations
//! by host has its commands — real `curl`, confined — reach them through the proxy and
//! nothing else; a destination not allowed is a 403 the command sees; a direct connection
//! fails; a project without hosts has no proxy and no network, as before.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use rummy::hash_token;
use serde_json::{json, Value};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio_rustls::{rustls, TlsAcceptor};

use crate::support::{Client, TestApp};
use rummy::testing::fake_llm::{FakeLlm, Step};

/// A loopback HTTP server answering `ok` to every request, keeping each request's head.
pub(crate) struct Upstream {
    pub port: u16,
    heads: Arc<Mutex<Vec<String>>>,
}

impl Upstream {
    pub(crate) async fn start() -> Upstream {
        Upstream::start_with(None).await
    }

    /// An upstream speaking TLS through `tls` when given.
    async fn start_with(tls: Option<TlsAcceptor>) -> Upstream {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let heads = Arc::new(Mutex::new(Vec::new()));
        let kept = Arc::clone(&heads);
        tokio::spawn(async move {
            while let Ok((socket, _)) = listener.accept().await {
                let (kept, tls) = (Arc::clone(&kept), tls.clone());
                tokio::spawn(async move {
                    match tls {
                        Some(tls) => {
                            if let Ok(socket) = tls.accept(socket).await {
                                answer(socket, kept).await;
                            }
                        }
                        None => answer(socket, kept).await,
                    }
                });
            }
        });
        Upstream { port, heads }
    }

    pub(crate) fn heads(&self) -> Vec<String> {
        self.heads.lock().unwrap().clone()
    }
}

/// Reads one request's head into `kept` and answers `upstream-ok`.
async fn answer<S: AsyncRead + AsyncWrite + Unpin>(mut socket: S, kept: Arc<Mutex<Vec<String>>>) {
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
        .write_all(
            b"HTTP/1.1 200 OK\r\ncontent-length: 12\r\nconnection: close\r\n\r\nupstream-ok\n",
        )
        .await;
    let _ = socket.shutdown().await;
}

/// Replies proposing each command, then a summary once its outcome is back.
pub(crate) fn proposing(commands: &[String]) -> Vec<Step> {
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
pub(crate) async fn run_each(
    app: &TestApp,
    client: &mut Client,
    count: usize,
) -> Vec<(i64, String)> {
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

/// A CA and a certificate for `localhost` it signed: the TLS acceptor of an HTTPS upstream
/// presenting it, and the CA's certificate in a PEM file in `dir` (the proxy's
/// `RUMMY_SANDBOX_UPSTREAM_CA`).
fn upstream_tls(dir: &Path) -> (TlsAcceptor, PathBuf) {
    use rustls::pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer};
    let ca_key = rcgen::KeyPair::generate().unwrap();
    let mut ca = rcgen::CertificateParams::default();
    ca.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ca.distinguished_name
        .push(rcgen::DnType::CommonName, "egress test upstream CA");
    let ca_file = dir.join("upstream-ca.pem");
    std::fs::write(&ca_file, ca.self_signed(&ca_key).unwrap().pem()).unwrap();
    let issuer = rcgen::Issuer::new(ca, ca_key);
    let key = rcgen::KeyPair::generate().unwrap();
    let leaf = rcgen::CertificateParams::new(vec!["localhost".to_owned()])
        .unwrap()
        .signed_by(&key, &issuer)
        .unwrap();
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der()));
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(vec![leaf.der().clone()], key)
        .unwrap();
    (TlsAcceptor::from(Arc::new(config)), ca_file)
}

/// A users file in `dir`: ada administers everything; mo and olga are members.
pub(crate) fn team(dir: &Path) -> PathBuf {
    let text: String = [("ada", "admin"), ("mo", "member"), ("olga", "member")]
        .iter()
        .map(|(name, role)| {
            format!(
                "[[person]]\nname = \"{name}\"\ntoken_sha256 = \"{}\"\nrole = \"{role}\"\n\
                 projects = [\"*\"]\n",
                hash_token(&format!("{name}-token"))
            )
        })
        .collect();
    let file = dir.join("users.toml");
    std::fs::write(&file, text).unwrap();
    file
}

/// `name`'s client in project `egress`.
pub(crate) async fn person(app: &TestApp, name: &str) -> Client {
    let mut client = Client::connect(&format!("ws://{}/?token={name}-token", app.addr())).await;
    client.init("egress", &app.project_root("egress")).await;
    client
}

const MO_SECRET: &str = "tok-mo-5e1d7c3a9b";
const OLGA_SECRET: &str = "tok-olga-2f8a6e0c4d";

#[actix_web::test]
async fn a_persons_credential_is_added_to_their_commands_https_requests_and_never_seen() {
    let dir = tempfile::tempdir().unwrap();
    let (acceptor, ca_file) = upstream_tls(dir.path());
    let upstream = Upstream::start_with(Some(acceptor)).await;
    let up = upstream.port;
    // The secrets are searched for by patterns that do not hold them, so the command's
    // own text does not match.
    let reveal = |secret: &str| {
        let (head, last) = secret.split_at(secret.len() - 1);
        format!(
            "curl -sS https://localhost:{up}/{head} && env | sort && \
             grep -rlsE '{head}[{last}]' /tmp \"$PWD\" \"$(dirname \"$SSL_CERT_FILE\")\" \
             /proc/self/environ | sed 's/^/found: /'; echo searched"
        )
    };
    let commands = [
        reveal(MO_SECRET),
        reveal(OLGA_SECRET),
        // 127.0.0.1 is a host nobody has a credential for: tunnelled, the command meets
        // the upstream's own certificate, which its CA file (the proxy's) does not vouch for.
        format!(
            "curl -sSk https://127.0.0.1:{up}/plain && curl -sS https://127.0.0.1:{up}/checked; \
             echo \" rc=$?\""
        ),
    ];
    let llm = FakeLlm::start(proposing(&commands));
    let users = team(dir.path());
    let ca = ca_file.display().to_string();
    let hosts = format!("localhost:{up}, 127.0.0.1:{up}");
    let app = TestApp::with_llm(
        &llm,
        &[
            ("RUMMY_USERS_FILE", users.to_str().unwrap()),
            ("RUMMY_RUN_COMMANDS", "server"),
            (
                "RUMMY_SANDBOX_LAUNCHER",
                env!("CARGO_BIN_EXE_rummy-sandbox"),
            ),
            ("RUMMY_SANDBOX_MAX_WALL_SECS", "20"),
            ("RUMMY_SANDBOX_HOSTS", hosts.as_str()),
            ("RUMMY_SANDBOX_ALLOW_NETS", "127.0.0.0/8, ::1"),
            ("RUMMY_SANDBOX_UPSTREAM_CA", ca.as_str()),
        ],
    )
    .await;
    let mut ada = person(&app, "ada").await;
    ada.ok(
        "project/config",
        json!({"sandbox": {"hosts": [format!("localhost:{up}"), format!("127.0.0.1:{up}")]}}),
    )
    .await;
    let (mut mo, mut olga) = (person(&app, "mo").await, person(&app, "olga").await);
    for (client, header, secret) in [
        (&mut mo, "Authorization", format!("Bearer {MO_SECRET}")),
        (&mut olga, "PRIVATE-TOKEN", OLGA_SECRET.to_owned()),
    ] {
        let set = client
            .ok(
                "hostCredentials/set",
                json!({"host": "LocalHost", "header": header, "value": secret}),
            )
            .await;
        assert_eq!(set, json!({"host": "localhost"}));
        let listed = client.ok("hostCredentials/list", json!({})).await;
        assert_eq!(listed["credentials"][0]["host"], "localhost", "{listed}");
        assert!(!listed.to_string().contains("tok-"), "{listed}");
    }
    let mo_out = run_each(&app, &mut mo, 1).await.remove(0);
    let olga_out = run_each(&app, &mut olga, 1).await.remove(0);
    let plain_out = run_each(&app, &mut mo, 1).await.remove(0);
    for ((status, body), secret) in [(&mo_out, MO_SECRET), (&olga_out, OLGA_SECRET)] {
        assert_eq!(*status, 200, "{body}");
        assert!(body.starts_with("upstream-ok"), "{body}");
        assert!(body.contains("searched"), "{body}");
        assert!(
            !body.contains("found: "),
            "the secret is in a file it reads: {body}"
        );
        assert!(!body.contains(secret), "{body}");
        assert!(!body.contains("tok-"), "{body}");
    }
    let heads = upstream.heads();
    assert_eq!(heads.len(), 3, "{heads:?}");
    let head_for = |path: &str| {
        heads
            .iter()
            .find(|head| head.starts_with(&format!("GET /{path} ")))
            .unwrap_or_else(|| panic!("{path}: {heads:?}"))
            .to_ascii_lowercase()
    };
    let mo_head = head_for(&MO_SECRET[..MO_SECRET.len() - 1]);
    assert!(
        mo_head.contains(&format!(
            "\r\nauthorization: bearer {}\r\n",
            MO_SECRET.to_ascii_lowercase()
        )),
        "{mo_head}"
    );
    assert!(
        !mo_head.contains("private-token") && !mo_head.contains("olga"),
        "{mo_head}"
    );
    let olga_head = head_for(&OLGA_SECRET[..OLGA_SECRET.len() - 1]);
    assert!(
        olga_head.contains(&format!("\r\nprivate-token: {OLGA_SECRET}\r\n")),
        "{olga_head}"
    );
    assert!(
        !olga_head.contains("authorization") && !olga_head.contains("tok-mo"),
        "{olga_head}"
    );
    let (status, body) = &plain_out;
    assert_eq!(*status, 200, "{body}");
    assert!(body.starts_with("upstream-ok\n"), "{body}");
    assert!(
        body.contains(" rc=60"),
        "the upstream's own certificate: {body}"
    );
    let plain_head = head_for("plain");
    assert!(
        !plain_head.contains("tok-"),
        "no credential for that host: {plain_head}"
    );
    let changes = ada.ok("admin/changes", json!({"limit": 200})).await;
    let text = changes.to_string();
    assert!(!text.contains("tok-"), "{text}");
    let uses: Vec<&Value> = changes["changes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|change| change["action"] == "egress/credential")
        .collect();
    let by: Vec<(&str, &str)> = uses
        .iter()
        .map(|change| {
            (
                change["by"].as_str().unwrap(),
                change["subject"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        by,
        [("olga", "localhost"), ("mo", "localhost")],
        "{changes}"
    );
    let removed = mo
        .ok("hostCredentials/remove", json!({"host": "localhost"}))
        .await;
    assert_eq!(removed, json!({"host": "localhost", "removed": true}));
    assert_eq!(
        mo.ok("hostCredentials/list", json!({})).await,
        json!({"credentials": []})
    );
}

#[actix_web::test]
async fn a_host_credential_is_checked_before_it_is_kept() {
    let dir = tempfile::tempdir().unwrap();
    let users = team(dir.path());
    let llm = FakeLlm::start(Vec::new());
    let app = TestApp::with_llm(&llm, &[("RUMMY_USERS_FILE", users.to_str().unwrap())]).await;
    let mut mo = person(&app, "mo").await;
    for (params, says) in [
        (
            json!({"host": "*.example.com", "header": "Authorization", "value": "x"}),
            "host",
        ),
        (
            json!({"host": "example.com:443", "header": "Authorization", "value": "x"}),
            "host",
        ),
        (
            json!({"host": "example.com", "header": "Proxy-Authorization", "value": "x"}),
            "header",
        ),
        (
            json!({"host": "example.com", "header": "bad header", "value": "x"}),
            "header",
        ),
        (
            json!({"host": "example.com", "header": "Authorization", "value": "a\nb"}),
            "value",
        ),
        (
            json!({"host": "example.com", "header": "Authorization", "value": ""}),
            "value",
        ),
    ] {
        let (code, message) = mo.err("hostCredentials/set", params.clone()).await;
        assert_eq!(code, -32602, "{params}");
        assert!(message.starts_with(says), "{params}: {message}");
    }
    let operator_app = TestApp::with_llm(&llm, &[]).await;
    let mut operator = operator_app.client().await;
    let (code, message) = operator.err("hostCredentials/list", json!({})).await;
    assert_eq!(code, -32602);
    assert!(message.contains("person"), "{message}");
}
