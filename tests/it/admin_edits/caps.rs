//! Spend caps set at run time (`caps/set`, `caps/clear`): a stored cap holds at once,
//! outlives a restart, replaces the configured cap of its period and unit only, and raising
//! or clearing it resumes the loop it paused, the resume the admin's; on PostgreSQL a cap set
//! on one instance holds on another within a heartbeat.

use rummy::testing::fake_llm::{FakeLlm, Step};
use rummy::testing::today_at;
use serde_json::{json, Value};

use super::{connect, server};
use crate::support::{learning_100_tokens, Client};

/// Waits for the `run/outcome` of `run` with `status`; its params.
async fn outcome(client: &mut Client, run: &str, status: i64) -> Value {
    client
        .until_notified("run/outcome", |params| {
            params["run"] == run && params["status"] == status
        })
        .await["params"]
        .clone()
}

#[actix_web::test]
async fn a_stored_cap_holds_at_once_survives_a_restart_and_raising_it_resumes_the_paused_run() {
    let llm = FakeLlm::start([
        learning_100_tokens("a"),
        learning_100_tokens("b"),
        learning_100_tokens("c"),
        Step::reply("<summarize>Done.</summarize>"),
    ]);
    let (app, _, _dir) = server(&llm, &[("RUMMY_CAP_DAY_TOKENS", "100000")]).await;
    app.server.fix_clock(&today_at("00:00:01"));
    let mut ada = connect(&app, "ada-token").await;
    let mut mo = connect(&app, "mo-token").await;

    let set = ada
        .ok(
            "caps/set",
            json!({"scope": "person", "subject": "mo", "caps": {"day_tokens": 200}}),
        )
        .await;
    assert_eq!(
        set,
        json!({"scope": "person", "subject": "mo", "caps": {"day_tokens": 200}})
    );
    let caps = mo.ok("usage/caps", json!({})).await;
    let person: Vec<&Value> = caps["caps"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["scope"] == "person")
        .collect();
    assert_eq!(person.len(), 1, "{caps}");
    assert_eq!(person[0]["limit"], json!(200));
    let reply = mo
        .call("ask", json!({"model": "fake", "prompt": "Work on it."}))
        .await;
    assert_eq!(reply["result"]["status"], json!(402), "{reply}");
    assert_eq!(reply["result"]["cap"]["scope"], json!("person"), "{reply}");
    let run = reply["result"]["run"].as_str().unwrap().to_owned();
    assert_eq!(
        llm.requests().len(),
        2,
        "the call past the stored cap never made"
    );

    let app = app.restart().await;
    app.server.fix_clock(&today_at("00:00:01"));
    let mut ada = connect(&app, "ada-token").await;
    let mut mo = connect(&app, "mo-token").await;
    let listed = ada.ok("caps/list", json!({})).await;
    assert_eq!(
        listed["caps"][0]["caps"],
        json!({"day_tokens": 200}),
        "{listed}"
    );
    assert_eq!(listed["caps"][0]["setBy"], json!("ada"), "{listed}");
    let stored = mo.ok("getRun", json!({"run": run})).await;
    assert_eq!(
        stored["status"],
        json!(402),
        "still paused after the restart"
    );

    ada.ok(
        "caps/set",
        json!({"scope": "person", "subject": "mo", "caps": {"day_tokens": 300}}),
    )
    .await;
    let acted = mo
        .until_notified("run/action", |acted| acted["action"] == "resume")
        .await;
    assert_eq!(
        acted["params"]["by"],
        json!("ada"),
        "resumed by the admin who raised the cap"
    );
    let paused = outcome(&mut mo, &run, 402).await;
    assert_eq!(paused["cap"]["limit"], json!(300), "{paused}");
    assert_eq!(llm.requests().len(), 3);

    let cleared = ada
        .ok("caps/clear", json!({"scope": "person", "subject": "mo"}))
        .await;
    assert_eq!(
        cleared,
        json!({"scope": "person", "subject": "mo", "cleared": true})
    );
    outcome(&mut mo, &run, 200).await;
    assert_eq!(
        llm.requests().len(),
        4,
        "the configured caps hold again, and leave room"
    );
    let changes = ada.ok("admin/changes", json!({})).await;
    let actions: Vec<&str> = changes["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["action"].as_str().unwrap())
        .collect();
    assert_eq!(actions, ["caps/clear", "caps/set", "caps/set"]);
}

#[actix_web::test]
async fn a_stored_server_cap_replaces_the_configured_one_of_its_period_and_unit_only() {
    let llm = FakeLlm::start([
        learning_100_tokens("a"),
        learning_100_tokens("b"),
        learning_100_tokens("c"),
    ]);
    let (app, _, _dir) = server(&llm, &[("RUMMY_CAP_DAY_TOKENS", "100")]).await;
    app.server.fix_clock(&today_at("00:00:01"));
    let mut ada = connect(&app, "ada-token").await;
    ada.ok(
        "caps/set",
        json!({"scope": "server", "caps": {"day_tokens": 300, "month_tokens": 200}}),
    )
    .await;
    let caps = ada.ok("usage/caps", json!({})).await;
    let server: Vec<(Value, Value)> = caps["caps"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["scope"] == "server")
        .map(|c| (c["period"].clone(), c["limit"].clone()))
        .collect();
    assert_eq!(
        server,
        [(json!("day"), json!(300)), (json!("month"), json!(200))],
        "{caps}"
    );
    let reply = ada
        .call("ask", json!({"model": "fake", "prompt": "Work on it."}))
        .await;
    assert_eq!(reply["result"]["status"], json!(402), "{reply}");
    assert_eq!(reply["result"]["cap"]["period"], json!("month"), "{reply}");
    assert_eq!(llm.requests().len(), 2);
}

#[actix_web::test]
#[ignore = "needs PostgreSQL: RUMMY_TEST_DATABASE_URL"]
async fn a_cap_set_on_one_instance_holds_on_another_and_raising_it_resumes_the_loop_there() {
    let database = rummy::testing::ScratchDatabase::required();
    let llm = FakeLlm::start([
        learning_100_tokens("a"),
        learning_100_tokens("b"),
        Step::reply("<summarize>Done.</summarize>"),
    ]);
    let home = tempfile::tempdir().unwrap();
    let root = crate::support::project_root(home.path());
    let env = [
        ("RUMMY_DATABASE_URL", database.url()),
        ("RUMMY_LEASE_TTL_SECS", "3"),
    ];
    let first = crate::process::ServerProcess::start_with(home.path(), &llm, &env).await;
    let second = crate::process::ServerProcess::start_with(home.path(), &llm, &env).await;
    let mut on_first = first.client().await;
    on_first.init("shared", &root).await;
    let mut on_second = second.client().await;
    on_second.init("shared", &root).await;

    on_first
        .ok(
            "caps/set",
            json!({"scope": "server", "caps": {"day_tokens": 100}}),
        )
        .await;
    crate::support::eventually("the other instance to hold the cap", async || {
        let caps = on_second.ok("usage/caps", json!({})).await;
        let held =
            caps["caps"].as_array().unwrap().iter().any(|cap| {
                cap["scope"] == "server" && cap["period"] == "day" && cap["limit"] == 100
            });
        held.then_some(())
    })
    .await;
    let reply = on_second
        .call("ask", json!({"model": "fake", "prompt": "Work on it."}))
        .await;
    assert_eq!(reply["result"]["status"], json!(402), "{reply}");
    assert_eq!(reply["result"]["cap"]["scope"], json!("server"), "{reply}");
    let run = reply["result"]["run"].as_str().unwrap().to_owned();
    assert_eq!(llm.requests().len(), 1);

    on_first
        .ok(
            "caps/set",
            json!({"scope": "server", "caps": {"day_tokens": 100000}}),
        )
        .await;
    outcome(&mut on_second, &run, 200).await;
    assert_eq!(llm.requests().len(), 3);
}
