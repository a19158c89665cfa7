//! Console sign-in through an OpenID Connect provider (`console::oidc`) and the audit of
//! every console sign-in.
//!
//! Without node: the sign-in page offers the provider only when one is configured, a server
//! with a provider is no longer open to everyone, a provider that cannot be reached is said
//! so, and token sign-ins and their refusals are audited. With node (`tests/oidc`, which
//! tests/run.sh installs): a provider of our own on loopback (`tests/oidc/rogue.mjs`, its own
//! discovery document and keys) mints the ID tokens a real provider would not, and each is
//! refused with its reason (expired, signed by no key of the provider, for another audience,
//! from another issuer, for another sign-in); a replayed state, a replayed code and a callback
//! in another browser are refused; a good token signs in with the role its groups give, and
//! all of it is in `admin/changes` with no secret. The real provider (panva's oidc-provider,
//! `tests/oidc/provider.mjs`) is driven through its own login page in chromium by
//! `console_browser::oidc`.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use crate::access::users;
use crate::support::{Client, TestApp};

mod people;

pub(crate) const NEEDS: &str =
    "needs node and tests/oidc/node_modules (npm ci in tests/oidc): tests/run.sh installs them";

pub(crate) const CLIENT_SECRET: &str = "rummy-test-secret";

/// The group mapping every test server has, as `config/oidc.toml`.
const GROUPS: &str = r#"
[oidc]
provider_name = "Test IdP"

[[oidc.groups]]
group = "rummy-admins"
role = "admin"
projects = ["*"]

[[oidc.groups]]
group = "web-team"
role = "member"
projects = ["web"]
"#;

/// A provider on loopback: one of tests/oidc's scripts under node.
pub(crate) struct Idp {
    pub issuer: String,
    stdin: tokio::process::ChildStdin,
    lines: tokio::io::Lines<BufReader<tokio::process::ChildStdout>>,
    _child: tokio::process::Child,
}

impl Idp {
    pub(crate) async fn start(script: &str) -> Idp {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/oidc");
        assert!(dir.join("node_modules/oidc-provider").exists(), "{NEEDS}");
        let mut child = tokio::process::Command::new("node")
            .arg(script)
            .current_dir(&dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect(NEEDS);
        let stdin = child.stdin.take().unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let first: Value =
            serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap();
        Idp {
            issuer: first["issuer"].as_str().unwrap().to_owned(),
            stdin,
            lines,
            _child: child,
        }
    }

    /// Tells the provider the client's redirect URL and waits until it serves.
    pub(crate) async fn serve(&mut self, redirect: &str) {
        self.stdin
            .write_all(format!("{redirect}\n").as_bytes())
            .await
            .unwrap();
        let ready = self.lines.next_line().await.unwrap().unwrap();
        assert!(ready.contains("ready"), "{ready}");
    }
}

/// Settings for a server whose provider is `issuer`, with [`GROUPS`], the client secret in a
/// file, and the shared token `operator`: the environment and the directory holding them.
pub(crate) fn provider_env(
    issuer: &str,
    redirect: Option<&str>,
) -> (Vec<(String, String)>, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("oidc.toml"), GROUPS).unwrap();
    let secret = dir.path().join("client-secret");
    std::fs::write(&secret, format!("{CLIENT_SECRET}\n")).unwrap();
    let mut env = vec![
        (
            "TEST_CONFIG_DIR".to_owned(),
            dir.path().display().to_string(),
        ),
        ("RUMMY_ENV".to_owned(), "oidc".to_owned()),
        ("RUMMY_AUTH_TOKEN".to_owned(), "operator".to_owned()),
        ("RUMMY_OIDC_ISSUER".to_owned(), issuer.to_owned()),
        ("RUMMY_OIDC_CLIENT_ID".to_owned(), "rummy".to_owned()),
        (
            "RUMMY_OIDC_CLIENT_SECRET_FILE".to_owned(),
            secret.display().to_string(),
        ),
    ];
    match redirect {
        Some(redirect) => env.push(("RUMMY_OIDC_REDIRECT_URL".to_owned(), redirect.to_owned())),
        None => env.push((
            "RUMMY_PUBLIC_URL".to_owned(),
            "http://127.0.0.1:1".to_owned(),
        )),
    }
    (env, dir)
}

async fn start(env: &[(String, String)]) -> TestApp {
    let pairs: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    TestApp::start_with(&pairs).await
}

struct Answer {
    status: u16,
    headers: awc::http::header::HeaderMap,
    body: String,
}

impl Answer {
    /// The value of the cookie `name` it sets.
    fn cookie(&self, name: &str) -> Option<String> {
        self.headers
            .get_all("set-cookie")
            .filter_map(|value| value.to_str().ok())
            .find_map(|cookie| cookie.strip_prefix(&format!("{name}=")).map(str::to_owned))
            .map(|rest| rest.split(';').next().unwrap().to_owned())
    }

    fn location(&self) -> String {
        self.headers
            .get("location")
            .unwrap()
            .to_str()
            .unwrap()
            .to_owned()
    }
}

async fn get(addr: SocketAddr, path: &str, cookie: Option<&str>) -> Answer {
    let mut request = awc::Client::builder()
        .disable_redirects()
        .finish()
        .get(format!("http://{addr}{path}"));
    if let Some(cookie) = cookie {
        request = request.insert_header(("cookie", cookie.to_owned()));
    }
    let mut response = request.send().await.unwrap();
    let body = response.body().await.unwrap();
    Answer {
        status: response.status().as_u16(),
        headers: response.headers().clone(),
        body: String::from_utf8_lossy(&body).into_owned(),
    }
}

/// A sign-in begun at `addr`: its state and nonce as sent to the provider, and the cookie
/// binding it to this "browser".
struct Begun {
    state: String,
    nonce: String,
    cookie: String,
}

async fn begin(addr: SocketAddr, issuer: &str) -> Begun {
    let answer = get(addr, "/ui/oidc/start", None).await;
    assert_eq!(answer.status, 303, "{}", answer.body);
    let location = url::Url::parse(&answer.location()).unwrap();
    assert!(
        location.as_str().starts_with(&format!("{issuer}/auth")),
        "{location}"
    );
    let param = |name: &str| {
        location
            .query_pairs()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.into_owned())
            .unwrap_or_else(|| panic!("no {name} in {location}"))
    };
    assert_eq!(param("code_challenge_method"), "S256");
    assert_eq!(param("client_id"), "rummy");
    assert_eq!(param("response_type"), "code");
    Begun {
        state: param("state"),
        nonce: param("nonce"),
        cookie: format!("rummy_oidc={}", answer.cookie("rummy_oidc").unwrap()),
    }
}

async fn callback(addr: SocketAddr, code: &str, state: &str, cookie: Option<&str>) -> Answer {
    let query = url::form_urlencoded::Serializer::new(String::new())
        .append_pair("code", code)
        .append_pair("state", state)
        .finish();
    get(addr, &format!("/ui/oidc/callback?{query}"), cookie).await
}

/// The console's `GET /ui/session`: its status and body.
async fn session(addr: SocketAddr, cookie: Option<&str>) -> (u16, Value) {
    let answer = get(addr, "/ui/session", cookie).await;
    (answer.status, serde_json::from_str(&answer.body).unwrap())
}

async fn changes(addr: SocketAddr) -> Vec<Value> {
    let mut operator = Client::connect(&format!("ws://{addr}/?token=operator")).await;
    let listed = operator.ok("admin/changes", json!({ "limit": 200 })).await;
    listed["changes"].as_array().unwrap().clone()
}

fn database_text(app: &TestApp) -> String {
    let mut text = String::new();
    for entry in std::fs::read_dir(app.home()).unwrap() {
        let path: PathBuf = entry.unwrap().path();
        if path.to_string_lossy().contains("rummy.db") {
            text.push_str(&String::from_utf8_lossy(&std::fs::read(&path).unwrap()));
        }
    }
    text
}

#[actix_web::test]
async fn the_sign_in_page_offers_a_provider_only_when_one_is_configured() {
    let plain = TestApp::start_with(&[("RUMMY_AUTH_TOKEN", "operator")]).await;
    let (status, body) = session(plain.addr(), None).await;
    assert_eq!((status, &body["provider"]), (401, &Value::Null), "{body}");
    assert_eq!(get(plain.addr(), "/ui/oidc/start", None).await.status, 404);

    let (env, _dir) = provider_env("http://127.0.0.1:9", None);
    let app = start(&env).await;
    let (status, body) = session(app.addr(), None).await;
    assert_eq!(status, 401);
    assert_eq!(
        body["provider"],
        json!({ "name": "Test IdP", "start": "oidc/start" })
    );
    // Nothing is asked of the provider until someone signs in: it cannot be reached here.
    let answer = get(app.addr(), "/ui/oidc/start", None).await;
    assert_eq!(answer.status, 503);
    assert!(
        answer.body.contains("could not be reached"),
        "{}",
        answer.body
    );
    assert!(!answer.body.contains(CLIENT_SECRET));
}

#[actix_web::test]
async fn a_server_with_a_provider_and_no_token_is_not_open_to_everyone() {
    let (mut env, _dir) = provider_env("http://127.0.0.1:9", None);
    env.retain(|(key, _)| key != "RUMMY_AUTH_TOKEN");
    let app = start(&env).await;
    let refused = awc::Client::new()
        .ws(format!("ws://{}/", app.addr()))
        .connect()
        .await;
    assert!(refused.is_err(), "a connection without a token is refused");
}

#[actix_web::test]
async fn token_sign_ins_and_their_refusals_are_in_the_audit() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("users.toml");
    std::fs::write(&file, users(&[("mo", "mo-token", "member", &["web"])])).unwrap();
    let file = file.display().to_string();
    let app = TestApp::start_with(&[
        ("RUMMY_AUTH_TOKEN", "operator"),
        ("RUMMY_USERS_FILE", &file),
    ])
    .await;
    for token in ["mo-token", "not-a-token", "operator"] {
        awc::Client::new()
            .post(format!("http://{}/ui/session", app.addr()))
            .insert_header(("origin", format!("http://{}", app.addr())))
            .send_json(&json!({ "token": token }))
            .await
            .unwrap();
    }
    let changes = changes(app.addr()).await;
    let seen: Vec<_> = changes
        .iter()
        .map(|change| {
            (
                change["action"].clone(),
                change["by"].clone(),
                change["detail"].clone(),
            )
        })
        .collect();
    assert_eq!(
        seen,
        vec![
            (
                json!("console/signIn"),
                Value::Null,
                json!({ "via": "token", "from": "127.0.0.1" })
            ),
            (
                json!("console/signInRefused"),
                json!("(unknown)"),
                json!({ "via": "token", "from": "127.0.0.1", "count": 1,
                        "reason": "that token opens nothing on this server" })
            ),
            (
                json!("console/signIn"),
                json!("mo"),
                json!({ "via": "token", "from": "127.0.0.1" })
            ),
        ]
    );
    assert!(!changes
        .iter()
        .any(|change| change.to_string().contains("token\":\"")));
    assert!(!database_text(&app).contains("not-a-token"));
}

#[actix_web::test]
#[ignore = "needs node and tests/oidc/node_modules (npm ci in tests/oidc): tests/run.sh installs them"]
async fn bad_id_tokens_replays_and_strangers_are_refused_and_a_good_one_signs_in() {
    let idp = Idp::start("rogue.mjs").await;
    let (env, _dir) = provider_env(&idp.issuer, Some("http://127.0.0.1:1/ui/oidc/callback"));
    let app = start(&env).await;
    let addr = app.addr();

    let refusals = [
        ("expired", 400, "ID token has expired"),
        ("tampered", 400, "signature does not verify"),
        ("audience", 400, "issued for another client"),
        ("issuer", 400, "another issuer"),
        ("nonce", 400, "belongs to another sign-in"),
    ];
    for (kind, status, said) in refusals {
        let begun = begin(addr, &idp.issuer).await;
        let code = format!("{kind}.{}", begun.nonce);
        let answer = callback(addr, &code, &begun.state, Some(&begun.cookie)).await;
        assert_eq!(answer.status, status, "{kind}: {}", answer.body);
        assert!(answer.body.contains(said), "{kind}: {}", answer.body);
        assert_eq!(answer.cookie("rummy_session"), None, "{kind}");
    }

    let begun = begin(addr, &idp.issuer).await;
    let stranger = callback(addr, &format!("good.{}", begun.nonce), &begun.state, None).await;
    assert!(
        stranger.body.contains("begun in another browser"),
        "{}",
        stranger.body
    );

    let begun = begin(addr, &idp.issuer).await;
    let good = format!("good.{}", begun.nonce);
    let answer = callback(addr, &good, &begun.state, Some(&begun.cookie)).await;
    assert_eq!(answer.status, 303, "{}", answer.body);
    assert_eq!(answer.location(), "/ui/");
    let cookie = format!("rummy_session={}", answer.cookie("rummy_session").unwrap());
    let (status, me) = session(addr, Some(&cookie)).await;
    assert_eq!(
        (status, me),
        (200, json!({ "person": "eve", "role": "admin" }))
    );

    let replayed_state = callback(addr, &good, &begun.state, Some(&begun.cookie)).await;
    assert!(
        replayed_state.body.contains("used already"),
        "{}",
        replayed_state.body
    );
    let again = begin(addr, &idp.issuer).await;
    let replayed_code = callback(addr, &good, &again.state, Some(&again.cookie)).await;
    assert!(
        replayed_code.body.contains("refused the sign-in code"),
        "{}",
        replayed_code.body
    );

    let changes = changes(addr).await;
    let refused: Vec<_> = changes
        .iter()
        .filter(|change| change["action"] == "console/signInRefused")
        .map(|change| change["detail"]["reason"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(refused.len(), 8, "{refused:?}");
    assert!(refused.iter().any(|reason| reason.contains("expired")));
    let signed_in: Vec<_> = changes
        .iter()
        .filter(|change| change["action"] == "console/signIn")
        .collect();
    assert_eq!(signed_in.len(), 1, "{changes:?}");
    assert_eq!(signed_in[0]["by"], "eve");
    assert_eq!(
        signed_in[0]["detail"],
        json!({ "via": "oidc", "from": "127.0.0.1" })
    );
    let all = format!("{changes:?}{}", database_text(&app));
    assert!(!all.contains(CLIENT_SECRET), "the client secret is nowhere");
}
