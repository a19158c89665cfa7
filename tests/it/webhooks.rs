//! Webhooks through the public protocol, to a real HTTP receiver on loopback started by the
//! test: each event (a run finished, failed, waiting for approval; a cap's warning and its
//! reach) arrives once, signed (the test checks the HMAC itself), with its payload in JSON
//! and in Slack's format; a receiver answering 500 gets the retry and the delivery log shows
//! both attempts; a receiver that never answers slows no run; a restart delivers what was
//! pending, with the same delivery id; two instances on one PostgreSQL database deliver each
//! delivery once; bad input gets clear JSON-RPC errors.

use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hmac::{Hmac, Mac};
use rummy::hash_token;
use rummy::testing::fake_llm::{FakeLlm, Step};
use rummy::testing::ScratchDatabase;
use serde_json::{json, Value};
use sha2::Sha256;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::mpsc;

use crate::process::ServerProcess;
use crate::support::{eventually, learning_100_tokens, project_root, Client, TestApp};

/// How long a test waits for the receiver's next request.
const RECEIVE_WAIT: Duration = Duration::from_secs(60);

/// The secret the tests' webhooks sign with.
const SECRET: &str = "a-test-secret-of-some-length";

/// A reply that proposes a command (the run then waits for approval).
const PROPOSING: &str = "<sh>make deploy</sh><update>deploying</update>";

/// What the receiver answers a request.
#[derive(Debug, Clone, Copy)]
enum Answer {
    Status(u16),
    /// Hold the request, never answering.
    Hang,
}

/// One request the receiver got.
#[derive(Debug, Clone)]
struct Received {
    path: String,
    headers: HashMap<String, String>,
    body: Vec<u8>,
}

impl Received {
    fn header(&self, name: &str) -> &str {
        self.headers.get(name).map_or("", String::as_str)
    }

    /// The body, once its signature is checked against `secret` as a receiver would.
    fn verified(&self, secret: &str) -> Value {
        let signature = self.header("x-rummy-signature");
        let mut timestamp = None;
        let mut v1 = None;
        for part in signature.split(',') {
            match part.split_once('=') {
                Some(("t", value)) => timestamp = Some(value.to_owned()),
                Some(("v1", value)) => v1 = Some(value.to_owned()),
                _ => {}
            }
        }
        let (timestamp, v1) = (timestamp.unwrap(), v1.unwrap());
        let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).unwrap();
        mac.update(timestamp.as_bytes());
        mac.update(b".");
        mac.update(&self.body);
        let expected: String = mac
            .finalize()
            .into_bytes()
            .iter()
            .map(|byte| format!("{byte:02x}"))
            .collect();
        assert_eq!(v1, expected, "the signature of {}", self.path);
        let sent: i64 = timestamp.parse().unwrap();
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs() as i64;
        assert!((now - sent).abs() < 300, "signed at {sent}, now {now}");
        serde_json::from_slice(&self.body).unwrap()
    }
}

/// An HTTP/1.1 receiver on loopback: it hands each request to the test and answers as
/// scripted (200 once the script is spent).
struct Receiver {
    addr: SocketAddr,
    received: mpsc::UnboundedReceiver<Received>,
}

impl Receiver {
    async fn start(script: impl IntoIterator<Item = Answer>) -> Receiver {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let script = Arc::new(Mutex::new(script.into_iter().collect::<VecDeque<_>>()));
        let (sender, received) = mpsc::unbounded_channel();
        actix_web::rt::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    return;
                };
                let sender = sender.clone();
                let script = Arc::clone(&script);
                actix_web::rt::spawn(serve(stream, sender, script));
            }
        });
        Receiver { addr, received }
    }

    fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    async fn next(&mut self) -> Received {
        tokio::time::timeout(RECEIVE_WAIT, self.received.recv())
            .await
            .expect("the receiver got no request")
            .unwrap()
    }
}

/// Reads one request from `stream`, hands it over, answers it as the script says.
async fn serve(
    mut stream: tokio::net::TcpStream,
    sender: mpsc::UnboundedSender<Received>,
    script: Arc<Mutex<VecDeque<Answer>>>,
) {
    let mut bytes = Vec::new();
    let mut buffer = [0_u8; 4096];
    let head_end = loop {
        if let Some(end) = bytes.windows(4).position(|window| window == b"\r\n\r\n") {
            break end + 4;
        }
        match stream.read(&mut buffer).await {
            Ok(0) | Err(_) => return,
            Ok(read) => bytes.extend_from_slice(&buffer[..read]),
        }
    };
    let head = String::from_utf8_lossy(&bytes[..head_end]).to_string();
    let mut lines = head.lines();
    let path = lines
        .next()
        .and_then(|line| line.split(' ').nth(1))
        .unwrap_or_default()
        .to_owned();
    let headers: HashMap<String, String> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(name, value)| (name.trim().to_ascii_lowercase(), value.trim().to_owned()))
        .collect();
    let length: usize = headers
        .get("content-length")
        .and_then(|length| length.parse().ok())
        .unwrap_or(0);
    while bytes.len() < head_end + length {
        match stream.read(&mut buffer).await {
            Ok(0) | Err(_) => return,
            Ok(read) => bytes.extend_from_slice(&buffer[..read]),
        }
    }
    let body = bytes[head_end..head_end + length].to_vec();
    let answer = script
        .lock()
        .unwrap()
        .pop_front()
        .unwrap_or(Answer::Status(200));
    let _ = sender.send(Received {
        path,
        headers,
        body,
    });
    match answer {
        Answer::Status(status) => {
            let response = format!(
                "HTTP/1.1 {status} Scripted\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
            );
            let _ = stream.write_all(response.as_bytes()).await;
        }
        Answer::Hang => {
            let _held = stream;
            std::future::pending::<()>().await;
        }
    }
}

/// Fast retries and polls, so no test waits on the defaults' seconds.
const FAST: &[(&str, &str)] = &[
    ("RUMMY_WEBHOOK_RETRY_MS", "10"),
    ("RUMMY_WEBHOOK_RETRY_MAX_MS", "20"),
    ("RUMMY_WEBHOOK_POLL_MS", "20"),
];

/// Adds a webhook sent `events` to `url`, in `format`; its id.
async fn add_hook(client: &mut Client, url: &str, events: &[&str], format: &str) -> String {
    let added = client
        .ok(
            "webhooks/add",
            json!({"url": url, "events": events, "format": format, "secret": SECRET}),
        )
        .await;
    assert_eq!(added["secret"], json!(SECRET), "{added}");
    added["id"].as_str().unwrap().to_owned()
}

/// The delivery log of webhook `id`, once `done` holds of it.
async fn log_when(client: &mut Client, id: &str, done: impl Fn(&Value) -> bool) -> Value {
    eventually("the delivery log", async || {
        let log = client.ok("webhooks/deliveries", json!({"id": id})).await;
        done(&log).then_some(log)
    })
    .await
}

/// Every delivery of `log` delivered.
fn all_delivered(log: &Value, count: usize) -> bool {
    let deliveries = log["deliveries"].as_array().unwrap();
    deliveries.len() == count
        && deliveries
            .iter()
            .all(|delivery| delivery["state"] == "delivered")
}

fn ask_params(prompt: &str) -> Value {
    json!({"model": "fake", "prompt": prompt})
}

// Each learning turn reports 100 tokens: a cap of 500 then warns after four, stops after five.

#[actix_web::test]
async fn each_event_arrives_once_signed_with_its_payload_in_json_and_slack() {
    let llm = FakeLlm::start([
        Step::reply("<summarize>Done.</summarize>"),
        Step::reply(PROPOSING),
        Step::Error {
            status: 400,
            retry_after: None,
        },
        learning_100_tokens("a"),
        learning_100_tokens("b"),
        learning_100_tokens("c"),
        learning_100_tokens("d"),
        learning_100_tokens("e"),
    ]);
    let mut receiver = Receiver::start([]).await;
    let mut env = FAST.to_vec();
    env.push(("RUMMY_PUBLIC_URL", "https://rummy.example.com"));
    let app = TestApp::with_llm(&llm, &env).await;
    app.server.fix_clock("2026-06-01 10:00:00");
    let (mut client, _) = app.client_in_project("shop").await;
    let every = [
        "approval.pending",
        "run.finished",
        "run.failed",
        "cap.warning",
        "cap.reached",
    ];
    let hook = add_hook(&mut client, &receiver.url("/json"), &every, "json").await;
    add_hook(
        &mut client,
        &receiver.url("/slack"),
        &["run.finished"],
        "slack",
    )
    .await;

    let finished = client.ok("ask", ask_params("Say done.")).await;
    let finished_run = finished["run"].as_str().unwrap().to_owned();
    let proposed = client.ok("act", ask_params("Deploy it.")).await;
    assert_eq!(proposed["status"], json!(202), "{proposed}");
    let proposed_run = proposed["run"].as_str().unwrap().to_owned();
    let failed = client.ok("ask", ask_params("Fail.")).await;
    assert_eq!(failed["status"], json!(500), "{failed}");
    let failed_run = failed["run"].as_str().unwrap().to_owned();
    let mut capped = ask_params("Learn.");
    capped["caps"] = json!({"day_tokens": 500});
    let capped = client.ok("ask", capped).await;
    assert_eq!(capped["status"], json!(402), "{capped}");
    let capped_run = capped["run"].as_str().unwrap().to_owned();

    let mut json_bodies = HashMap::new();
    let mut slack = Vec::new();
    while json_bodies.len() + slack.len() < 6 {
        let request = receiver.next().await;
        let body = request.verified(SECRET);
        assert_eq!(request.header("content-type"), "application/json");
        match request.path.as_str() {
            "/json" => {
                assert_eq!(request.header("x-rummy-event"), body["event"]);
                assert_eq!(request.header("x-rummy-delivery"), body["id"]);
                let event = body["event"].as_str().unwrap().to_owned();
                assert!(
                    json_bodies.insert(event, body).is_none(),
                    "one of each event"
                );
            }
            "/slack" => slack.push(body),
            other => panic!("a request to {other}"),
        }
    }
    let link = |run: &str| format!("https://rummy.example.com/ui/#/p/shop/r/{run}");
    let expect = |event: &str, run: &str, title: &str| {
        let body = &json_bodies[event];
        assert_eq!(body["project"], json!("shop"), "{body}");
        assert_eq!(body["run"], json!(run), "{body}");
        assert_eq!(body["title"], json!(title), "{body}");
        assert_eq!(body["who"], Value::Null, "the operator: {body}");
        assert_eq!(body["url"], json!(link(run)), "{body}");
        assert!(body["id"].as_str().unwrap().starts_with("dlv_"), "{body}");
        assert!(body["at"].as_str().unwrap().ends_with('Z'), "{body}");
        body.clone()
    };
    let body = expect("run.finished", &finished_run, "Say done.");
    assert_eq!(
        (body["status"].clone(), body["reason"].clone()),
        (json!(200), json!("done"))
    );
    let body = expect("approval.pending", &proposed_run, "Deploy it.");
    assert_eq!(body["status"], json!(202));
    assert_eq!(body["proposals"].as_array().unwrap().len(), 1, "{body}");
    assert!(
        body["proposals"][0].as_str().unwrap().starts_with("sh://"),
        "{body}"
    );
    let body = expect("run.failed", &failed_run, "Fail.");
    assert_eq!(body["status"], json!(500));
    let body = expect("cap.warning", &capped_run, "Learn.");
    assert_eq!(body["cap"]["scope"], json!("run"), "{body}");
    assert_eq!(body["cap"]["spent"], json!(400), "{body}");
    assert_eq!(body["cap"]["limit"], json!(500), "{body}");
    let body = expect("cap.reached", &capped_run, "Learn.");
    assert_eq!(body["status"], json!(402));
    assert!(
        body["error"]
            .as_str()
            .unwrap()
            .contains("(500 tokens per day) is reached"),
        "{body}"
    );
    assert_eq!(
        slack,
        [json!({"text": format!(
            "[shop] run {finished_run} finished: “Say done.”\n<{}|Open in the console>",
            link(&finished_run)
        )})]
    );

    let log = log_when(&mut client, &hook, |log| all_delivered(log, 5)).await;
    for delivery in log["deliveries"].as_array().unwrap() {
        let attempts = delivery["attempts"].as_array().unwrap();
        assert_eq!(attempts.len(), 1, "delivered once: {delivery}");
        assert_eq!(attempts[0]["status"], json!(200), "{delivery}");
        let id = delivery["id"].as_str().unwrap();
        assert!(
            json_bodies.values().any(|body| body["id"] == json!(id)),
            "{id} is one the receiver got"
        );
    }
}

#[actix_web::test]
async fn a_receiver_answering_500_gets_the_retry_and_the_log_shows_both_attempts() {
    let llm = FakeLlm::start([Step::reply("<summarize>Done.</summarize>")]);
    let mut receiver = Receiver::start([Answer::Status(500)]).await;
    let app = TestApp::with_llm(&llm, FAST).await;
    let (mut client, _) = app.client_in_project("shop").await;
    let hook = add_hook(
        &mut client,
        &receiver.url("/hook"),
        &["run.finished"],
        "json",
    )
    .await;
    client.ok("ask", ask_params("Say done.")).await;

    let first = receiver.next().await;
    let again = receiver.next().await;
    assert_eq!(
        first.body, again.body,
        "the same payload, the same delivery id"
    );
    assert_eq!(
        first.header("x-rummy-delivery"),
        again.header("x-rummy-delivery")
    );
    again.verified(SECRET);
    let log = log_when(&mut client, &hook, |log| all_delivered(log, 1)).await;
    let attempts = log["deliveries"][0]["attempts"].as_array().unwrap().clone();
    let statuses: Vec<Value> = attempts
        .iter()
        .map(|attempt| attempt["status"].clone())
        .collect();
    assert_eq!(statuses, [json!(500), json!(200)], "{log}");
    assert_eq!(attempts[0]["attempt"], json!(1));
    assert_eq!(attempts[1]["attempt"], json!(2));
    assert!(
        attempts[1]["atMs"].as_i64() >= attempts[0]["atMs"].as_i64(),
        "{log}"
    );
    assert!(attempts[0]["durationMs"].as_i64().is_some(), "{log}");
}

#[actix_web::test]
async fn a_receiver_that_never_answers_slows_no_run() {
    let llm = FakeLlm::start([
        Step::reply("<summarize>One.</summarize>"),
        Step::reply("<summarize>Two.</summarize>"),
    ]);
    let mut receiver = Receiver::start([Answer::Hang, Answer::Hang]).await;
    let mut env = FAST.to_vec();
    env.push(("RUMMY_WEBHOOK_TIMEOUT_MS", "3600000"));
    let app = TestApp::with_llm(&llm, &env).await;
    let (mut client, _) = app.client_in_project("shop").await;
    let hook = add_hook(
        &mut client,
        &receiver.url("/hook"),
        &["run.finished"],
        "json",
    )
    .await;

    let one = client.ok("ask", ask_params("First.")).await;
    assert_eq!(one["status"], json!(200));
    let held = receiver.next().await;
    assert_eq!(held.verified(SECRET)["run"], one["run"]);
    // The receiver holds the first delivery and answers nothing: the next prompt runs.
    let two = client
        .ok(
            "ask",
            json!({"model": "fake", "prompt": "Second.", "run": one["run"]}),
        )
        .await;
    assert_eq!(two["status"], json!(200), "{two}");
    let log = client.ok("webhooks/deliveries", json!({"id": hook})).await;
    let first = log["deliveries"]
        .as_array()
        .unwrap()
        .last()
        .unwrap()
        .clone();
    assert_eq!(first["state"], json!("pending"), "still in flight: {log}");
    assert_eq!(first["attempts"], json!([]), "{log}");
}

#[actix_web::test]
async fn a_restart_delivers_what_was_pending_with_the_same_delivery_id() {
    let llm = FakeLlm::start([Step::reply("<summarize>Done.</summarize>")]);
    let mut receiver = Receiver::start([Answer::Hang]).await;
    let mut env = FAST.to_vec();
    env.push(("RUMMY_WEBHOOK_TIMEOUT_MS", "3600000"));
    let app = TestApp::with_llm(&llm, &env).await;
    let (mut client, _) = app.client_in_project("shop").await;
    let hook = add_hook(
        &mut client,
        &receiver.url("/hook"),
        &["run.finished"],
        "json",
    )
    .await;
    client.ok("ask", ask_params("Say done.")).await;
    let held = receiver.next().await;
    drop(client);

    let app = app.restart().await;
    let again = receiver.next().await;
    assert_eq!(
        again.header("x-rummy-delivery"),
        held.header("x-rummy-delivery")
    );
    assert_eq!(again.verified(SECRET)["id"], held.verified(SECRET)["id"]);
    let (mut client, _) = app.client_in_project("shop").await;
    let log = log_when(&mut client, &hook, |log| all_delivered(log, 1)).await;
    assert_eq!(
        log["deliveries"][0]["attempts"].as_array().unwrap().len(),
        1,
        "the attempt cut short by the stop was never recorded: {log}"
    );
}

/// A users file in `dir`: ada administers everything, mo is a member of `shop`.
fn team(dir: &std::path::Path) -> String {
    let person = |name: &str, role: &str| {
        format!(
            "[[person]]\nname = \"{name}\"\ntoken_sha256 = \"{}\"\nrole = \"{role}\"\nprojects = [\"*\"]\n",
            hash_token(&format!("{name}-token"))
        )
    };
    let file = dir.join("users.toml");
    std::fs::write(
        &file,
        [person("ada", "admin"), person("mo", "member")].concat(),
    )
    .unwrap();
    file.display().to_string()
}

#[actix_web::test]
async fn bad_input_gets_clear_errors_and_no_list_shows_a_secret() {
    let users = tempfile::tempdir().unwrap();
    let file = team(users.path());
    let app = TestApp::start_with(&[("RUMMY_USERS_FILE", &file), ("RUMMY_AUTH_TOKEN", "op")]).await;
    let root = app.project_root("shop");
    let connect = async |name: &str| {
        let mut client = Client::connect(&format!("ws://{}/?token={name}-token", app.addr())).await;
        client.init("shop", &root).await;
        client
    };
    let mut mo = connect("mo").await;
    let mut ada = connect("ada").await;
    let (code, message) = mo
        .err(
            "webhooks/add",
            json!({"url": "http://127.0.0.1:9/", "events": ["run.finished"]}),
        )
        .await;
    assert_eq!(code, -32005, "{message}");
    assert!(message.contains("admin"), "{message}");
    for method in ["webhooks/list", "webhooks/deliveries", "webhooks/remove"] {
        let (code, _) = mo.err(method, json!({"id": "wh_1"})).await;
        assert_eq!(code, -32005, "{method}");
    }
    for (params, says) in [
        (
            json!({"url": "ftp://example.com/", "events": ["run.finished"]}),
            "http or https",
        ),
        (
            json!({"url": "https://u:p@example.com/", "events": ["run.finished"]}),
            "no user or password",
        ),
        (
            json!({"url": "http://127.0.0.1:9/", "events": ["run.exploded"]}),
            "'run.exploded' is no webhook event",
        ),
        (
            json!({"url": "http://127.0.0.1:9/", "events": []}),
            "at least one",
        ),
        (
            json!({"url": "http://127.0.0.1:9/", "events": ["run.finished"], "format": "xml"}),
            "format",
        ),
        (
            json!({"url": "http://127.0.0.1:9/", "events": ["run.finished"], "secret": "short"}),
            "16 to 256",
        ),
        (
            json!({"url": "http://127.0.0.1:9/", "events": ["run.finished"], "colour": "red"}),
            "colour",
        ),
    ] {
        let (code, message) = ada.err("webhooks/add", params.clone()).await;
        assert_eq!(code, -32602, "{params}: {message}");
        assert!(message.contains(says), "{params}: {message}");
    }
    for method in ["webhooks/remove", "webhooks/deliveries"] {
        let (code, message) = ada.err(method, json!({"id": "wh_nope"})).await;
        assert_eq!(
            (code, message.as_str()),
            (-32602, "no webhook 'wh_nope' in project 'shop'"),
            "{method}"
        );
    }
    let (code, message) = ada
        .err("webhooks/deliveries", json!({"id": "wh_nope", "limit": 0}))
        .await;
    assert_eq!(code, -32602, "{message}");

    let added = ada
        .ok(
            "webhooks/add",
            json!({"url": "http://127.0.0.1:9/hook", "events": ["run.failed", "run.finished"]}),
        )
        .await;
    let secret = added["secret"].as_str().unwrap();
    assert!(secret.starts_with("whsec_") && secret.len() > 40, "{added}");
    assert_eq!(added["events"], json!(["run.finished", "run.failed"]));
    assert_eq!(
        (added["format"].clone(), added["createdBy"].clone()),
        (json!("json"), json!("ada"))
    );
    let listed = ada.ok("webhooks/list", json!({})).await;
    assert_eq!(listed["webhooks"].as_array().unwrap().len(), 1);
    assert!(!listed.to_string().contains(secret), "{listed}");
    assert_eq!(listed["webhooks"][0]["id"], added["id"]);
    let removed = ada.ok("webhooks/remove", json!({"id": added["id"]})).await;
    assert_eq!(removed["removed"], added["id"]);
    assert_eq!(
        ada.ok("webhooks/list", json!({})).await,
        json!({"webhooks": []})
    );
}

#[actix_web::test]
#[ignore = "needs PostgreSQL: RUMMY_TEST_DATABASE_URL"]
async fn two_instances_on_one_database_deliver_each_delivery_once() {
    const RUNS: usize = 6;
    let database = ScratchDatabase::required();
    let llm = FakeLlm::start((0..RUNS).map(|_| Step::reply("<summarize>Done.</summarize>")));
    let mut receiver = Receiver::start([]).await;
    let home = tempfile::tempdir().unwrap();
    let root = project_root(home.path());
    let mut env = vec![("RUMMY_DATABASE_URL", database.url())];
    env.extend_from_slice(&[("RUMMY_WEBHOOK_POLL_MS", "5")]);
    let first = ServerProcess::start_with(home.path(), &llm, &env).await;
    let mut one = first.client().await;
    one.init("shared", &root).await;
    let hook = add_hook(&mut one, &receiver.url("/hook"), &["run.finished"], "json").await;
    let second = ServerProcess::start_with(home.path(), &llm, &env).await;
    let mut other = second.client().await;
    other.init("shared", &root).await;

    for turn in 0..RUNS {
        let client = if turn % 2 == 0 { &mut one } else { &mut other };
        let done = client.ok("ask", ask_params("Say done.")).await;
        assert_eq!(done["status"], json!(200), "{done}");
    }
    let mut ids = Vec::new();
    for _ in 0..RUNS {
        let request = receiver.next().await;
        request.verified(SECRET);
        ids.push(request.header("x-rummy-delivery").to_owned());
    }
    let log = log_when(&mut other, &hook, |log| all_delivered(log, RUNS)).await;
    for delivery in log["deliveries"].as_array().unwrap() {
        assert_eq!(
            delivery["attempts"].as_array().unwrap().len(),
            1,
            "{delivery}"
        );
    }
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), RUNS, "each delivery once: {ids:?}");
}

#[actix_web::test]
async fn a_cap_warns_at_the_configured_share() {
    let llm = FakeLlm::start([
        learning_100_tokens("a"),
        learning_100_tokens("b"),
        learning_100_tokens("c"),
    ]);
    let mut receiver = Receiver::start([]).await;
    let mut env = FAST.to_vec();
    env.push(("RUMMY_CAP_WARNING_PERCENT", "40"));
    let app = TestApp::with_llm(&llm, &env).await;
    app.server.fix_clock("2026-06-01 10:00:00");
    let (mut client, _) = app.client_in_project("shop").await;
    add_hook(
        &mut client,
        &receiver.url("/hook"),
        &["cap.warning"],
        "json",
    )
    .await;
    let mut capped = ask_params("Learn.");
    capped["caps"] = json!({"day_tokens": 500});
    client.send("ask", capped).await;
    let warning = receiver.next().await.verified(SECRET);
    assert_eq!(warning["event"], json!("cap.warning"));
    assert_eq!(
        warning["cap"]["spent"],
        json!(200),
        "40 % of 500: {warning}"
    );
}
