//! The web console's HTTP side: its files with their types, caching and security headers,
//! the sign-in cookie and its attributes, the console's WebSocket behind that cookie and the
//! page's origin, and sign-out, expiry and a changed token ending a session in the store.

use std::net::SocketAddr;

use awc::error::WsClientError;
use diesel::RunQueryDsl;
use rummy::testing::fake_llm::FakeLlm;
use serde_json::{json, Value};

use crate::access::users;
use crate::stored::number;
use crate::support::{eventually, Client, TestApp};

const SHARED: &str = "shared-token";
const VERA: &str = "vera-token";
const MO: &str = "mo-token";

fn team() -> String {
    users(&[
        ("vera", VERA, "viewer", &["web"]),
        ("mo", MO, "member", &["web"]),
    ])
}

/// A server with the shared token, vera (viewer) and mo (member), and `extra` settings.
async fn server(llm: &FakeLlm, extra: &[(&str, &str)]) -> (TestApp, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("users.toml");
    std::fs::write(&file, team()).unwrap();
    let file = file.display().to_string();
    let mut env = vec![("RUMMY_AUTH_TOKEN", SHARED), ("RUMMY_USERS_FILE", &file)];
    env.extend_from_slice(extra);
    (TestApp::with_llm(llm, &env).await, dir)
}

fn origin(addr: SocketAddr) -> String {
    format!("http://{addr}")
}

struct Answer {
    status: u16,
    headers: awc::http::header::HeaderMap,
    body: String,
}

impl Answer {
    fn header(&self, name: &str) -> &str {
        self.headers
            .get(name)
            .map(|value| value.to_str().unwrap())
            .unwrap_or_else(|| panic!("no {name} in {:?}", self.headers))
    }

    /// The attributes of the session cookie it sets, lowercased, without its value.
    fn cookie_attributes(&self) -> Vec<String> {
        let cookie = self.header("set-cookie");
        assert!(cookie.starts_with("rummy_session="), "{cookie}");
        cookie
            .split(';')
            .skip(1)
            .map(|attribute| attribute.trim().to_lowercase())
            .collect()
    }

    /// The session id of the cookie it sets.
    fn session(&self) -> String {
        let cookie = self.header("set-cookie");
        let value = cookie.split(';').next().unwrap();
        value.strip_prefix("rummy_session=").unwrap().to_owned()
    }
}

/// Sends `request` (with `body` as JSON when given) and reads the whole answer.
async fn send(request: awc::ClientRequest, body: Option<Value>) -> Answer {
    let mut response = match body {
        Some(body) => request.send_json(&body).await.unwrap(),
        None => request.send().await.unwrap(),
    };
    let body = response.body().limit(4 << 20).await.unwrap();
    Answer {
        status: response.status().as_u16(),
        headers: response.headers().clone(),
        body: String::from_utf8_lossy(&body).into_owned(),
    }
}

/// A GET that does not follow redirects.
fn get(addr: SocketAddr, path: &str) -> awc::ClientRequest {
    awc::Client::builder()
        .disable_redirects()
        .finish()
        .get(format!("http://{addr}{path}"))
}

/// Signs in with `token` from the page's own origin.
async fn sign_in(addr: SocketAddr, base: &str, token: &str) -> Answer {
    let request = awc::Client::new()
        .post(format!("http://{addr}{base}/session"))
        .insert_header(("origin", origin(addr)));
    send(request, Some(json!({ "token": token }))).await
}

/// Who `GET <base>/session` says the session `id` is; the status otherwise.
async fn who(addr: SocketAddr, base: &str, id: &str) -> Result<Value, u16> {
    let answer = send(
        get(addr, &format!("{base}/session"))
            .insert_header(("cookie", format!("rummy_session={id}"))),
        None,
    )
    .await;
    match answer.status {
        200 => Ok(serde_json::from_str(&answer.body).unwrap()),
        status => Err(status),
    }
}

/// The console's socket opened with the session `id` from `origin`.
async fn console_socket(
    addr: SocketAddr,
    base: &str,
    id: &str,
    origin: &str,
) -> Result<Client, u16> {
    let request = awc::Client::new()
        .ws(format!("ws://{addr}{base}/rpc"))
        .origin(origin)
        .set_header("cookie", format!("rummy_session={id}"));
    match request.connect().await {
        Ok((_, framed)) => Ok(Client::from_framed(framed)),
        Err(WsClientError::InvalidResponseStatus(status)) => Err(status.as_u16()),
        Err(error) => panic!("{error}"),
    }
}

#[actix_web::test]
async fn the_console_files_are_served_with_their_types_caching_and_a_strict_policy() {
    let llm = FakeLlm::start([]);
    let (app, _dir) = server(&llm, &[]).await;
    let addr = app.addr();

    let bare = send(get(addr, "/ui"), None).await;
    assert_eq!(bare.status, 308);
    assert_eq!(bare.header("location"), "/ui/");

    let page = send(get(addr, "/ui/"), None).await;
    assert_eq!(page.status, 200);
    assert_eq!(page.header("content-type"), "text/html; charset=utf-8");
    let policy = page.header("content-security-policy");
    for directive in [
        "default-src 'none'",
        "script-src 'self'",
        "connect-src 'self'",
        "frame-ancestors 'none'",
        "base-uri 'none'",
    ] {
        assert!(policy.contains(directive), "{directive} in {policy}");
    }
    assert!(!policy.contains("unsafe"), "{policy}");
    assert_eq!(page.header("x-content-type-options"), "nosniff");
    assert_eq!(page.header("cache-control"), "no-cache");
    for script in page.body.split("<script").skip(1) {
        let tag = &script[..script.find('>').unwrap()];
        assert!(tag.contains("src="), "no inline script: <script{tag}>");
    }
    assert!(
        !page.body.contains("http://") && !page.body.contains("https://"),
        "nothing from elsewhere"
    );

    let etag = page.header("etag").to_owned();
    let again = send(
        get(addr, "/ui/").insert_header(("if-none-match", etag.as_str())),
        None,
    )
    .await;
    assert_eq!(again.status, 304, "unchanged: not sent again");
    assert!(again.body.is_empty());

    for (file, kind) in [
        ("app.js", "text/javascript; charset=utf-8"),
        ("rpc.js", "text/javascript; charset=utf-8"),
        ("style.css", "text/css; charset=utf-8"),
        ("icon.svg", "image/svg+xml"),
    ] {
        let answer = send(get(addr, &format!("/ui/{file}")), None).await;
        assert_eq!(answer.status, 200, "{file}");
        assert_eq!(answer.header("content-type"), kind, "{file}");
        assert_ne!(answer.header("etag"), etag, "{file} has its own tag");
        assert!(
            answer.headers.contains_key("content-security-policy"),
            "{file}"
        );
    }
    let missing = send(get(addr, "/ui/missing.js"), None).await;
    assert_eq!(missing.status, 404);
    assert!(missing.headers.contains_key("content-security-policy"));
    let inner = send(get(addr, "/ui/a/b"), None).await;
    assert_eq!(inner.status, 404);
    assert!(inner.headers.contains_key("content-security-policy"));
}

#[actix_web::test]
async fn sign_in_sets_a_strict_http_only_expiring_cookie_that_opens_the_console_socket() {
    let llm = FakeLlm::start([]);
    let (app, _dir) = server(&llm, &[("RUMMY_CONSOLE_SESSION_HOURS", "2")]).await;
    let addr = app.addr();
    let root = app.project_root("web");
    let mut operator = Client::connect(&format!("ws://{addr}/?token={SHARED}")).await;
    operator.init("web", &root).await;
    operator.init("other", &app.project_root("other")).await;

    let signed = sign_in(addr, "/ui", MO).await;
    assert_eq!(signed.status, 200, "{}", signed.body);
    assert_eq!(
        serde_json::from_str::<Value>(&signed.body).unwrap(),
        json!({"person": "mo", "role": "member"})
    );
    let attributes = signed.cookie_attributes();
    for wanted in ["httponly", "samesite=strict", "path=/ui", "max-age=7200"] {
        assert!(
            attributes.iter().any(|a| a == wanted),
            "{wanted} in {attributes:?}"
        );
    }
    assert!(
        !attributes.iter().any(|a| a == "secure"),
        "plain HTTP: {attributes:?}"
    );
    let id = signed.session();
    assert_eq!(id.len(), 64, "32 random bytes");
    assert_ne!(
        id,
        sign_in(addr, "/ui", MO).await.session(),
        "each sign-in its own"
    );
    let stored = app
        .read(move |conn| number(conn, "SELECT COUNT(*) AS n FROM console_sessions"))
        .await;
    assert_eq!(stored, Some(2));
    let secret = id.clone();
    let leaked = app
        .read(move |conn| {
            number(
                conn,
                &format!(
                    "SELECT COUNT(*) AS n FROM console_sessions WHERE id_hash = '{secret}' \
                     OR token_hash = '{MO}'"
                ),
            )
        })
        .await;
    assert_eq!(leaked, Some(0), "the store keeps hashes only");
    assert_eq!(
        who(addr, "/ui", &id).await,
        Ok(json!({"person": "mo", "role": "member"}))
    );

    let mut page = console_socket(addr, "/ui", &id, &origin(addr))
        .await
        .unwrap();
    let projects = page.ok("getProjects", json!({})).await;
    assert_eq!(
        projects.as_array().unwrap().len(),
        1,
        "mo may open web only: {projects}"
    );
    assert_eq!(projects[0]["name"], json!("web"));
    page.init("web", &root).await;
    let run = page.start_run("fake").await;
    let runs = page.ok("getRuns", json!({})).await;
    assert_eq!(runs[0]["run"], json!(run));
    assert_eq!(runs[0]["created_by"], json!("mo"), "the cookie acts for mo");
    assert_eq!(runs[0]["model"], json!("fake"));
    let (code, _) = page
        .err(
            "init",
            json!({"name": "other", "projectRoot": app.project_root("other")}),
        )
        .await;
    assert_eq!(code, -32005, "the same project checks as a token's");

    let viewer = sign_in(addr, "/ui", VERA).await.session();
    let mut looking = console_socket(addr, "/ui", &viewer, &origin(addr))
        .await
        .unwrap();
    looking.init("web", &root).await;
    let (code, message) = looking.err("run/abort", json!({"run": run})).await;
    assert_eq!(code, -32005, "the same role checks as a token's: {message}");
    assert_eq!(
        looking.ok("getRun", json!({"run": run})).await["run"],
        json!(run)
    );

    let shared = sign_in(addr, "/ui", SHARED).await;
    assert_eq!(
        serde_json::from_str::<Value>(&shared.body).unwrap(),
        json!({"person": null, "role": "admin"})
    );
}

#[actix_web::test]
async fn a_sign_in_needs_a_token_that_opens_the_server_and_the_pages_origin() {
    let llm = FakeLlm::start([]);
    let (app, _dir) = server(&llm, &[]).await;
    let addr = app.addr();
    let wrong = sign_in(addr, "/ui", "not-a-token").await;
    assert_eq!(wrong.status, 401);
    assert!(!wrong.headers.contains_key("set-cookie"));
    for origin in [Some("http://evil.example"), Some("null"), None] {
        let mut request = awc::Client::new().post(format!("http://{addr}/ui/session"));
        if let Some(origin) = origin {
            request = request.insert_header(("origin", origin));
        }
        let answer = send(request, Some(json!({ "token": MO }))).await;
        assert_eq!(answer.status, 403, "origin {origin:?}");
        assert!(!answer.headers.contains_key("set-cookie"));
    }
    for body in [
        json!({"token": 5, "x": "secret-ish"}),
        json!({"password": "mo-token"}),
    ] {
        let request = awc::Client::new()
            .post(format!("http://{addr}/ui/session"))
            .insert_header(("origin", origin(addr)));
        let answer = send(request, Some(body.clone())).await;
        assert_eq!(answer.status, 400, "{body}");
        assert!(answer.body.contains("token"), "{}", answer.body);
        assert!(!answer.body.contains("secret-ish") && !answer.body.contains("mo-token"));
    }
    let stored = app
        .read(|conn| number(conn, "SELECT COUNT(*) AS n FROM console_sessions"))
        .await;
    assert_eq!(stored, Some(0));
}

#[actix_web::test]
async fn the_console_socket_needs_a_live_session_and_the_pages_origin() {
    let llm = FakeLlm::start([]);
    let (app, _dir) = server(&llm, &[]).await;
    let addr = app.addr();
    let id = sign_in(addr, "/ui", MO).await.session();
    let own = origin(addr);
    assert!(console_socket(addr, "/ui", &id, &own).await.is_ok());
    assert_eq!(
        console_socket(addr, "/ui", &id, "http://evil.example")
            .await
            .err(),
        Some(403),
        "cross-site WebSocket hijacking"
    );
    assert_eq!(
        console_socket(addr, "/ui", &"0".repeat(64), &own)
            .await
            .err(),
        Some(401)
    );
    assert_eq!(console_socket(addr, "/ui", "", &own).await.err(), Some(401));
    let token = awc::Client::new()
        .ws(format!("ws://{addr}/ui/rpc?token={MO}"))
        .origin(own.as_str())
        .connect()
        .await;
    assert!(
        token.is_err(),
        "the console's socket takes the cookie, not a token"
    );

    let database = app.database();
    actix_web::rt::task::spawn_blocking(move || {
        diesel::sql_query("UPDATE console_sessions SET expires_at = 1")
            .execute(&mut database.connect().unwrap())
            .unwrap();
    })
    .await
    .unwrap();
    assert_eq!(
        console_socket(addr, "/ui", &id, &own).await.err(),
        Some(401),
        "expired"
    );
    assert_eq!(who(addr, "/ui", &id).await, Err(401));
}

#[actix_web::test]
async fn sign_out_ends_the_session_in_the_store_which_outlives_a_restart() {
    let llm = FakeLlm::start([]);
    let (app, _dir) = server(&llm, &[]).await;
    let id = sign_in(app.addr(), "/ui", MO).await.session();
    let kept = sign_in(app.addr(), "/ui", VERA).await.session();
    let app = app.restart().await;
    let addr = app.addr();
    assert_eq!(
        who(addr, "/ui", &id).await.unwrap()["person"],
        json!("mo"),
        "durable"
    );

    let cookie = format!("rummy_session={id}");
    let forged = send(
        awc::Client::new()
            .delete(format!("http://{addr}/ui/session"))
            .insert_header(("cookie", cookie.as_str()))
            .insert_header(("origin", "http://evil.example")),
        None,
    )
    .await;
    assert_eq!(forged.status, 403, "no sign-out from another site");
    assert!(who(addr, "/ui", &id).await.is_ok());

    let out = send(
        awc::Client::new()
            .delete(format!("http://{addr}/ui/session"))
            .insert_header(("cookie", cookie.as_str()))
            .insert_header(("origin", origin(addr))),
        None,
    )
    .await;
    assert_eq!(out.status, 204);
    let attributes = out.cookie_attributes();
    assert!(
        attributes.iter().any(|a| a == "max-age=0"),
        "{attributes:?}"
    );
    assert!(out.session().is_empty(), "the cookie is cleared");
    assert_eq!(
        who(addr, "/ui", &id).await,
        Err(401),
        "the old cookie is refused"
    );
    assert_eq!(
        console_socket(addr, "/ui", &id, &origin(addr)).await.err(),
        Some(401)
    );
    assert!(
        who(addr, "/ui", &kept).await.is_ok(),
        "only that session ended"
    );
}

/// A console socket whose session is signed out (from another tab) is closed at its next
/// heartbeat with 1008; another session's socket stays open.
#[actix_web::test]
async fn a_console_socket_closes_at_the_heartbeat_after_its_session_ends() {
    let llm = FakeLlm::start([]);
    let (app, _dir) = server(&llm, &[("RUMMY_HEARTBEAT_SECS", "1")]).await;
    let addr = app.addr();
    let id = sign_in(addr, "/ui", MO).await.session();
    let kept = sign_in(addr, "/ui", VERA).await.session();
    let mut ending = console_socket(addr, "/ui", &id, &origin(addr))
        .await
        .unwrap();
    let mut staying = console_socket(addr, "/ui", &kept, &origin(addr))
        .await
        .unwrap();
    assert_eq!(ending.ok("ping", json!({})).await, json!({}));

    let out = send(
        awc::Client::new()
            .delete(format!("http://{addr}/ui/session"))
            .insert_header(("cookie", format!("rummy_session={id}")))
            .insert_header(("origin", origin(addr))),
        None,
    )
    .await;
    assert_eq!(out.status, 204);
    let closed = tokio::time::timeout(std::time::Duration::from_secs(20), ending.closed())
        .await
        .expect("closed within a few heartbeats of 1 s");
    assert_eq!(closed, Some(1008), "closed for its session");
    assert_eq!(staying.ok("ping", json!({})).await, json!({}));
}

#[actix_web::test]
async fn a_session_ends_when_its_token_no_longer_opens_the_server() {
    let llm = FakeLlm::start([]);
    let (app, dir) = server(&llm, &[]).await;
    let addr = app.addr();
    let mo = sign_in(addr, "/ui", MO).await.session();
    let vera = sign_in(addr, "/ui", VERA).await.session();
    std::fs::write(
        dir.path().join("users.toml"),
        users(&[
            ("vera", VERA, "viewer", &["web"]),
            ("mo", "mo-new-token", "member", &["web"]),
        ]),
    )
    .unwrap();
    eventually("mo's session to end with his old token", async || {
        (who(addr, "/ui", &mo).await == Err(401)).then_some(())
    })
    .await;
    assert!(who(addr, "/ui", &vera).await.is_ok());
}

#[actix_web::test]
async fn the_console_path_setting_moves_the_pages_cookie_and_socket() {
    let llm = FakeLlm::start([]);
    let (app, _dir) = server(&llm, &[("RUMMY_CONSOLE_PATH", "/team/console")]).await;
    let addr = app.addr();
    assert_eq!(send(get(addr, "/team/console/"), None).await.status, 200);
    assert_eq!(send(get(addr, "/ui/"), None).await.status, 404);
    let signed = sign_in(addr, "/team/console", MO).await;
    assert!(signed
        .cookie_attributes()
        .contains(&"path=/team/console".to_owned()));
    let id = signed.session();
    assert!(console_socket(addr, "/team/console", &id, &origin(addr))
        .await
        .is_ok());
    assert_eq!(
        console_socket(addr, "/ui", &id, &origin(addr)).await.err(),
        Some(404)
    );
}

#[actix_web::test]
async fn the_cookie_is_secure_when_a_trusted_proxy_says_the_browser_used_tls_and_listed_origins_may_sign_in(
) {
    let llm = FakeLlm::start([]);
    let (app, _dir) = server(&llm, &[("RUMMY_TRUSTED_PROXIES", "127.0.0.1")]).await;
    let addr = app.addr();
    let behind = |proto: &str| {
        awc::Client::new()
            .post(format!("http://{addr}/ui/session"))
            .insert_header(("origin", origin(addr)))
            .insert_header(("x-forwarded-proto", proto))
    };
    let tls = send(behind("https"), Some(json!({ "token": MO }))).await;
    assert!(tls.cookie_attributes().contains(&"secure".to_owned()));
    let plain = send(behind("http"), Some(json!({ "token": MO }))).await;
    assert!(!plain.cookie_attributes().contains(&"secure".to_owned()));

    let (untrusted, _dir) = server(
        &llm,
        &[("RUMMY_ALLOWED_ORIGINS", "https://console.example")],
    )
    .await;
    let addr = untrusted.addr();
    let forged = send(
        awc::Client::new()
            .post(format!("http://{addr}/ui/session"))
            .insert_header(("origin", origin(addr)))
            .insert_header(("x-forwarded-proto", "https")),
        Some(json!({ "token": MO })),
    )
    .await;
    assert!(
        !forged.cookie_attributes().contains(&"secure".to_owned()),
        "a client that is no trusted proxy says nothing about TLS"
    );
    let listed = send(
        awc::Client::new()
            .post(format!("http://{addr}/ui/session"))
            .insert_header(("origin", "https://console.example")),
        Some(json!({ "token": MO })),
    )
    .await;
    assert_eq!(
        listed.status, 200,
        "an origin of RUMMY_ALLOWED_ORIGINS is the page's too"
    );
    let id = listed.session();
    assert!(console_socket(addr, "/ui", &id, "https://console.example")
        .await
        .is_ok());
}

/// What the console's pages read beside the runs: an admin sees the people of the users
/// file (name, role, projects, and nothing of their tokens), a server without one lists no
/// one; each run of `getRuns` carries its cost; `usage/report` answers before `init`.
#[actix_web::test]
async fn the_console_reads_the_people_each_runs_cost_and_usage_before_init() {
    use rummy::testing::fake_llm::{Reply, Step, Usage};
    let llm = FakeLlm::start([Step::Reply(
        Reply::new("<summarize>four</summarize>").with_usage(Usage {
            prompt_tokens: 1000,
            completion_tokens: 10,
            cached_tokens: 0,
            cost: 0.25,
        }),
    )]);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("users.toml");
    std::fs::write(
        &file,
        users(&[
            ("mo", MO, "member", &["web", "api-*"]),
            ("ada", "ada-token", "admin", &["*"]),
        ]),
    )
    .unwrap();
    let file = file.display().to_string();
    let app = TestApp::with_llm(&llm, &[("RUMMY_USERS_FILE", &file)]).await;

    let mut ada = Client::connect(&format!("ws://{}/?token=ada-token", app.addr())).await;
    let people = ada.ok("getPeople", json!({})).await;
    assert_eq!(
        people,
        json!([
            {"name": "mo", "role": "member", "projects": ["web", "api-*"]},
            {"name": "ada", "role": "admin", "projects": ["*"]},
        ])
    );
    let report = ada.ok("usage/report", json!({"by": "person"})).await;
    assert_eq!(report["total"]["calls"], json!(0), "{report}");

    let mut mo = Client::connect(&format!("ws://{}/?token={MO}", app.addr())).await;
    mo.init("web", &app.project_root("web")).await;
    let asked = mo
        .ok("ask", json!({"model": "fake", "prompt": "2 + 2?"}))
        .await;
    let runs = mo.ok("getRuns", json!({})).await;
    assert_eq!(runs[0]["run"], asked["run"]);
    assert_eq!(runs[0]["cost_micros"], json!(250_000), "{runs}");
    assert_eq!(runs[0]["cost"], json!(0.25), "{runs}");
    let run = mo.ok("getRun", json!({"run": asked["run"]})).await;
    assert_eq!(
        run["context"]["telemetry"]["cost_micros"],
        runs[0]["cost_micros"]
    );

    let nobody = TestApp::with_llm(&llm, &[]).await;
    let mut operator = nobody.client().await;
    assert_eq!(operator.ok("getPeople", json!({})).await, json!([]));
}

/// The calls the console's run page and inbox make, on a console socket: `init` as the
/// console, `run/watch` (the page's presence, seen by an editor of the run's project with the
/// person's name), and `inbox` before any `init`; the inbox page's script is served.
#[actix_web::test]
async fn the_console_is_seen_in_a_run_it_shows_and_reads_its_person_s_inbox() {
    let llm = FakeLlm::start([]);
    let (app, _dir) = server(&llm, &[]).await;
    let addr = app.addr();
    let root = app.project_root("web");
    let mut editor = Client::connect(&format!("ws://{addr}/?token={SHARED}")).await;
    editor.init("web", &root).await;
    editor.add_model("fake").await;
    let run = editor
        .ok("ask", json!({"model": "fake", "prompt": "hello"}))
        .await["run"]
        .as_str()
        .unwrap()
        .to_owned();

    let id = sign_in(addr, "/ui", MO).await.session();
    let mut page = console_socket(addr, "/ui", &id, &origin(addr))
        .await
        .unwrap();
    assert_eq!(
        page.ok("inbox", json!({})).await,
        json!({"items": [], "next": null}),
        "mo asked for nothing and nothing waits for his approval"
    );
    page.ok(
        "init",
        json!({"name": "web", "projectRoot": root, "client": {"name": "console", "kind": "console"}}),
    )
    .await;
    page.ok("run/watch", json!({"run": run})).await;
    let told = editor
        .until_notified("run/presence", |params| {
            params["run"] == run && params["present"].as_array().unwrap().len() == 2
        })
        .await;
    let page_present = &told["params"]["present"][1];
    assert_eq!(page_present["person"], json!("mo"), "{told}");
    assert_eq!(
        page_present["client"],
        json!({"name": "console", "kind": "console"})
    );
    assert_eq!(
        page_present["driving"],
        json!(false),
        "the editor that asked drives"
    );

    let script = send(get(addr, "/ui/inbox.js"), None).await;
    assert_eq!(script.status, 200);
    assert_eq!(
        script.header("content-type"),
        "text/javascript; charset=utf-8"
    );
    assert!(script.body.contains("'inbox/dismiss'"), "{}", script.body);
}
