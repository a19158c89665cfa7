//! Caps pause a loop, not kill it: a loop a cap stops is paused (402, the cap in its answer,
//! `run/outcome` and `run/state` to every client), keeps its place (its turn count, its
//! prompt written once, what was queued behind it), and resumes by itself when its caps no
//! longer stand — the run's caps raised by a new `ask`, the users file's person cap raised,
//! an admin's `caps/set` raising it (the resume then theirs), the UTC day over — or on an
//! admin's `run/resume`; an abort ends it for good. On
//! PostgreSQL a cap raised on one instance resumes a loop paused on another, and a paused
//! loop of a killed instance is resumed by a live one. Every model call is counted on the
//! scripted LLM.

use rummy::testing::fake_llm::FakeLlm;
use rummy::testing::ScratchDatabase;
use serde_json::{json, Value};

use super::{ask, costing, done, learning, member, team};
use crate::process::ServerProcess;
use crate::support::{eventually, system_message, Client, TestApp};

/// The run cap of `run` at 200 tokens a day, reached by two 100-token turns on 2026-06-01.
fn run_cap(run: &str, spent: i64) -> Value {
    json!({"scope": "run", "subject": run, "period": "day", "unit": "tokens", "limit": 200,
           "spent": spent, "left": (200 - spent).max(0), "resets": "2026-06-02T00:00:00Z"})
}

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
async fn a_capped_loop_pauses_keeps_its_place_and_resumes_when_its_run_s_cap_is_raised() {
    let llm = FakeLlm::start([learning("a"), learning("b"), learning("c"), done(0.0)]);
    let app = TestApp::with_llm(&llm, &[("RUMMY_MAX_TURNS", "3")]).await;
    app.server.fix_clock("2026-06-01 10:00:00");
    let (mut client, root) = app.client_in_project("shop").await;
    let mut watcher = app.client().await;
    watcher.init("shop", &root).await;

    let reply = ask(&mut client, json!({"caps": {"day_tokens": 200}})).await;
    let result = &reply["result"];
    assert_eq!(result["status"], json!(402), "{reply}");
    let run = result["run"].as_str().unwrap().to_owned();
    assert_eq!(result["cap"], run_cap(&run, 200), "{reply}");
    assert!(
        result["error"].as_str().unwrap().starts_with(&format!(
            "the run cap of {run} (200 tokens per day) is reached"
        )),
        "{reply}"
    );
    assert_eq!(llm.requests().len(), 2, "the third call was never made");
    let told = outcome(&mut watcher, &run, 402).await;
    assert_eq!(told["cap"], run_cap(&run, 200), "{told}");
    let state = watcher
        .until_notified("run/state", |state| state["status"] == 402)
        .await;
    assert_eq!(state["params"]["run"], json!(run));
    assert_eq!(state["params"]["telemetry"]["total_tokens"], json!(200));
    let stored = client.ok("getRun", json!({"run": run})).await;
    assert_eq!(stored["status"], json!(402), "paused, not ended");
    assert_eq!(
        stored["paused"],
        json!({"cap": run_cap(&run, 200), "error": result["error"]}),
        "getRun says which cap the run waits on"
    );

    let refused = ask(&mut client, json!({"run": run})).await;
    assert_eq!(refused["error"]["code"], json!(-32011), "{refused}");
    let raised = ask(
        &mut client,
        json!({"run": run, "caps": {"day_tokens": 10000}}),
    )
    .await;
    assert_eq!(raised["result"]["status"], json!(200), "{raised}");
    let resumed = outcome(&mut watcher, &run, 200).await;
    assert_eq!(
        resumed["reason"],
        json!("turn_limit"),
        "the paused loop took its third and last turn: its turn count was kept"
    );
    assert_eq!(
        llm.requests().len(),
        4,
        "two turns, the paused loop's third, the new prompt's one"
    );
    assert_eq!(
        client.paths(&run, "prompt://*").await,
        ["prompt://1", "prompt://4"],
        "the paused loop's prompt is written once"
    );
    let stored = client.ok("getRun", json!({"run": run})).await;
    assert_eq!(stored["paused"], Value::Null, "no longer paused: {stored}");
}

/// The system message turn `N` saw is the run's latest `system://M` with `M ≤ N`, for a
/// paused turn taken up too (its first preparation recorded nothing).
#[actix_web::test]
async fn a_paused_turn_taken_up_saw_the_run_s_latest_system_copy_at_or_before_it() {
    let llm = FakeLlm::start([
        costing(
            "<known path=\"known://a\">Learned a.</known><update>learning</update>",
            0.0,
        ),
        done(0.0),
        done(0.0),
    ]);
    let app = TestApp::with_llm(&llm, &[]).await;
    app.server.fix_clock("2026-06-01 10:00:00");
    let (mut client, _) = app.client_in_project("shop").await;

    let paused = ask(&mut client, json!({"caps": {"day_tokens": 100}})).await;
    assert_eq!(paused["result"]["status"], json!(402), "{paused}");
    let run = paused["result"]["run"].as_str().unwrap().to_owned();
    let raised = ask(
        &mut client,
        json!({"run": run, "caps": {"day_tokens": 10000}}),
    )
    .await;
    assert_eq!(raised["result"]["status"], json!(200), "{raised}");

    let seen: Vec<String> = llm.requests().iter().map(system_message).collect();
    assert_eq!(
        seen.len(),
        3,
        "turn 1, the paused turn 2 taken up, the new prompt's turn 3"
    );
    assert_ne!(
        seen[1], seen[0],
        "turn 1 filed a fact the system message shows"
    );
    let copies = client.paths(&run, "system://*").await;
    assert_eq!(
        copies,
        ["system://1", "system://2", "system://3"],
        "the paused turn taken up saw turn 1's fact: its own copy, not turn 1's"
    );
}

#[actix_web::test]
async fn a_paused_loop_resumes_when_its_day_is_over_and_an_injection_waits_behind_it() {
    let llm = FakeLlm::start([learning("a"), learning("b"), done(0.0), done(0.0)]);
    let app = TestApp::with_llm(&llm, &[("RUMMY_CAP_DAY_TOKENS", "200")]).await;
    app.server.fix_clock("2026-06-01 23:00:00");
    let (mut client, _) = app.client_in_project("shop").await;

    let reply = ask(&mut client, json!({})).await;
    assert_eq!(reply["result"]["status"], json!(402), "{reply}");
    assert_eq!(reply["result"]["cap"]["scope"], json!("server"), "{reply}");
    let run = reply["result"]["run"].as_str().unwrap().to_owned();
    let injected = client
        .call("run/inject", json!({"run": run, "message": "Also this."}))
        .await;
    assert_eq!(
        injected["result"]["status"],
        json!(402),
        "answered paused at once, queued behind the paused loop: {injected}"
    );
    assert_eq!(llm.requests().len(), 2);

    app.server.fix_clock("2026-06-02 00:00:00");
    let resumed = client
        .until_notified("run/action", |acted| acted["action"] == "resume")
        .await;
    assert_eq!(
        resumed["params"]["by"],
        Value::Null,
        "the server resumed it"
    );
    outcome(&mut client, &run, 200).await;
    outcome(&mut client, &run, 200).await;
    assert_eq!(
        llm.requests().len(),
        4,
        "the paused loop's last turn, then the injected message's"
    );
    let stored = client.ok("getRun", json!({"run": run})).await;
    assert_eq!(stored["status"], json!(200));
}

#[actix_web::test]
async fn run_resume_is_an_admin_s_and_leaves_a_loop_paused_while_its_cap_stands_which_raising_it_resumes(
) {
    let llm = FakeLlm::start([learning("a"), learning("b"), done(0.0)]);
    let dir = tempfile::tempdir().unwrap();
    let users = team(dir.path(), "{ day_tokens = 200 }");
    let app = TestApp::with_llm(&llm, &[("RUMMY_USERS_FILE", users.as_str())]).await;
    app.server.fix_clock("2026-06-01 10:00:00");
    let mut mo = member(&app, "mo", "web").await;
    let mut ada = member(&app, "ada", "web").await;

    let reply = ask(&mut mo, json!({})).await;
    assert_eq!(reply["result"]["status"], json!(402), "{reply}");
    let run = reply["result"]["run"].as_str().unwrap().to_owned();
    let (code, _) = mo.err("run/resume", json!({"run": run})).await;
    assert_eq!(code, -32005, "a member may not resume");
    let still = ada.call("run/resume", json!({"run": run})).await;
    assert_eq!(still["error"]["code"], json!(-32011), "{still}");
    assert_eq!(still["error"]["data"]["scope"], json!("person"), "{still}");
    let stored = ada.ok("getRun", json!({"run": run})).await;
    assert_eq!(stored["status"], json!(402), "still paused");

    ada.ok(
        "caps/set",
        json!({"scope": "person", "subject": "mo", "caps": {"day_tokens": 100000}}),
    )
    .await;
    let acted = mo
        .until_notified("run/action", |acted| acted["action"] == "resume")
        .await;
    assert_eq!(acted["params"]["by"], json!("ada"), "who raised the cap");
    outcome(&mut mo, &run, 200).await;
    assert_eq!(llm.requests().len(), 3);
    let (code, message) = ada.err("run/resume", json!({"run": run})).await;
    assert_eq!(code, -32602);
    assert!(message.contains("is not paused"), "{message}");
}

#[actix_web::test]
async fn a_paused_loop_resumes_when_the_users_file_raises_its_person_s_cap() {
    let llm = FakeLlm::start([learning("a"), learning("b"), done(0.0)]);
    let dir = tempfile::tempdir().unwrap();
    let users = team(dir.path(), "{ day_tokens = 200 }");
    let app = TestApp::with_llm(&llm, &[("RUMMY_USERS_FILE", users.as_str())]).await;
    app.server.fix_clock("2026-06-01 10:00:00");
    let mut mo = member(&app, "mo", "web").await;
    let reply = ask(&mut mo, json!({})).await;
    assert_eq!(reply["result"]["status"], json!(402), "{reply}");
    let run = reply["result"]["run"].as_str().unwrap().to_owned();

    team(dir.path(), "{ day_tokens = 100000 }");
    outcome(&mut mo, &run, 200).await;
    assert_eq!(llm.requests().len(), 3);
}

#[actix_web::test]
async fn an_aborted_paused_run_ends_499_with_what_was_queued_behind_it_and_never_revives() {
    let llm = FakeLlm::start([learning("a"), learning("b"), done(0.0)]);
    let app = TestApp::with_llm(&llm, &[("RUMMY_CAP_DAY_TOKENS", "200")]).await;
    app.server.fix_clock("2026-06-01 10:00:00");
    let (mut client, _) = app.client_in_project("shop").await;
    let reply = ask(&mut client, json!({})).await;
    assert_eq!(reply["result"]["status"], json!(402), "{reply}");
    let run = reply["result"]["run"].as_str().unwrap().to_owned();
    let injected = client
        .call("run/inject", json!({"run": run, "message": "Also this."}))
        .await;
    assert_eq!(injected["result"]["status"], json!(402), "{injected}");

    client.ok("run/abort", json!({"run": run})).await;
    let stored = client.ok("getRun", json!({"run": run})).await;
    assert_eq!(stored["status"], json!(499));
    let (code, _) = client.err("run/resume", json!({"run": run})).await;
    assert_eq!(code, -32602, "nothing left to resume");
    app.server.fix_clock("2026-06-02 00:00:00");
    let other = ask(&mut client, json!({})).await;
    assert_eq!(other["result"]["status"], json!(200), "{other}");
    let stored = client.ok("getRun", json!({"run": run})).await;
    assert_eq!(
        stored["status"],
        json!(499),
        "the day over, it stays aborted"
    );
    let (pending, paused) = app
        .read(move |conn| {
            let id = crate::stored::run_named(conn, &run).unwrap().id;
            let pending = crate::stored::pending_loops(conn, id);
            let paused = crate::stored::number(
                conn,
                &format!(
                    "SELECT CAST(COUNT(*) AS BIGINT) AS n FROM paused_loops WHERE run_id = {id}"
                ),
            );
            (pending, paused)
        })
        .await;
    assert_eq!(
        (pending, paused),
        (0, Some(0)),
        "the paused loop and the injected one dropped, nothing left paused"
    );
    assert_eq!(llm.requests().len(), 3, "the other run's call only");
}

/// An instance on PostgreSQL `database`, lease 3 s, in `home`.
async fn instance(
    home: &std::path::Path,
    llm: &FakeLlm,
    database: &ScratchDatabase,
    extra: &[(&str, &str)],
) -> ServerProcess {
    let mut env = vec![
        ("RUMMY_DATABASE_URL", database.url()),
        ("RUMMY_LEASE_TTL_SECS", "3"),
    ];
    env.extend_from_slice(extra);
    ServerProcess::start_with(home, llm, &env).await
}

#[actix_web::test]
#[ignore = "needs PostgreSQL: RUMMY_TEST_DATABASE_URL"]
async fn a_cap_raised_on_one_instance_resumes_a_loop_paused_on_another() {
    let database = ScratchDatabase::required();
    let llm = FakeLlm::start([learning("a"), learning("b"), done(0.0), done(0.0)]);
    let home = tempfile::tempdir().unwrap();
    let root = crate::support::project_root(home.path());
    let first = instance(home.path(), &llm, &database, &[]).await;
    let second = instance(home.path(), &llm, &database, &[]).await;
    let mut on_second = second.client().await;
    on_second.init("shared", &root).await;
    let mut on_first = first.client().await;
    on_first.init("shared", &root).await;

    let reply = ask(&mut on_second, json!({"caps": {"day_tokens": 200}})).await;
    assert_eq!(reply["result"]["status"], json!(402), "{reply}");
    let run = reply["result"]["run"].as_str().unwrap().to_owned();
    let raised = ask(
        &mut on_first,
        json!({"run": run, "caps": {"day_tokens": 10000}}),
    )
    .await;
    assert_eq!(raised["result"]["status"], json!(200), "{raised}");
    outcome(&mut on_second, &run, 200).await;
    assert_eq!(llm.requests().len(), 4);
}

#[actix_web::test]
#[ignore = "needs PostgreSQL: RUMMY_TEST_DATABASE_URL"]
async fn a_loop_paused_on_a_killed_instance_is_resumed_by_a_live_one_when_its_day_is_over() {
    let database = ScratchDatabase::required();
    let llm = FakeLlm::start([learning("a"), learning("b"), done(0.0)]);
    let home = tempfile::tempdir().unwrap();
    let root = crate::support::project_root(home.path());
    let doomed = instance(home.path(), &llm, &database, &[]).await;
    let mut client = doomed.client().await;
    client.init("shared", &root).await;
    let reply = ask(&mut client, json!({"caps": {"day_tokens": 200}})).await;
    assert_eq!(reply["result"]["status"], json!(402), "{reply}");
    let run = reply["result"]["run"].as_str().unwrap().to_owned();
    doomed.stop_with("-9");

    let env = [
        ("RUMMY_DATABASE_URL", database.url()),
        ("RUMMY_LEASE_TTL_SECS", "3"),
    ];
    let mut env_with_llm = crate::support::llm_env(&llm);
    env_with_llm.extend_from_slice(&env);
    let live = TestApp::start_with(&env_with_llm).await;
    let mut watcher = live.client().await;
    watcher.init("shared", &root).await;
    let stored = watcher.ok("getRun", json!({"run": run})).await;
    assert_eq!(
        stored["status"],
        json!(402),
        "a dead instance's paused loop stays paused"
    );
    live.server.fix_clock("2099-01-01 00:00:00");
    outcome(&mut watcher, &run, 200).await;
    assert_eq!(llm.requests().len(), 3);
    eventually("the run completed", async || {
        let stored = watcher.ok("getRun", json!({"run": run})).await;
        (stored["status"] == 200).then_some(())
    })
    .await;
}
