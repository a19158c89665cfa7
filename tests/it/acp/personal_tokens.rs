//! `rummy acp --url` with a personal access token, driven by both official ACP SDKs: a
//! token minted by a person works in the editor as their own token does; revoked, the
//! editor is told its token was refused and what to do.

use serde_json::json;

use super::{reading_a_txt, team_server, Drive, Remote, Sdk};
use crate::support::Client;

with_each_sdk!(remote_a_personal_token_works_in_the_editor_until_it_is_revoked);

async fn remote_a_personal_token_works_in_the_editor_until_it_is_revoked(sdk: Sdk) {
    let llm = reading_a_txt();
    let home = tempfile::tempdir().unwrap();
    let server = team_server(home.path(), &llm).await;
    let url = format!("ws://127.0.0.1:{}/", server.port);
    let mut mo = Client::connect(&format!("{url}?token=mo-token")).await;
    let minted = mo
        .ok("tokens/mint", json!({"name": "editor", "expiresInDays": 1}))
        .await;
    let token = minted["token"].as_str().unwrap().to_owned();
    let remote = Remote::with_token(url.clone(), &token);
    let drive = Drive::run_in(sdk, "stream", &llm, home, "demo", Some(remote), &[]).await;
    drive.assert_clean_session();
    assert_eq!(drive.seen["stopReasons"], json!(["end_turn"]));
    assert_eq!(drive.messages(), ["Reading a.txt.", "a.txt counts to two."]);
    let listed = mo.ok("tokens/list", json!({})).await;
    assert!(listed["tokens"][0]["lastUsedAt"].is_i64(), "{listed}");

    mo.ok("tokens/revoke", json!({"id": minted["id"]})).await;
    let home = drive.home;
    let remote = Remote::with_token(url, &token);
    let drive = Drive::run_in(sdk, "stream", &llm, home, "demo", Some(remote), &[]).await;
    let errors = drive.seen["errors"].as_array().unwrap();
    let refused = errors
        .iter()
        .find(|error| error["what"] == "session/new")
        .unwrap_or_else(|| panic!("a revoked token opens no session: {errors:?}"));
    assert_eq!(refused["code"], json!(-32000), "auth_required: {refused}");
    let said = refused.to_string();
    assert!(
        said.contains("a revoked or expired one is refused"),
        "{said}"
    );
    assert!(
        !drive.seen.to_string().contains(&token),
        "the token is shown"
    );
    assert_eq!(
        llm.requests().len(),
        2,
        "the revoked token reached no model"
    );
}
