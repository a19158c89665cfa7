//! People changed from a client outlive a restart: the users file the change wrote is what
//! the next start reads, so an added person's token opens with the role and projects last
//! set, and a removed person's opens nothing.

use rummy::testing::fake_llm::FakeLlm;
use serde_json::json;

use super::{connect, server};
use crate::support::Client;

#[actix_web::test]
async fn people_added_changed_and_removed_stay_so_after_a_restart() {
    let llm = FakeLlm::start([]);
    let (app, _, _dir) = server(&llm, &[]).await;
    let mut ada = connect(&app, "ada-token").await;
    let added = ada
        .ok(
            "people/add",
            json!({"name": "olga", "role": "viewer", "projects": ["web"]}),
        )
        .await;
    let token = added["token"].as_str().unwrap().to_owned();
    ada.ok(
        "people/update",
        json!({"name": "olga", "role": "member", "projects": ["web", "api-*"]}),
    )
    .await;
    ada.ok("people/remove", json!({"name": "mo"})).await;
    drop(ada);

    let app = app.restart().await;

    let mut olga = connect(&app, &token).await;
    let started = olga.ok("startRun", json!({"model": "fake"})).await;
    assert!(
        started["run"].is_string(),
        "a member may start a run: {started}"
    );
    let mut elsewhere = Client::connect(&format!("ws://{}/?token={token}", app.addr())).await;
    elsewhere
        .init("api-billing", &app.project_root("api-billing"))
        .await;
    let (code, message) = elsewhere
        .err(
            "init",
            json!({"name": "ops", "projectRoot": app.project_root("ops")}),
        )
        .await;
    assert_eq!(
        (code, message.as_str()),
        (-32005, "olga may not open project 'ops'.")
    );
    let mo = awc::Client::new()
        .ws(format!("ws://{}/?token=mo-token", app.addr()))
        .connect()
        .await;
    assert!(mo.is_err(), "a removed person's token opens nothing");
    let mut ada = connect(&app, "ada-token").await;
    let people = ada.ok("getPeople", json!({})).await;
    let olga_listed = people
        .as_array()
        .unwrap()
        .iter()
        .find(|person| person["name"] == "olga")
        .cloned();
    let names: Vec<&str> = people
        .as_array()
        .unwrap()
        .iter()
        .map(|person| person["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["ada", "olga"], "{people}");
    assert_eq!(
        olga_listed,
        Some(json!({"name": "olga", "role": "member", "projects": ["web", "api-*"]})),
    );
}
