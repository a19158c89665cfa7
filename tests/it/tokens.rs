//! Personal access tokens: minted, listed and revoked over the console's socket and a
//! plain one; a token opens a WebSocket as a users-file token does, within its scope
//! (read-only, one project) and its person's role; revoked, expired or its person gone, it
//! opens nothing, and a connection it opened can do nothing more; every mint, revocation
//! and refused use is in the admins' audit, with who and from where, and no token is
//! anywhere in the server's home.

use std::path::Path;

use awc::error::WsClientError;
use diesel::RunQueryDsl;
use serde_json::{json, Value};

use crate::access::users;
use crate::support::{eventually, Client, TestApp};

const SHARED: &str = "shared-token";
const VERA: &str = "vera-token";
const MO: &str = "mo-token";
const ADA: &str = "ada-token";

/// A server with the shared token, vera (viewer of `web`), mo (member of `web`) and ada
/// (admin of everything), and `extra` settings.
async fn server(extra: &[(&str, &str)]) -> (TestApp, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("users.toml");
    let team = users(&[
        ("vera", VERA, "viewer", &["web"]),
        ("mo", MO, "member", &["web"]),
        ("ada", ADA, "admin", &["*"]),
    ]);
    std::fs::write(&file, team).unwrap();
    let file = file.display().to_string();
    let mut env = vec![("RUMMY_AUTH_TOKEN", SHARED), ("RUMMY_USERS_FILE", &file)];
    env.extend_from_slice(extra);
    (TestApp::start_with(&env).await, dir)
}

/// A plain socket opened with `token` in the `Authorization` header; the status refused.
pub(crate) async fn open(app: &TestApp, token: &str) -> Result<Client, u16> {
    let request = awc::Client::new()
        .ws(format!("ws://{}/", app.addr()))
        .bearer_auth(token);
    match request.connect().await {
        Ok((_, framed)) => Ok(Client::from_framed(framed)),
        Err(WsClientError::InvalidResponseStatus(status)) => Err(status.as_u16()),
        Err(error) => panic!("{error}"),
    }
}

/// The status and body of an upgrade asked with `token` in the query.
async fn refusal(app: &TestApp, token: &str) -> (u16, String) {
    let mut response = awc::Client::new()
        .get(format!("http://{}/?token={token}", app.addr()))
        .insert_header(("upgrade", "websocket"))
        .insert_header(("connection", "upgrade"))
        .insert_header(("sec-websocket-version", "13"))
        .insert_header(("sec-websocket-key", "dGhlIHNhbXBsZSBub25jZQ=="))
        .send()
        .await
        .unwrap();
    let body = response.body().await.unwrap();
    (
        response.status().as_u16(),
        String::from_utf8_lossy(&body).into_owned(),
    )
}

async fn connect(app: &TestApp, token: &str) -> Client {
    open(app, token).await.unwrap()
}

/// Mints a token of the caller's with `params` (a name and 30 days unless they say).
async fn mint(client: &mut Client, params: Value) -> Value {
    let mut all = json!({ "name": "laptop", "expiresInDays": 30 });
    all.as_object_mut()
        .unwrap()
        .extend(params.as_object().unwrap().clone());
    client.ok("tokens/mint", all).await
}

/// The admins' audit rows of `action`, once there are some (a refused use is audited
/// without the refusal waiting for it).
async fn audited(admin: &mut Client, action: &str) -> Vec<Value> {
    eventually(action, async || {
        let changes = admin.ok("admin/changes", json!({})).await;
        let rows: Vec<Value> = changes["changes"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|change| change["action"] == action)
            .cloned()
            .collect();
        (!rows.is_empty()).then_some(rows)
    })
    .await
}

/// Every file under `dir` (the store, its write-ahead log, any log) holds none of `secrets`.
pub(crate) fn nowhere_in(dir: &Path, secrets: &[&str]) {
    for entry in walk(dir) {
        let bytes = std::fs::read(&entry).unwrap_or_default();
        for secret in secrets {
            let found = bytes
                .windows(secret.len())
                .any(|window| window == secret.as_bytes());
            assert!(!found, "{secret} is in {}", entry.display());
        }
    }
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            files.extend(walk(&path));
        } else {
            files.push(path);
        }
    }
    files
}

#[actix_web::test]
async fn a_token_minted_is_shown_once_opens_a_socket_and_once_revoked_opens_nothing() {
    let (app, _dir) = server(&[("RUMMY_RPC_LOG", "full")]).await;
    let mut mo = connect(&app, MO).await;
    let minted = mint(&mut mo, json!({})).await;
    let token = minted["token"].as_str().unwrap().to_owned();
    assert!(token.starts_with("rpat_") && token.len() == 69, "{token}");
    assert_eq!(minted["prefix"], json!(token[..13]));
    assert_eq!(
        minted["expiresAt"].as_i64().unwrap() - minted["createdAt"].as_i64().unwrap(),
        30 * 86_400
    );
    let listed = mo.ok("tokens/list", json!({})).await;
    let listed = &listed["tokens"];
    assert_eq!(listed.as_array().unwrap().len(), 1);
    assert_eq!(listed[0]["name"], "laptop");
    assert_eq!(listed[0]["person"], "mo");
    assert_eq!(listed[0]["state"], "live");
    assert_eq!(listed[0]["prefix"], minted["prefix"]);
    assert!(listed[0].get("token").is_none());
    assert!(!listed.to_string().contains(&token), "listed: {listed}");

    let mut editor = connect(&app, &token).await;
    let root = app.project_root("web");
    editor.init("web", &root).await;
    assert!(editor.ok("getRuns", json!({})).await.is_array());
    let used = mo.ok("tokens/list", json!({})).await;
    assert!(used["tokens"][0]["lastUsedAt"].as_i64().is_some(), "{used}");

    let id = minted["id"].clone();
    let revoked = mo.ok("tokens/revoke", json!({ "id": id })).await;
    assert_eq!(revoked, json!({ "id": id, "revoked": true }));
    let again = mo.ok("tokens/revoke", json!({ "id": id })).await;
    assert_eq!(again["revoked"], false, "once");
    assert_eq!(
        editor.err("getRuns", json!({})).await,
        (
            -32005,
            "mo's token 'laptop' was revoked; it opens nothing more.".to_owned()
        )
    );
    assert_eq!(
        refusal(&app, &token).await,
        (
            401,
            "this personal access token was revoked; it opens nothing more".to_owned()
        )
    );
    let listed = mo.ok("tokens/list", json!({})).await;
    assert_eq!(listed["tokens"][0]["state"], "revoked");
    assert_eq!(listed["tokens"][0]["revokedBy"], "mo");

    let mut operator = connect(&app, SHARED).await;
    let mints = audited(&mut operator, "tokens/mint").await;
    assert_eq!(mints.len(), 1);
    assert_eq!(mints[0]["by"], "mo");
    assert_eq!(mints[0]["subject"], "mo");
    assert_eq!(mints[0]["detail"]["name"], "laptop");
    assert_eq!(mints[0]["detail"]["from"], "127.0.0.1");
    assert!(mints[0]["at"].as_str().is_some());
    let revocations = audited(&mut operator, "tokens/revoke").await;
    assert_eq!(
        revocations.len(),
        1,
        "the second revocation changed nothing"
    );
    assert_eq!(revocations[0]["detail"]["from"], "127.0.0.1");
    let refused = audited(&mut operator, "tokens/refused").await;
    assert_eq!(refused.len(), 1, "at most one a minute: {refused:?}");
    assert_eq!(refused[0]["detail"]["reason"], "revoked");
    assert_eq!(refused[0]["detail"]["from"], "127.0.0.1");
    let audit = operator.ok("admin/changes", json!({})).await.to_string();
    assert!(!audit.contains(&token), "{audit}");

    drop((editor, mo, operator));
    let TestApp { server, home, .. } = app;
    server.stop().await;
    nowhere_in(home.path(), &[&token, &token[13..]]);
}

#[actix_web::test]
async fn tokens_are_minted_listed_and_revoked_over_the_consoles_socket() {
    let (app, _dir) = server(&[]).await;
    let addr = app.addr();
    let origin = format!("http://{addr}");
    let mut signed_in = awc::Client::new()
        .post(format!("http://{addr}/ui/session"))
        .insert_header(("origin", origin.as_str()))
        .send_json(&json!({ "token": VERA }))
        .await
        .unwrap();
    assert_eq!(signed_in.status().as_u16(), 200);
    let _ = signed_in.body().await;
    let cookie = signed_in
        .headers()
        .get("set-cookie")
        .unwrap()
        .to_str()
        .unwrap()
        .split(';')
        .next()
        .unwrap()
        .to_owned();
    let (_, framed) = awc::Client::new()
        .ws(format!("ws://{addr}/ui/rpc"))
        .origin(origin.as_str())
        .set_header("cookie", cookie)
        .connect()
        .await
        .unwrap();
    let mut console = Client::from_framed(framed);
    let minted = mint(&mut console, json!({ "name": "ci", "readOnly": true })).await;
    let token = minted["token"].as_str().unwrap().to_owned();
    assert_eq!(minted["readOnly"], true);
    let listed = console.ok("tokens/list", json!({})).await;
    assert_eq!(listed["tokens"][0]["name"], "ci");
    assert!(!listed.to_string().contains(&token));
    let mut editor = connect(&app, &token).await;
    assert_eq!(editor.ok("ping", json!({})).await, json!({}));
    console
        .ok("tokens/revoke", json!({ "id": minted["id"] }))
        .await;
    assert_eq!(open(&app, &token).await.err(), Some(401));
}

#[actix_web::test]
async fn a_read_only_token_reads_but_is_refused_a_write_with_a_clear_error() {
    let (app, _dir) = server(&[]).await;
    let root = app.project_root("web");
    let mut mo = connect(&app, MO).await;
    mo.init("web", &root).await;
    let minted = mint(&mut mo, json!({ "name": "reader", "readOnly": true })).await;
    let mut reader = connect(&app, minted["token"].as_str().unwrap()).await;
    reader.init("web", &root).await;
    assert!(reader.ok("getRuns", json!({})).await.is_array());
    assert_eq!(
        reader.err("ask", json!({ "prompt": "hi" })).await,
        (
            -32005,
            "mo's token 'reader' is read-only; 'ask' needs the member role.".to_owned()
        )
    );
    assert_eq!(
        reader
            .err("tokens/mint", json!({"name": "x", "expiresInDays": 1}))
            .await,
        (
            -32005,
            "A personal access token cannot mint or revoke tokens; sign in to the console."
                .to_owned()
        )
    );
    assert_eq!(
        reader
            .err("tokens/revoke", json!({"id": minted["id"]}))
            .await
            .0,
        -32005
    );
}

#[actix_web::test]
async fn a_one_project_token_opens_only_its_project() {
    let (app, _dir) = server(&[]).await;
    let mut ada = connect(&app, ADA).await;
    let minted = mint(&mut ada, json!({ "name": "ci", "project": "web" })).await;
    let mut ci = connect(&app, minted["token"].as_str().unwrap()).await;
    let (code, message) = ci
        .err(
            "init",
            json!({"name": "ops", "projectRoot": app.project_root("ops")}),
        )
        .await;
    assert_eq!(
        (code, message.as_str()),
        (
            -32005,
            "ada's token 'ci' opens only project 'web', not 'ops'."
        )
    );
    ci.init("web", &app.project_root("web")).await;
    let projects = ci.ok("getProjects", json!({})).await.to_string();
    assert!(!projects.contains("\"ops\""), "{projects}");

    let mut mo = connect(&app, MO).await;
    assert_eq!(
        mo.err(
            "tokens/mint",
            json!({"name": "x", "expiresInDays": 1, "project": "ops"})
        )
        .await,
        (-32005, "mo may not open project 'ops'.".to_owned())
    );
}

#[actix_web::test]
async fn an_expired_token_opens_nothing_and_its_connection_can_do_nothing_more() {
    let (app, _dir) = server(&[]).await;
    let mut mo = connect(&app, MO).await;
    let minted = mint(&mut mo, json!({ "name": "old" })).await;
    let token = minted["token"].as_str().unwrap().to_owned();
    let mut editor = connect(&app, &token).await;
    assert_eq!(editor.ok("ping", json!({})).await, json!({}));
    let database = app.database();
    actix_web::rt::task::spawn_blocking(move || {
        diesel::sql_query("UPDATE personal_tokens SET expires_at = 1")
            .execute(&mut database.connect().unwrap())
            .unwrap();
    })
    .await
    .unwrap();
    assert_eq!(
        editor.err("ping", json!({})).await,
        (
            -32005,
            "mo's token 'old' expired; it opens nothing more (mint another in the console)."
                .to_owned()
        )
    );
    assert_eq!(
        refusal(&app, &token).await,
        (
            401,
            "this personal access token expired; mint another in the console".to_owned()
        )
    );
    let listed = mo.ok("tokens/list", json!({})).await;
    assert_eq!(listed["tokens"][0]["state"], "expired");
    let mut ada = connect(&app, ADA).await;
    let refused = audited(&mut ada, "tokens/refused").await;
    assert_eq!(refused[0]["detail"]["reason"], "expired");
}

#[actix_web::test]
async fn an_admin_lists_and_revokes_anyones_token_and_others_may_not() {
    let (app, _dir) = server(&[]).await;
    let mut mo = connect(&app, MO).await;
    let minted = mint(&mut mo, json!({})).await;
    let mut vera = connect(&app, VERA).await;
    assert_eq!(
        vera.ok("tokens/list", json!({})).await,
        json!({ "tokens": [] })
    );
    assert_eq!(
        vera.err("tokens/revoke", json!({ "id": minted["id"] }))
            .await,
        (
            -32005,
            "vera may not revoke mo's token: only its person or an admin may.".to_owned()
        )
    );
    assert_eq!(
        vera.err("tokens/list", json!({ "all": true })).await.0,
        -32005
    );
    let mut ada = connect(&app, ADA).await;
    let all = ada.ok("tokens/list", json!({ "all": true })).await;
    assert_eq!(all["tokens"][0]["person"], "mo");
    let revoked = ada.ok("tokens/revoke", json!({ "id": minted["id"] })).await;
    assert_eq!(revoked["revoked"], true);
    let listed = mo.ok("tokens/list", json!({})).await;
    assert_eq!(listed["tokens"][0]["revokedBy"], "ada");
    let revocations = audited(&mut ada, "tokens/revoke").await;
    assert_eq!(
        (&revocations[0]["by"], &revocations[0]["subject"]),
        (&json!("ada"), &json!("mo"))
    );
    assert_eq!(
        vera.err("tokens/revoke", json!({ "id": 999 })).await,
        (-32602, "there is no token 999".to_owned())
    );
    let mut operator = connect(&app, SHARED).await;
    assert_eq!(
        operator
            .err("tokens/mint", json!({"name": "x", "expiresInDays": 1}))
            .await,
        (
            -32005,
            "The operator (the shared token) is nobody in particular and has no tokens; sign \
             in as a person to mint one."
                .to_owned()
        )
    );
}

#[actix_web::test]
async fn a_mint_is_refused_a_bad_name_or_expiry() {
    let (app, _dir) = server(&[]).await;
    let mut mo = connect(&app, MO).await;
    for (params, expected) in [
        (
            json!({"name": "x", "expiresInDays": 0}),
            "expiresInDays must be 1 to 366 (got 0)",
        ),
        (
            json!({"name": "x", "expiresInDays": 367}),
            "expiresInDays must be 1 to 366 (got 367)",
        ),
        (
            json!({"name": " ", "expiresInDays": 1}),
            "name must be 1 to 64 characters, none of them control characters",
        ),
        (
            json!({"name": "a\nb", "expiresInDays": 1}),
            "name must be 1 to 64 characters, none of them control characters",
        ),
        (
            json!({"name": "é".repeat(65), "expiresInDays": 1}),
            "name must be 1 to 64 characters, none of them control characters",
        ),
    ] {
        assert_eq!(
            mo.err("tokens/mint", params).await,
            (-32602, expected.to_owned())
        );
    }
    assert!(mo
        .ok(
            "tokens/mint",
            json!({"name": "é".repeat(64), "expiresInDays": 366})
        )
        .await["token"]
        .is_string());
    assert_eq!(
        mo.err("tokens/mint", json!({"name": "x"})).await.0,
        -32602,
        "the expiry is required"
    );
}

#[actix_web::test]
async fn a_person_removed_from_the_users_file_opens_nothing_with_their_tokens() {
    let (app, _dir) = server(&[]).await;
    let mut mo = connect(&app, MO).await;
    let minted = mint(&mut mo, json!({})).await;
    let token = minted["token"].as_str().unwrap().to_owned();
    let mut editor = connect(&app, &token).await;
    assert_eq!(editor.ok("ping", json!({})).await, json!({}));
    let mut ada = connect(&app, ADA).await;
    ada.ok("people/remove", json!({ "name": "mo" })).await;
    assert_eq!(
        editor.err("ping", json!({})).await,
        (-32005, "mo is no longer a user of this server.".to_owned())
    );
    assert_eq!(open(&app, &token).await.err(), Some(401));
}

/// A connection whose token is revoked is closed at its next heartbeat, so it gets no
/// more notifications either.
#[actix_web::test]
async fn a_connection_is_closed_at_the_heartbeat_after_its_token_is_revoked() {
    let (app, _dir) = server(&[("RUMMY_HEARTBEAT_SECS", "1")]).await;
    let mut mo = connect(&app, MO).await;
    let minted = mint(&mut mo, json!({})).await;
    let mut editor = connect(&app, minted["token"].as_str().unwrap()).await;
    let mut kept = connect(&app, MO).await;
    assert_eq!(editor.ok("ping", json!({})).await, json!({}));
    mo.ok("tokens/revoke", json!({ "id": minted["id"] })).await;
    let closed = tokio::time::timeout(std::time::Duration::from_secs(20), editor.closed())
        .await
        .expect("closed within a few heartbeats of 1 s");
    assert_eq!(closed, Some(1008));
    assert_eq!(kept.ok("ping", json!({})).await, json!({}));
}
