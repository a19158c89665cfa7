//! Console sign-in through a real OpenID Connect provider (panva's oidc-provider,
//! `tests/oidc/provider.mjs`) in chromium, through the provider's own login page
//! (`tests/console/oidc_sign_in.py`): a first sign-in gets the role its groups give (ada an
//! admin, mo a member), someone with no mapped group (bo) is told to ask an admin, sign-out
//! ends the session, and a replayed state is refused (a replayed code: `oidc::`). The audit then
//! holds each sign-in and the refusals, with where they came from.

use serde_json::json;

use super::browse;
use crate::oidc::{provider_env, Idp};
use crate::support::{Client, TestApp};

#[actix_web::test]
#[ignore = "needs chromium, Playwright in tests/console/.venv, node and tests/oidc/node_modules: tests/run.sh installs them"]
async fn people_sign_in_through_the_provider_s_login_page_with_the_role_their_groups_give() {
    let mut idp = Idp::start("provider.mjs").await;
    let (env, _dir) = provider_env(&idp.issuer, None);
    // The redirect URL is the public URL's, so the server's port is chosen before it starts.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
        .to_string();
    let public = format!("http://127.0.0.1:{port}");
    let mut pairs: Vec<(&str, &str)> = env
        .iter()
        .filter(|(key, _)| key != "RUMMY_PUBLIC_URL")
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    pairs.push(("RUMMY_PUBLIC_URL", &public));
    pairs.push(("PORT", &port));
    let app = TestApp::start_with(&pairs).await;
    let addr = app.addr();
    idp.serve(&format!("{public}/ui/oidc/callback")).await;

    browse(
        "oidc",
        format!("{public}/ui/"),
        &[("PROVIDER", "Test IdP".to_owned())],
    )
    .await;

    let mut operator = Client::connect(&format!("ws://{addr}/?token=operator")).await;
    let listed = operator.ok("admin/changes", json!({ "limit": 200 })).await;
    let seen: Vec<_> = listed["changes"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .map(|change| {
            (
                change["action"].as_str().unwrap().to_owned(),
                change["by"].as_str().unwrap_or("operator").to_owned(),
                change["detail"]["from"].clone(),
            )
        })
        .collect();
    let expected: Vec<_> = [
        ("console/signIn", "ada"),
        ("console/signInRefused", "(unknown)"),
        ("console/signInRefused", "bo"),
        ("console/signIn", "mo"),
    ]
    .iter()
    .map(|(action, by)| (action.to_string(), by.to_string(), json!("127.0.0.1")))
    .collect();
    assert_eq!(seen, expected);
}
