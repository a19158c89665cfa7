//! The durable event log behind `run/replay`: a run's notifications are numbered and kept in
//! the store, so a replay after a restart delivers exactly what a client missed and the
//! numbering goes on above every seq given; a replay it cannot answer whole (a `since` from
//! before what is kept, or one the run never gave) says so, never a part with a gap; and
//! the log keeps within its bounds.

use serde_json::{json, Value};

use crate::support::{Client, TestApp};
use rummy::testing::fake_llm::{FakeLlm, Step};

/// A turn that learns something and goes on, then one that ends the loop.
pub(crate) fn two_turns() -> [Step; 2] {
    [
        Step::reply(
            "<known path=\"known://deploy\" summary=\"deploy\">staging</known>\
             <update>noting</update>",
        ),
        Step::reply("<summarize>done</summarize>"),
    ]
}

/// The next numbered notification `client` gets (without its `jsonrpc`): the run's log
/// numbers and keeps every notification of a run but `run/presence`, which these skip.
pub(crate) async fn next_numbered(client: &mut Client) -> Value {
    loop {
        let mut notification = client.next_notification().await;
        if notification["params"].get("seq").is_some() {
            notification.as_object_mut().unwrap().remove("jsonrpc");
            return notification;
        }
    }
}

/// The notifications `client` receives, as `{method, params}`, up to the first one `last`
/// says is the last.
pub(crate) async fn received_until(
    client: &mut Client,
    last: impl Fn(&Value) -> bool,
) -> Vec<Value> {
    let mut received = Vec::new();
    loop {
        let notification = next_numbered(client).await;
        let done = last(&notification);
        received.push(notification);
        if done {
            return received;
        }
    }
}

pub(crate) fn seq(notification: &Value) -> u64 {
    notification["params"]["seq"].as_u64().unwrap()
}

pub(crate) async fn replayed(client: &mut Client, run: &str, since: u64) -> Vec<Value> {
    let result = client
        .ok("run/replay", json!({"run": run, "since": since}))
        .await;
    result["notifications"].as_array().unwrap().clone()
}

/// The error `run/replay` from `since` answers: code, message and data.
pub(crate) async fn refused(client: &mut Client, run: &str, since: Value) -> (i64, String, Value) {
    let reply = client
        .call("run/replay", json!({"run": run, "since": since}))
        .await;
    let error = &reply["error"];
    assert!(error.is_object(), "{reply}");
    (
        error["code"].as_i64().unwrap(),
        error["message"].as_str().unwrap().to_owned(),
        error["data"].clone(),
    )
}

/// Whether `notification` tells a loop's end (`run/outcome`).
pub(crate) fn is_outcome(notification: &Value) -> bool {
    notification["method"] == "run/outcome"
}

/// An `ask` of `prompt` on `client` (on `run`, when given) that must end 200; its run and
/// the notifications up to the loop's `run/outcome`.
async fn asked(client: &mut Client, prompt: &str, run: Option<&str>) -> (String, Vec<Value>) {
    let mut params = json!({"model": "fake", "prompt": prompt});
    if let Some(run) = run {
        params["run"] = json!(run);
    }
    let outcome = client.ok("ask", params).await;
    assert_eq!(outcome["status"], json!(200), "{outcome}");
    let run = outcome["run"].as_str().unwrap().to_owned();
    (run, received_until(client, is_outcome).await)
}

#[actix_web::test]
async fn a_replay_after_a_restart_delivers_what_was_missed_and_numbering_goes_on_above_it() {
    let llm = FakeLlm::start(
        two_turns()
            .into_iter()
            .chain([Step::reply("<summarize>again</summarize>")]),
    );
    let app = TestApp::with_llm(&llm, &[]).await;
    let (mut client, root) = app.client_in_project("durable").await;
    let (run, sent) = asked(&mut client, "go", None).await;
    assert_eq!(
        sent.len(),
        7,
        "thinking, processing, state, twice, then the loop's outcome: {sent:?}"
    );

    let app = app.restart().await;
    let mut back = app.client().await;
    back.init("durable", &root).await;
    assert_eq!(
        replayed(&mut back, &run, 0).await,
        sent,
        "all of it, as sent"
    );
    assert_eq!(replayed(&mut back, &run, seq(&sent[1])).await, sent[2..]);
    assert_eq!(
        replayed(&mut back, &run, seq(&sent[6])).await,
        [] as [Value; 0]
    );

    let (_, later) = asked(&mut back, "again", Some(&run)).await;
    let seqs: Vec<u64> = later.iter().map(seq).collect();
    assert_eq!(
        later[0]["method"], "run/action",
        "the run prompted again: {later:?}"
    );
    let expected: Vec<u64> = (1..=5).map(|n| seq(&sent[6]) + n).collect();
    assert_eq!(
        seqs, expected,
        "one more than the latest before the restart"
    );
    assert_eq!(replayed(&mut back, &run, seq(&sent[6])).await, later);
}

#[actix_web::test]
async fn a_since_the_run_never_gave_or_no_longer_kept_is_refused_with_its_latest_seq() {
    let llm = FakeLlm::start(two_turns());
    let app = TestApp::with_llm(&llm, &[("RUMMY_REPLAY_PER_RUN", "4")]).await;
    let (mut client, _) = app.client_in_project("refused").await;
    let (run, sent) = asked(&mut client, "go", None).await;
    let latest = seq(&sent[6]);

    let (code, message, data) = refused(&mut client, &run, json!(latest + 1)).await;
    assert_eq!(code, -32602);
    assert_eq!(
        message,
        format!(
            "since {} is ahead of run '{run}', whose latest seq is {latest}",
            latest + 1
        )
    );
    assert_eq!(data, Value::Null);

    let resync = json!({"resync": true, "latest": latest});
    for since in [0, 5, seq(&sent[0]) - 1, seq(&sent[0])] {
        let (code, message, data) = refused(&mut client, &run, json!(since)).await;
        assert_eq!(
            (code, data),
            (-32009, resync.clone()),
            "since {since}: {message}"
        );
        assert_eq!(
            message,
            format!(
                "Notifications of run '{run}' since seq {since} are no longer kept; call getRun."
            )
        );
    }
    assert_eq!(
        replayed(&mut client, &run, seq(&sent[2])).await,
        sent[3..],
        "the four kept"
    );
    let resynced = client.ok("getRun", json!({"run": run})).await;
    assert_eq!(
        resynced["seq"],
        json!(latest),
        "getRun says where to follow from"
    );
    for since in [json!(-1), json!("7"), json!(1.5)] {
        let (code, _, _) = refused(&mut client, &run, since.clone()).await;
        assert_eq!(code, -32602, "since {since}");
    }
}

#[actix_web::test]
async fn a_run_keeps_no_more_bytes_of_notifications_than_its_bound() {
    let llm = FakeLlm::start(two_turns());
    // Pruned at each frame (an eighth of 8), to one byte: no frame is kept.
    let env = [
        ("RUMMY_REPLAY_PER_RUN", "8"),
        ("RUMMY_REPLAY_RUN_BYTES", "1"),
    ];
    let app = TestApp::with_llm(&llm, &env).await;
    let (mut client, _) = app.client_in_project("bytes").await;
    let (run, sent) = asked(&mut client, "go", None).await;
    let latest = seq(&sent[6]);
    let (code, _, data) = refused(&mut client, &run, json!(seq(&sent[5]))).await;
    assert_eq!(
        (code, data),
        (-32009, json!({"resync": true, "latest": latest}))
    );
    assert_eq!(replayed(&mut client, &run, latest).await, [] as [Value; 0]);
}

/// Makes every notification `app`'s store keeps older by `age_ms`, with the test's own SQL.
fn age_notifications(app: &TestApp, age_ms: i64) {
    use diesel::RunQueryDsl;
    let mut conn = app.database().connect().unwrap();
    diesel::sql_query(format!(
        "UPDATE run_events SET created_ms = created_ms - {age_ms}"
    ))
    .execute(&mut conn)
    .unwrap();
}

#[actix_web::test]
async fn a_start_drops_the_notifications_older_than_the_keep_and_numbering_goes_on() {
    let llm = FakeLlm::start(
        two_turns()
            .into_iter()
            .chain([Step::reply("<summarize>again</summarize>")]),
    );
    let app = TestApp::with_llm(&llm, &[("RUMMY_REPLAY_KEEP_SECS", "3600")]).await;
    let (mut client, root) = app.client_in_project("kept").await;
    let (run, sent) = asked(&mut client, "go", None).await;
    age_notifications(&app, 3_000_000);
    let app = app.restart().await;
    let mut back = app.client().await;
    back.init("kept", &root).await;
    assert_eq!(
        replayed(&mut back, &run, 0).await,
        sent,
        "not an hour old yet"
    );

    age_notifications(&app, 1_000_000);
    let app = app.restart().await;
    let mut back = app.client().await;
    back.init("kept", &root).await;
    let latest = seq(&sent[6]);
    let (code, _, data) = refused(&mut back, &run, json!(0)).await;
    assert_eq!(
        (code, data),
        (-32009, json!({"resync": true, "latest": latest}))
    );
    let (_, later) = asked(&mut back, "again", Some(&run)).await;
    assert_eq!(seq(&later[0]), latest + 1, "numbered on, never again");
}

#[actix_web::test]
async fn a_start_keeps_no_more_notifications_than_the_servers_bytes() {
    let llm = FakeLlm::start(two_turns());
    let app = TestApp::with_llm(&llm, &[("RUMMY_REPLAY_SERVER_BYTES", "1")]).await;
    let (mut client, root) = app.client_in_project("server-bytes").await;
    let (run, sent) = asked(&mut client, "go", None).await;
    assert_eq!(
        replayed(&mut client, &run, 0).await,
        sent,
        "pruned every 1024 frames"
    );
    let app = app.restart().await;
    let mut back = app.client().await;
    back.init("server-bytes", &root).await;
    let (code, _, _) = refused(&mut back, &run, json!(seq(&sent[4]))).await;
    assert_eq!(code, -32009, "pruned at start");
}
