//! `run/state` carried from turn to turn tells what a whole read of the store tells: its
//! history, unknowns, proposals and summary at each stop of a run of several loops, through
//! a fact rewritten, a proposal resolved by another client, entries removed, an unknown
//! answered and a restart of the server.

use diesel::sql_types::{BigInt, Text};
use diesel::QueryableByName;
use serde_json::{json, Value};

use crate::stored::{literal, rows};
use crate::support::{Client, TestApp};
use rummy::testing::fake_llm::{FakeLlm, Step};
use rummy::testing::Conn;

#[derive(QueryableByName)]
struct LogRow {
    #[diesel(sql_type = Text)]
    tool: String,
    #[diesel(sql_type = Text)]
    target: String,
    #[diesel(sql_type = BigInt)]
    status: i64,
    #[diesel(sql_type = Text)]
    path: String,
    #[diesel(sql_type = Text)]
    body: String,
}

#[derive(QueryableByName)]
struct PathBody {
    #[diesel(sql_type = Text)]
    path: String,
    #[diesel(sql_type = Text)]
    body: String,
}

/// What a whole read of run `alias`'s entries tells: the log view, the `unknown` entries,
/// the pending proposals' paths and the latest summary that went well.
fn whole(conn: &mut Conn, alias: &str) -> Value {
    let run = format!("(SELECT id FROM runs WHERE alias = {})", literal(alias));
    let history: Vec<Value> = rows::<LogRow>(
        conn,
        &format!(
            "SELECT tool, target, CAST(status AS BIGINT) AS status, path, body \
             FROM v_run_log WHERE run_id = {run} ORDER BY id"
        ),
    )
    .into_iter()
    .map(|row| {
        json!({"tool": row.tool, "target": row.target, "status": row.status,
               "path": row.path, "body": row.body})
    })
    .collect();
    let of = |conn: &mut Conn, condition: &str| -> Vec<PathBody> {
        rows(
            conn,
            &format!(
                "SELECT path, body FROM known_entries WHERE run_id = {run} AND {condition} \
                 ORDER BY id"
            ),
        )
    };
    let unknowns: Vec<Value> = of(conn, "scheme = 'unknown'")
        .into_iter()
        .map(|row| json!({"path": row.path, "body": row.body}))
        .collect();
    let proposed: Vec<Value> = of(conn, "status = 202")
        .into_iter()
        .map(|row| json!(row.path))
        .collect();
    let summary = of(conn, "scheme = 'summarize' AND status = 200")
        .pop()
        .map_or(String::new(), |row| row.body);
    json!({"history": history, "unknowns": unknowns, "proposed": proposed, "summary": summary})
}

/// The parts of a `run/state` a whole read gives.
fn told(state: &Value) -> Value {
    let proposed: Vec<Value> = state["proposed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|row| row["path"].clone())
        .collect();
    json!({"history": state["history"], "unknowns": state["unknowns"],
           "proposed": proposed, "summary": state["summary"]})
}

/// Waits for the `run/state` of the run's latest turn and checks it against a whole read.
async fn check_latest_state(app: &TestApp, client: &mut Client, alias: &str) -> Value {
    let owned = alias.to_owned();
    let (expected, turn) = app
        .read(move |conn| {
            let turn = crate::stored::number(
                conn,
                &format!(
                    "SELECT CAST(MAX(sequence) AS BIGINT) AS n FROM turns WHERE run_id = \
                     (SELECT id FROM runs WHERE alias = {})",
                    literal(&owned)
                ),
            );
            (whole(conn, &owned), turn.unwrap())
        })
        .await;
    let state = client
        .until_notified("run/state", |state| state["turn"] == json!(turn))
        .await;
    assert_eq!(told(&state["params"]), expected, "turn {turn}");
    expected
}

fn steps() -> Vec<Step> {
    vec![
        Step::reply(
            "<known path=\"known://fact\">one</known><unknown>why is it so?</unknown>\
             <update>noting</update>",
        ),
        Step::reply("<known path=\"known://fact\">two</known><update>rewriting</update>"),
        Step::reply("<sh>echo hi</sh><update>asking to run</update>"),
        Step::reply(
            "<rm path=\"known://fact\"/><rm path=\"unknown://*\"/><update>removing</update>",
        ),
        Step::reply("<summarize>first done</summarize>"),
        Step::reply("<known path=\"known://again\">three</known><update>again</update>"),
        Step::reply("<summarize>second done</summarize>"),
    ]
}

/// Resolves each proposal of `outcome` from `other` until the loop ends, checking the
/// state told at each stop; the final outcome.
async fn settle(
    app: &TestApp,
    client: &mut Client,
    other: &mut Client,
    alias: &str,
    mut outcome: Value,
) -> Value {
    while outcome["status"] == json!(202) {
        let expected = check_latest_state(app, client, alias).await;
        assert!(!expected["proposed"].as_array().unwrap().is_empty());
        let path = outcome["proposed"][0]["path"].clone();
        outcome = other
            .ok(
                "run/resolve",
                json!({"run": alias, "resolution": {"path": path, "action": "accept",
                                                     "output": "hi\n"}}),
            )
            .await;
    }
    assert_eq!(outcome["status"], json!(200), "{outcome}");
    check_latest_state(app, client, alias).await;
    outcome
}

#[actix_web::test]
async fn every_stop_of_a_run_tells_what_a_whole_read_tells() {
    let llm = FakeLlm::start(steps());
    let app = TestApp::with_llm(&llm, &[]).await;
    let (mut client, root) = app.client_in_project("carry").await;
    let mut other = app.client().await;
    other.init("carry", &root).await;
    let outcome = client
        .ok(
            "act",
            json!({"model": "fake", "prompt": "note, run, clean up"}),
        )
        .await;
    let alias = outcome["run"].as_str().unwrap().to_owned();
    let ended = settle(&app, &mut client, &mut other, &alias, outcome).await;
    let history = ended["run"].clone();
    assert_eq!(history, json!(alias));
    let app = app.restart().await;
    let mut client = app.client().await;
    client.init("carry", &root).await;
    let mut other = app.client().await;
    other.init("carry", &root).await;
    let outcome = client
        .ok(
            "act",
            json!({"model": "fake", "run": alias, "prompt": "once more"}),
        )
        .await;
    settle(&app, &mut client, &mut other, &alias, outcome).await;
    let last = app.read(move |conn| whole(conn, &alias)).await;
    let paths: Vec<&str> = last["history"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|row| row["path"].as_str())
        .collect();
    assert!(paths.contains(&"known://again"), "{paths:?}");
    assert!(!paths.contains(&"known://fact"), "{paths:?}");
    assert!(
        paths.iter().any(|path| path.starts_with("sh://")),
        "{paths:?}"
    );
    assert_eq!(last["summary"], json!("second done"));
    assert_eq!(last["unknowns"], json!([]));
}
