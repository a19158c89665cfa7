//! The RPC audit log as an operator meets it: each call's facts (duration, status, sizes, the
//! run it names) and, in `full` mode only, its texts; and a table that stays within
//! `RUMMY_RPC_LOG_MAX_ROWS` while a client hammers the server.

use diesel::sql_types::{BigInt, Nullable, Text};
use diesel::QueryableByName;
use rummy::testing::Conn;
use serde_json::json;

use crate::support::{eventually, TestApp};

/// A stored row, in the table's column order.
#[derive(Debug, Clone, PartialEq, QueryableByName)]
pub(crate) struct Logged {
    #[diesel(sql_type = Text)]
    pub(crate) method: String,
    #[diesel(sql_type = Nullable<Text>)]
    pub(crate) rpc_id: Option<String>,
    #[diesel(sql_type = Nullable<Text>)]
    pub(crate) params: Option<String>,
    #[diesel(sql_type = Nullable<Text>)]
    pub(crate) result: Option<String>,
    #[diesel(sql_type = Nullable<Text>)]
    pub(crate) error: Option<String>,
    #[diesel(sql_type = Nullable<BigInt>)]
    pub(crate) duration_ms: Option<i64>,
    #[diesel(sql_type = Nullable<BigInt>)]
    pub(crate) status: Option<i64>,
    #[diesel(sql_type = Nullable<BigInt>)]
    pub(crate) params_bytes: Option<i64>,
    #[diesel(sql_type = Nullable<BigInt>)]
    pub(crate) result_bytes: Option<i64>,
    #[diesel(sql_type = Nullable<Text>)]
    pub(crate) run: Option<String>,
    #[diesel(sql_type = Nullable<Text>)]
    pub(crate) person: Option<String>,
}

/// Every row of the audit log, oldest first.
pub(crate) fn load(conn: &mut Conn) -> Vec<Logged> {
    crate::stored::rows(
        conn,
        "SELECT method, rpc_id, params, result, error, duration_ms, status, params_bytes, \
         result_bytes, run, person FROM rpc_log ORDER BY id",
    )
}

/// The rows the running server has committed.
pub(crate) async fn committed(app: &TestApp) -> Vec<Logged> {
    app.read(load).await
}

/// Runs a successful and a failed call under `RUMMY_RPC_LOG=mode`, stops the server
/// cleanly (which writes the rows still gathered) and returns what the table holds.
async fn two_calls_logged(mode: &str) -> Vec<Logged> {
    let app = TestApp::start_with(&[("RUMMY_RPC_LOG", mode)]).await;
    let database = app.database();
    let mut client = app.client().await;
    client.ok("ping", json!({"secret": "hunter2"})).await;
    let (code, _) = client.err("getRun", json!({"run": "ghost_1"})).await;
    assert_eq!(code, -32001);
    let TestApp {
        server,
        home,
        database: scratch,
        ..
    } = app;
    server.stop().await;
    let mut conn = database.connect().unwrap();
    let rows = load(&mut conn);
    drop(conn);
    drop((home, scratch));
    rows
}

/// The facts both calls leave whatever the mode, with no text; their durations are checked
/// to be there and then set aside.
fn facts(rows: &[Logged]) -> Vec<Logged> {
    rows.iter()
        .map(|row| {
            assert!(row.duration_ms.is_some_and(|ms| ms >= 0), "{row:?}");
            Logged {
                rpc_id: None,
                params: None,
                result: None,
                error: None,
                duration_ms: None,
                ..row.clone()
            }
        })
        .collect()
}

fn expected_facts() -> Vec<Logged> {
    let ping = Logged {
        method: "ping".into(),
        rpc_id: None,
        params: None,
        result: None,
        error: None,
        duration_ms: None,
        status: None,
        params_bytes: Some(r#"{"secret":"hunter2"}"#.len() as i64),
        result_bytes: Some(2),
        run: None,
        person: None,
    };
    let get_run = Logged {
        method: "getRun".into(),
        status: Some(-32001),
        params_bytes: Some(r#"{"run":"ghost_1"}"#.len() as i64),
        result_bytes: None,
        run: Some("ghost_1".into()),
        ..ping.clone()
    };
    vec![ping, get_run]
}

#[actix_web::test]
async fn a_full_log_keeps_each_calls_facts_and_texts() {
    let rows = two_calls_logged("full").await;
    assert_eq!(facts(&rows), expected_facts());
    let texts: Vec<_> = rows
        .into_iter()
        .map(|row| (row.rpc_id, row.params, row.result, row.error))
        .collect();
    assert_eq!(
        texts,
        [
            (
                Some("1".into()),
                Some(r#"{"secret":"hunter2"}"#.into()),
                Some("{}".into()),
                None
            ),
            (
                Some("2".into()),
                Some(r#"{"run":"ghost_1"}"#.into()),
                None,
                Some("Project not initialized.".into())
            ),
        ]
    );
}

#[actix_web::test]
async fn a_meta_log_keeps_the_facts_and_no_text() {
    let rows = two_calls_logged("meta").await;
    assert_eq!(facts(&rows), expected_facts());
    for row in rows {
        assert_eq!(
            (row.rpc_id, row.params, row.result, row.error),
            (None, None, None, None),
            "no request id, params, result or error"
        );
    }
}

#[actix_web::test]
async fn an_off_log_writes_nothing() {
    assert_eq!(two_calls_logged("off").await, []);
}

/// Calls the hammering client makes.
const CALLS: usize = 600;
/// The row bound it runs under, far below them.
const MAX_ROWS: usize = 50;
/// The text bound, below the padding of its larger calls.
const MAX_CHARS: usize = 100;

#[actix_web::test]
async fn the_log_stays_within_its_row_bound_while_a_client_hammers_the_server() {
    let max_rows = MAX_ROWS.to_string();
    let max_chars = MAX_CHARS.to_string();
    let app = TestApp::start_with(&[
        ("RUMMY_RPC_LOG_MAX_ROWS", max_rows.as_str()),
        ("RUMMY_RPC_LOG_MAX_CHARS", max_chars.as_str()),
    ])
    .await;
    let mut client = app.client().await;
    let mut most = 0;
    for call in 1..=CALLS {
        let padding = if call % 10 == 0 { 20_000 } else { 1 };
        client
            .ok("ping", json!({ "padding": "x".repeat(padding) }))
            .await;
        if call % 50 == 0 {
            most = most.max(committed(&app).await.len());
        }
    }
    let last = CALLS.to_string();
    let rows = eventually("the last call's audit row", async || {
        let rows = committed(&app).await;
        let logged = rows.iter().any(|row| row.rpc_id.as_deref() == Some(&last));
        logged.then_some(rows)
    })
    .await;
    assert!(most <= MAX_ROWS, "{most} rows while the client ran");
    let ids: Vec<_> = rows.iter().filter_map(|row| row.rpc_id.clone()).collect();
    let newest: Vec<_> = (CALLS - MAX_ROWS + 1..=CALLS)
        .map(|id| id.to_string())
        .collect();
    assert_eq!(ids, newest, "the newest calls stay");
    let longest = rows
        .iter()
        .filter_map(|row| row.params.as_ref().map(|params| params.chars().count()))
        .max();
    assert_eq!(longest, Some(MAX_CHARS));
    assert!(
        rows.iter().any(|row| row.params_bytes > Some(20_000)),
        "sizes are those before the cut"
    );
}

#[actix_web::test]
async fn the_start_prunes_the_log_to_its_bounds() {
    let mut app = TestApp::start().await;
    let mut client = app.client().await;
    for _ in 0..5 {
        client.ok("ping", json!({})).await;
    }
    drop(client);
    app.env
        .insert("RUMMY_RPC_LOG_MAX_ROWS".to_string(), "2".to_string());
    let app = app.restart().await;
    let ids: Vec<_> = committed(&app)
        .await
        .into_iter()
        .map(|row| row.rpc_id)
        .collect();
    assert_eq!(ids, [Some("4".to_string()), Some("5".to_string())]);
}
