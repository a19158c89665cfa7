//! Every request with an id gets exactly one reply, and nothing else does: fuzzed frames
//! (single requests, batches with duplicate ids, notifications only, odd ids, junk) over
//! real WebSockets, and the cases that used to lose or garble one.

use std::collections::BTreeMap;
use std::time::Duration;

use futures_util::future::join_all;
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use serde_json::{json, Value};

use crate::support::{Client, TestApp};

/// Connections fuzzed at once, and frames sent on each.
const CONNECTIONS: usize = 6;
const FRAMES_PER_CONNECTION: usize = 120;
/// Frames sent before their replies are read (so neither side's buffers fill up).
const WINDOW: usize = 12;
/// How long one connection's exchange may take before the missing replies are reported.
const EXCHANGE_WAIT: Duration = Duration::from_secs(60);

/// One element of a frame: a request object in JSON text, or junk.
#[derive(Debug, Clone)]
struct Element {
    text: String,
    /// The key of the reply it must get (`None`: a notification, no reply).
    reply: Option<String>,
}

/// An id as JSON text and the key its echo must have; `None`: no `id` member.
#[derive(Debug, Clone)]
enum Id {
    Absent,
    /// A valid id: its literal and the reply key.
    Valid(String, String),
    /// An object, array or boolean: answered with id null.
    Invalid(String),
}

fn number(literal: &str) -> Id {
    Id::Valid(literal.to_string(), literal.to_string())
}

fn text_id(literal: &str) -> Id {
    let key = serde_json::from_str::<Value>(literal).unwrap().to_string();
    Id::Valid(literal.to_string(), key)
}

fn id_strategy() -> impl Strategy<Value = Id> {
    prop_oneof![
        3 => Just(Id::Absent),
        6 => (0u8..12).prop_map(|n| number(&n.to_string())),
        2 => any::<i64>().prop_map(|n| number(&n.to_string())),
        1 => prop::sample::select(vec![
            "18446744073709551615",
            "18446744073709551617",
            "-9223372036854775809",
            "123456789012345678901234567890",
            "-0",
            "1.5",
            "0.1",
            "1e+400",
            "2.5e-3",
        ])
        .prop_map(number),
        3 => "[a-c]{0,2}".prop_map(|s| text_id(&format!("\"{s}\""))),
        1 => Just(text_id(r#""\u00e9\n\"""#)),
        1 => Just(text_id("null")),
        1 => prop::sample::select(vec!["true", "{}", "[1]", r#"{"id":1}"#])
            .prop_map(|literal| Id::Invalid(literal.to_string())),
    ]
}

fn method_strategy() -> impl Strategy<Value = Option<&'static str>> {
    prop_oneof![
        4 => Just(Some(r#""ping""#)),
        1 => Just(Some(r#""discover""#)),
        2 => Just(Some(r#""getRuns""#)),
        1 => Just(Some(r#""getEntries""#)),
        2 => Just(Some(r#""no/such""#)),
        1 => Just(Some(r#""init""#)),
        1 => Just(Some("7")),
        1 => Just(None),
    ]
}

fn params_strategy() -> impl Strategy<Value = Option<&'static str>> {
    prop_oneof![
        4 => Just(None),
        1 => Just(Some("null")),
        2 => Just(Some("{}")),
        1 => Just(Some(r#"{"run":"x","name":5}"#)),
        1 => Just(Some("[1,2]")),
        1 => Just(Some("5")),
        1 => Just(Some(DEEP_PARAMS)),
    ]
}

/// Params nested past serde_json's recursion limit: valid JSON the server cannot hold.
const DEEP_PARAMS: &str = concat!(
    r#"{"x":"#,
    "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[",
    "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[",
    "]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]",
    "]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]",
    "}"
);

fn request_strategy() -> impl Strategy<Value = Element> {
    (id_strategy(), method_strategy(), params_strategy()).prop_map(|(id, method, params)| {
        let mut members = vec![r#""jsonrpc":"2.0""#.to_string()];
        match &id {
            Id::Absent => {}
            Id::Valid(literal, _) | Id::Invalid(literal) => {
                members.push(format!(r#""id":{literal}"#))
            }
        }
        if let Some(method) = method {
            members.push(format!(r#""method":{method}"#));
        }
        if let Some(params) = params {
            members.push(format!(r#""params":{params}"#));
        }
        let well_formed = method.is_some_and(|method| method.starts_with('"'))
            && params.is_none_or(|params| {
                (params.starts_with('{') && params != DEEP_PARAMS) || params == "null"
            });
        let reply = match id {
            Id::Invalid(_) => Some("null".to_string()),
            Id::Valid(_, key) => Some(key),
            Id::Absent if well_formed => None,
            Id::Absent => Some("null".to_string()),
        };
        Element {
            text: format!("{{{}}}", members.join(",")),
            reply,
        }
    })
}

fn element_strategy() -> impl Strategy<Value = Element> {
    let junk =
        prop::sample::select(vec!["5", r#""x""#, "null", "[]", "{}"]).prop_map(|text| Element {
            text: text.to_string(),
            reply: Some("null".to_string()),
        });
    prop_oneof![8 => request_strategy(), 1 => junk]
}

/// A frame's text and the reply keys it must get.
fn frame_strategy() -> impl Strategy<Value = (String, Vec<String>)> {
    let single =
        element_strategy().prop_map(|element| (element.text, element.reply.into_iter().collect()));
    let batch = prop::collection::vec(element_strategy(), 1..8).prop_map(|elements| {
        let texts: Vec<&str> = elements
            .iter()
            .map(|element| element.text.as_str())
            .collect();
        let replies = elements
            .iter()
            .filter_map(|element| element.reply.clone())
            .collect();
        (format!("[{}]", texts.join(",")), replies)
    });
    let broken = prop::sample::select(vec!["[", "{\"id\":1,", "", "[]"])
        .prop_map(|text| (text.to_string(), vec!["null".to_string()]));
    prop_oneof![5 => single, 4 => batch, 1 => broken]
}

/// The reply keys `frames` must get, each with its count.
fn expected_replies(frames: &[(String, Vec<String>)]) -> Counts {
    let mut expected = Counts::new();
    for key in frames.iter().flat_map(|(_, replies)| replies) {
        *expected.entry(key.clone()).or_default() += 1;
    }
    expected
}

/// Sends `frames` a window at a time and counts the replies into `received` until every
/// expected one came; then a sentinel ping must be the next reply (nothing extra came).
async fn exchange(client: &mut Client, frames: &[(String, Vec<String>)], received: &mut Counts) {
    for window in frames.chunks(WINDOW) {
        let awaited: usize = window.iter().map(|(_, replies)| replies.len()).sum();
        for (text, _) in window {
            client.send_text(text.clone()).await;
        }
        let mut count = 0;
        while count < awaited {
            let message = client
                .next_json()
                .await
                .expect("the server closed the connection");
            let replies = match message {
                Value::Array(replies) => {
                    assert!(!replies.is_empty(), "an empty batch reply");
                    replies
                }
                single => vec![single],
            };
            for reply in replies {
                assert!(
                    reply.get("result").is_some() != reply.get("error").is_some(),
                    "{reply}"
                );
                *received.entry(reply["id"].to_string()).or_default() += 1;
                count += 1;
            }
        }
    }
    client
        .send_text(r#"{"jsonrpc":"2.0","id":"sentinel","method":"ping"}"#)
        .await;
    let after = client.next_json().await.expect("the sentinel is answered");
    assert_eq!(
        after["id"],
        json!("sentinel"),
        "a reply came after all were counted: {after}"
    );
}

type Counts = BTreeMap<String, usize>;

#[actix_web::test]
async fn fuzzed_frames_get_exactly_one_reply_per_id() {
    let app = TestApp::start().await;
    let mut runner = TestRunner::new_with_rng(
        Config::default(),
        TestRng::deterministic_rng(RngAlgorithm::ChaCha),
    );
    let strategy = prop::collection::vec(frame_strategy(), FRAMES_PER_CONNECTION);
    let scripts: Vec<Vec<(String, Vec<String>)>> = (0..CONNECTIONS)
        .map(|_| strategy.new_tree(&mut runner).unwrap().current())
        .collect();
    let url = format!("ws://{}/", app.addr());
    let mut clients = join_all((0..CONNECTIONS).map(|_| Client::connect(&url))).await;
    let mut received = vec![Counts::new(); CONNECTIONS];
    let exchanges = clients
        .iter_mut()
        .zip(&scripts)
        .zip(received.iter_mut())
        .map(|((client, frames), counts)| async move {
            tokio::time::timeout(EXCHANGE_WAIT, exchange(client, frames, counts))
                .await
                .is_ok()
        });
    let finished = join_all(exchanges).await;
    for ((frames, received), finished) in scripts.iter().zip(&received).zip(finished) {
        let expected = expected_replies(frames);
        if !finished || &expected != received {
            let frames: Vec<&String> = frames.iter().map(|(text, _)| text).collect();
            panic!("expected {expected:?}\nreceived {received:?}\nframes {frames:#?}");
        }
    }
}

/// Sends `frame` and returns the next message, which must be its answer.
async fn answer(client: &mut Client, frame: &str) -> Value {
    client.send_text(frame).await;
    client.next_json().await.expect("an answer")
}

#[actix_web::test]
async fn ids_come_back_exactly_as_sent() {
    let app = TestApp::start().await;
    let mut client = app.client().await;
    for id in [
        "18446744073709551617",
        "-9223372036854775809",
        "123456789012345678901234567890",
        "-0",
        "1.5",
        "1e+400",
        r#""\u0000""#,
    ] {
        client
            .send_text(format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"ping"}}"#))
            .await;
        let Some(awc::ws::Frame::Text(bytes)) = client.next_frame().await else {
            panic!("no reply for id {id}");
        };
        let text = String::from_utf8(bytes.to_vec()).unwrap();
        let expected_id = serde_json::from_str::<Value>(id).unwrap().to_string();
        assert!(
            text.ends_with(&format!(r#""id":{expected_id}}}"#)),
            "{id}: {text}"
        );
    }
}

#[actix_web::test]
async fn an_element_the_server_cannot_read_costs_only_its_own_reply() {
    let app = TestApp::start().await;
    let mut client = app.client().await;
    let frame = format!(
        r#"[{{"jsonrpc":"2.0","id":1,"method":"ping","params":{DEEP_PARAMS}}},
            {{"jsonrpc":"2.0","id":2,"method":"ping"}}]"#
    );
    let replies = answer(&mut client, &frame).await;
    assert_eq!(replies[0]["id"], json!(1), "{replies}");
    assert_eq!(replies[0]["error"]["code"], json!(-32600));
    assert_eq!(replies[1], json!({"jsonrpc": "2.0", "result": {}, "id": 2}));
    let single =
        format!(r#"{{"jsonrpc":"2.0","id":"deep","method":"ping","params":{DEEP_PARAMS}}}"#);
    let reply = answer(&mut client, &single).await;
    assert_eq!(
        (reply["id"].clone(), reply["error"]["code"].clone()),
        (json!("deep"), json!(-32600))
    );
}

#[actix_web::test]
async fn duplicate_ids_each_get_a_reply_and_notifications_none() {
    let app = TestApp::start().await;
    let mut client = app.client().await;
    let replies = answer(
        &mut client,
        r#"[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":1,"method":"nope"},
            {"jsonrpc":"2.0","method":"ping"},{"jsonrpc":"2.0","id":1,"method":"ping"}]"#,
    )
    .await;
    let ids: Vec<&Value> = replies
        .as_array()
        .unwrap()
        .iter()
        .map(|reply| &reply["id"])
        .collect();
    assert_eq!(ids, [&json!(1), &json!(1), &json!(1)], "{replies}");
    client
        .send_text(r#"[{"jsonrpc":"2.0","method":"ping"},{"jsonrpc":"2.0","method":"nope"}]"#)
        .await;
    for _ in 0..3 {
        client
            .send_text(r#"{"jsonrpc":"2.0","id":7,"method":"ping"}"#)
            .await;
    }
    for _ in 0..3 {
        let reply = client.next_json().await.unwrap();
        assert_eq!(reply, json!({"jsonrpc": "2.0", "result": {}, "id": 7}));
    }
}

#[actix_web::test]
async fn a_reply_past_the_frame_limit_is_an_error_with_its_id() {
    let app = TestApp::start_with(&[("RUMMY_MAX_FRAME_BYTES", "2048")]).await;
    let mut client = app.client().await;
    let reply = answer(
        &mut client,
        r#"{"jsonrpc":"2.0","id":"d","method":"discover"}"#,
    )
    .await;
    assert_eq!(reply["id"], json!("d"));
    assert_eq!(reply["error"]["code"], json!(-32007), "{reply}");
    let replies = answer(
        &mut client,
        r#"[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"discover"}]"#,
    )
    .await;
    assert_eq!(replies[0], json!({"jsonrpc": "2.0", "result": {}, "id": 1}));
    assert_eq!(
        (
            replies[1]["id"].clone(),
            replies[1]["error"]["code"].clone()
        ),
        (json!(2), json!(-32007))
    );
}
