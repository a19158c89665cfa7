//! People of the provider beyond one sign-in: a flood of refused callbacks or token
//! sign-ins grows the audit by one row per kind of refusal and address a minute, counting
//! the rest in it; and a personal access token of someone who exists only through the
//! provider opens a socket with their role on an instance that did not see them sign in
//! (after a restart, or another instance on the shared store).

use diesel::RunQueryDsl;
use serde_json::{json, Value};

use super::{begin, callback, changes, get, provider_env, start, Idp};
use crate::support::{Client, TestApp};
use crate::tokens::open;

/// The refusal rows of the audit: `(via, reason's first words, count)`.
async fn refusals(app: &TestApp) -> Vec<(String, Value)> {
    changes(app.addr())
        .await
        .into_iter()
        .filter(|change| change["action"] == "console/signInRefused")
        .map(|change| {
            (
                change["detail"]["via"].as_str().unwrap().to_owned(),
                change["detail"]["count"].clone(),
            )
        })
        .collect()
}

#[actix_web::test]
async fn a_flood_of_refused_sign_ins_writes_one_row_per_kind_and_address_a_minute() {
    let (env, _dir) = provider_env("http://127.0.0.1:9", None);
    let app = start(&env).await;
    for attempt in 0..25 {
        let answer = get(
            app.addr(),
            &format!("/ui/oidc/callback?code=x&state=replayed-{attempt}"),
            None,
        )
        .await;
        assert_eq!(answer.status, 400, "{}", answer.body);
        assert!(answer.body.contains("used already"), "{}", answer.body);
    }
    for attempt in 0..5 {
        let answer = awc::Client::new()
            .post(format!("http://{}/ui/session", app.addr()))
            .insert_header(("origin", format!("http://{}", app.addr())))
            .send_json(&json!({ "token": format!("guess-{attempt}") }))
            .await
            .unwrap();
        assert_eq!(answer.status().as_u16(), 401);
    }
    let refused = refusals(&app).await;
    assert_eq!(
        refused,
        [
            ("token".to_owned(), json!(5)),
            ("oidc".to_owned(), json!(25))
        ],
        "one row per kind, counting the rest"
    );
}

/// A personal access token of `person`, stored as a mint on another instance would.
async fn token_of(app: &TestApp, person: &'static str) -> String {
    let token = format!("rpat_{}", "7e".repeat(32));
    let hash = rummy::hash_token(&token);
    let prefix = token[..13].to_owned();
    app.read(move |conn| {
        diesel::sql_query(format!(
            "INSERT INTO personal_tokens \
             (person, name, token_hash, prefix, created_at, expires_at) \
             VALUES ('{person}', 'laptop', '{hash}', '{prefix}', 1, 4000000000)"
        ))
        .execute(conn)
        .unwrap()
    })
    .await;
    token
}

#[actix_web::test]
async fn a_token_of_someone_who_signed_in_on_another_instance_opens_with_their_role() {
    let (env, _dir) = provider_env("http://127.0.0.1:9", None);
    let app = start(&env).await;
    let token = token_of(&app, "eve").await;
    assert_eq!(
        open(&app, &token).await.err(),
        Some(401),
        "no one of that name signed in anywhere"
    );
    app.read(|conn| {
        diesel::sql_query(
            "INSERT INTO oidc_people (name, issuer, subject, groups, signed_in_at) \
             VALUES ('eve', 'http://127.0.0.1:9', 'eve-sub', '[\"rummy-admins\"]', 1), \
             ('wes', 'http://127.0.0.1:9', 'wes-sub', '[\"web-team\"]', 1)",
        )
        .execute(conn)
        .unwrap()
    })
    .await;
    let mut eve = open(&app, &token).await.expect("eve's token opens");
    let listed = eve.ok("admin/changes", json!({})).await;
    assert!(listed["changes"].is_array(), "eve is an admin: {listed}");

    let wes_token = format!("rpat_{}", "5a".repeat(32));
    let hash = rummy::hash_token(&wes_token);
    app.read(move |conn| {
        diesel::sql_query(format!(
            "INSERT INTO personal_tokens \
             (person, name, token_hash, prefix, created_at, expires_at) \
             VALUES ('wes', 'ci', '{hash}', 'rpat_5a5a5a5a', 1, 4000000000)"
        ))
        .execute(conn)
        .unwrap()
    })
    .await;
    let mut wes = open(&app, &wes_token).await.expect("wes's token opens");
    let (code, message) = wes.err("admin/changes", json!({})).await;
    assert_eq!(code, -32005, "{message}");
    assert!(message.contains("wes is a member"), "{message}");
}

#[actix_web::test]
#[ignore = "needs node and tests/oidc/node_modules (npm ci in tests/oidc): tests/run.sh installs them"]
async fn a_token_minted_after_a_sign_in_through_the_provider_opens_after_a_restart() {
    let idp = Idp::start("rogue.mjs").await;
    let (env, _dir) = provider_env(&idp.issuer, Some("http://127.0.0.1:1/ui/oidc/callback"));
    let app = start(&env).await;
    let addr = app.addr();
    let begun = begin(addr, &idp.issuer).await;
    let code = format!("good.{}", begun.nonce);
    let answer = callback(addr, &code, &begun.state, Some(&begun.cookie)).await;
    assert_eq!(answer.status, 303, "{}", answer.body);
    let session = answer.cookie("rummy_session").unwrap();
    let request = awc::Client::new()
        .ws(format!("ws://{addr}/ui/rpc"))
        .origin(format!("http://{addr}"))
        .set_header("cookie", format!("rummy_session={session}"));
    let (_, framed) = request.connect().await.unwrap();
    let mut console = Client::from_framed(framed);
    let minted = console
        .ok(
            "tokens/mint",
            json!({ "name": "editor", "expiresInDays": 30 }),
        )
        .await;
    let token = minted["token"].as_str().unwrap().to_owned();
    let mut before = open(&app, &token).await.expect("the token opens");
    before.ok("admin/changes", json!({})).await;
    drop((before, console));

    let app = app.restart().await;
    let mut after = open(&app, &token)
        .await
        .expect("the token opens after a restart, before any sign-in");
    let listed = after.ok("admin/changes", json!({})).await;
    assert!(listed["changes"].is_array(), "eve is still an admin");
}
