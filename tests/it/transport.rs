//! The JSON-RPC envelope and the WebSocket transport, against the real server.

use serde_json::{json, Value};

use crate::support::{Client, TestApp};

#[actix_web::test]
async fn ping_answers_an_empty_object_and_echoes_falsy_ids() {
    let app = TestApp::start().await;
    let mut client = app.client().await;
    client
        .send_text(r#"{"jsonrpc":"2.0","id":0,"method":"ping"}"#)
        .await;
    assert_eq!(
        client.next_json().await.unwrap(),
        json!({"jsonrpc":"2.0","result":{},"id":0})
    );
    client
        .send_text(r#"{"jsonrpc":"2.0","id":"","method":"nope"}"#)
        .await;
    let reply = client.next_json().await.unwrap();
    assert_eq!(reply["id"], json!(""));
    assert_eq!(reply["error"]["code"], json!(-32601));
    assert_eq!(reply["error"]["message"], json!("Method 'nope' not found."));
}

#[actix_web::test]
async fn a_notification_gets_no_reply() {
    let app = TestApp::start().await;
    let mut client = app.client().await;
    client
        .send_text(r#"{"jsonrpc":"2.0","method":"ping"}"#)
        .await;
    client
        .send_text(r#"{"jsonrpc":"2.0","id":7,"method":"ping"}"#)
        .await;
    let reply = client.next_json().await.unwrap();
    assert_eq!(
        reply["id"],
        json!(7),
        "only the request with an id is answered"
    );
}

#[actix_web::test]
async fn malformed_frames_get_errors_and_the_connection_stays_usable() {
    let app = TestApp::start().await;
    let mut client = app.client().await;
    client.send_text("hello").await;
    let reply = client.next_json().await.unwrap();
    assert_eq!(reply["error"]["code"], json!(-32700));
    assert_eq!(reply["id"], Value::Null);
    for bad in [
        r#"{"id":1,"method":5}"#,
        r#"{"id":2}"#,
        r#"{"id":3,"method":"ping","params":[1,2]}"#,
        "42",
        "[]",
    ] {
        client.send_text(bad).await;
        let reply = client.next_json().await.unwrap();
        assert_eq!(reply["error"]["code"], json!(-32600), "for {bad}: {reply}");
    }
    assert_eq!(client.ok("ping", json!({})).await, json!({}));
}

#[actix_web::test]
async fn batches_answer_with_one_array() {
    let app = TestApp::start().await;
    let mut client = app.client().await;
    client
        .send_text(
            r#"[{"jsonrpc":"2.0","id":1,"method":"ping"},
                {"jsonrpc":"2.0","method":"ping"},
                {"jsonrpc":"2.0","id":2,"method":"nope"},
                "junk"]"#,
        )
        .await;
    let reply = client.next_json().await.unwrap();
    let replies = reply.as_array().expect("a batch reply is an array");
    assert_eq!(replies.len(), 3, "the notification gets no reply: {reply}");
    assert_eq!(replies[0], json!({"jsonrpc":"2.0","result":{},"id":1}));
    assert_eq!(replies[1]["error"]["code"], json!(-32601));
    assert_eq!(replies[2]["error"]["code"], json!(-32600));
}

#[actix_web::test]
async fn discover_lists_methods_tools_and_notifications() {
    let app = TestApp::start().await;
    let mut client = app.client().await;
    let catalogue = client.ok("rpc/discover", json!({})).await;
    for method in [
        "ask",
        "act",
        "run/resolve",
        "get",
        "store",
        "getEntries",
        "addModel",
        "set",
    ] {
        assert!(catalogue["methods"].get(method).is_some(), "{method}");
    }
    assert!(catalogue["notifications"].get("run/state").is_some());
}

#[actix_web::test]
async fn methods_that_need_init_say_so() {
    let app = TestApp::start().await;
    let mut client = app.client().await;
    let (code, message) = client.err("getRuns", json!({})).await;
    assert_eq!(
        (code, message.as_str()),
        (-32001, "Project not initialized.")
    );
    client.ok("getModels", json!({})).await;
}

#[actix_web::test]
async fn invalid_utf8_closes_only_that_connection() {
    let app = TestApp::start().await;
    let mut bystander = app.client().await;
    let mut offender = app.client().await;
    offender.send_binary(vec![0xff, 0xfe, 0x7b]).await;
    assert_eq!(offender.closed().await, Some(1007));
    assert_eq!(bystander.ok("ping", json!({})).await, json!({}));
}

#[actix_web::test]
async fn an_oversized_frame_closes_only_that_connection() {
    let app = TestApp::start().await;
    let mut bystander = app.client().await;
    let mut offender = app.client().await;
    let huge = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"ping","params":{{"x":"{}"}}}}"#,
        "a".repeat(32 * 1024 * 1024)
    );
    offender.send_text(huge).await;
    assert_eq!(offender.closed().await, Some(1009));
    assert_eq!(bystander.ok("ping", json!({})).await, json!({}));
    let mut fresh = app.client().await;
    assert_eq!(fresh.ok("ping", json!({})).await, json!({}));
}

#[actix_web::test]
async fn a_large_frame_under_the_limit_is_served() {
    let app = TestApp::start().await;
    let mut client = app.client().await;
    let params = json!({"padding": "a".repeat(1024 * 1024)});
    assert_eq!(client.ok("ping", params).await, json!({}));
}

#[actix_web::test]
async fn plain_http_probes_answer() {
    let app = TestApp::start().await;
    let http = awc::Client::new();
    let base = format!("http://{}", app.addr());
    let mut health = http.get(format!("{base}/healthz")).send().await.unwrap();
    assert_eq!(health.status().as_u16(), 200);
    assert_eq!(health.body().await.unwrap(), "ok\n");
    let ready = http.get(format!("{base}/readyz")).send().await.unwrap();
    assert_eq!(ready.status().as_u16(), 200);
    let mut metrics = http.get(format!("{base}/metrics")).send().await.unwrap();
    let text = String::from_utf8(metrics.body().await.unwrap().to_vec()).unwrap();
    assert!(text.contains("rummy_connections_open"), "{text}");
    let upgrade = http.get(format!("{base}/")).send().await.unwrap();
    assert_eq!(upgrade.status().as_u16(), 426);
}

#[actix_web::test]
async fn the_token_gate_refuses_before_the_upgrade() {
    let app = TestApp::start_with(&[("RUMMY_AUTH_TOKEN", "s3cret")]).await;
    let url = format!("ws://{}/", app.addr());
    let refused = awc::Client::new().ws(url.as_str()).connect().await;
    match refused {
        Err(awc::error::WsClientError::InvalidResponseStatus(status)) => {
            assert_eq!(status.as_u16(), 401)
        }
        other => panic!("expected 401, got {:?}", other.map(|_| ())),
    }
    let wrong = awc::Client::new()
        .ws(format!("{url}?token=nope"))
        .connect()
        .await;
    assert!(wrong.is_err());
    let mut by_query = Client::connect(&format!("{url}?token=s3cret")).await;
    assert_eq!(by_query.ok("ping", json!({})).await, json!({}));
    let (_, framed) = awc::Client::new()
        .ws(url.as_str())
        .bearer_auth("s3cret")
        .connect()
        .await
        .unwrap();
    drop(framed);
    for scheme in ["bearer", "BEARER"] {
        let (_, framed) = awc::Client::new()
            .ws(url.as_str())
            .header("Authorization", format!("{scheme} s3cret"))
            .connect()
            .await
            .unwrap_or_else(|error| panic!("{scheme}: {error}"));
        drop(framed);
    }
    let basic = awc::Client::new()
        .ws(url.as_str())
        .header("Authorization", "Basic s3cret")
        .connect()
        .await;
    assert!(basic.is_err(), "only the bearer scheme carries the token");
}

#[actix_web::test]
async fn metrics_need_the_token_unless_configured_open() {
    let http = awc::Client::new();
    let guarded = TestApp::start_with(&[("RUMMY_AUTH_TOKEN", "s3cret")]).await;
    let url = format!("http://{}/metrics", guarded.addr());
    let refused = http.get(url.as_str()).send().await.unwrap();
    assert_eq!(refused.status().as_u16(), 401);
    let mut allowed = http
        .get(url.as_str())
        .bearer_auth("s3cret")
        .send()
        .await
        .unwrap();
    assert_eq!(allowed.status().as_u16(), 200);
    let text = String::from_utf8(allowed.body().await.unwrap().to_vec()).unwrap();
    assert!(text.contains("rummy_connections_open"), "{text}");
    let open = TestApp::start_with(&[
        ("RUMMY_AUTH_TOKEN", "s3cret"),
        ("RUMMY_METRICS_OPEN", "true"),
    ])
    .await;
    let scraped = http
        .get(format!("http://{}/metrics", open.addr()))
        .send()
        .await
        .unwrap();
    assert_eq!(scraped.status().as_u16(), 200);
}

#[actix_web::test]
async fn browser_origins_must_be_allowed() {
    let app = TestApp::start_with(&[("RUMMY_ALLOWED_ORIGINS", "http://editor.local")]).await;
    let url = format!("ws://{}/", app.addr());
    let refused = awc::Client::new()
        .ws(url.as_str())
        .origin("http://evil.example")
        .connect()
        .await;
    match refused {
        Err(awc::error::WsClientError::InvalidResponseStatus(status)) => {
            assert_eq!(status.as_u16(), 403)
        }
        other => panic!("expected 403, got {:?}", other.map(|_| ())),
    }
    let allowed = awc::Client::new()
        .ws(url.as_str())
        .origin("http://editor.local")
        .connect()
        .await;
    assert!(allowed.is_ok());
}

#[actix_web::test]
async fn stopping_the_server_closes_clients_with_going_away() {
    let app = TestApp::start().await;
    let mut client = app.client().await;
    client.ok("ping", json!({})).await;
    let TestApp { server, home, .. } = app;
    let stopping = actix_web::rt::spawn(server.stop());
    assert_eq!(client.closed().await, Some(1001));
    stopping.await.unwrap();
    drop(home);
}

#[actix_web::test]
async fn a_silent_client_is_pinged_then_dropped() {
    let app = TestApp::start_with(&[
        ("RUMMY_HEARTBEAT_SECS", "1"),
        ("RUMMY_CLIENT_TIMEOUT_SECS", "2"),
    ])
    .await;
    let mut client = app.client().await;
    let (pings, close) = client.frames_without_answering_pings().await;
    assert!(pings >= 1, "the server pings");
    assert_eq!(close, Some(1001), "and drops a peer that never answers");
    let mut other = app.client().await;
    assert_eq!(other.ok("ping", json!({})).await, json!({}));
}

/// The upgrade request of a raw client on `path`.
fn upgrade_request(app: &TestApp, path: &str) -> Vec<u8> {
    format!(
        "GET {path} HTTP/1.1\r\nHost: {}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
         Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n",
        app.addr()
    )
    .into_bytes()
}

/// A client that writes its first frame in the same packet as its handshake.
async fn raw_handshake_with(app: &TestApp, path: &str, then: &[u8]) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut socket = tokio::net::TcpStream::connect(app.addr()).await.unwrap();
    let mut request = upgrade_request(app, path);
    request.extend_from_slice(then);
    socket.write_all(&request).await.unwrap();
    let mut received = Vec::new();
    let mut chunk = [0; 4096];
    while !String::from_utf8_lossy(&received).contains("\"result\"") {
        let read =
            tokio::time::timeout(std::time::Duration::from_secs(10), socket.read(&mut chunk))
                .await
                .unwrap()
                .unwrap();
        if read == 0 {
            break;
        }
        received.extend_from_slice(&chunk[..read]);
    }
    String::from_utf8_lossy(&received).into_owned()
}

/// `text` as one masked client frame (mask 0: the payload goes as is).
fn masked_text_frame(text: &str) -> Vec<u8> {
    let mut frame = vec![0x81, 0x80 | u8::try_from(text.len()).unwrap(), 0, 0, 0, 0];
    frame.extend_from_slice(text.as_bytes());
    frame
}

#[actix_web::test]
async fn a_frame_sent_with_the_handshake_is_served() {
    let app = TestApp::start().await;
    let ping = masked_text_frame(r#"{"jsonrpc":"2.0","id":7,"method":"ping"}"#);
    let received = raw_handshake_with(&app, "/", &ping).await;
    assert!(received.starts_with("HTTP/1.1 101"), "{received}");
    assert!(received.contains(r#""result":{}"#), "{received}");
}

#[actix_web::test]
async fn an_upgrade_on_another_path_is_not_found() {
    let app = TestApp::start().await;
    let received = raw_handshake_with(&app, "/healthz", b"").await;
    assert!(received.starts_with("HTTP/1.1 404"), "{received}");
}

/// How long a test waits for the server to finish closing a connection: generous, and far
/// below the heartbeat and client timeouts the test sets.
const CLOSE_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

/// A client's close frame is answered with the server's close frame, and the server closes
/// the TCP connection at once: only the close handling can end it within [`CLOSE_WAIT`], as
/// the heartbeat and the client timeout are an hour.
#[actix_web::test]
async fn a_close_frame_is_answered_and_the_connection_ends_at_once() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let app = TestApp::start_with(&[
        ("RUMMY_HEARTBEAT_SECS", "3600"),
        ("RUMMY_CLIENT_TIMEOUT_SECS", "3600"),
    ])
    .await;
    let mut socket = tokio::net::TcpStream::connect(app.addr()).await.unwrap();
    socket.write_all(&upgrade_request(&app, "/")).await.unwrap();
    let mut received = Vec::new();
    let mut chunk = [0; 4096];
    let head_end = loop {
        if let Some(end) = received.windows(4).position(|window| window == b"\r\n\r\n") {
            break end + 4;
        }
        let read = tokio::time::timeout(CLOSE_WAIT, socket.read(&mut chunk))
            .await
            .expect("the handshake is answered")
            .unwrap();
        assert!(read > 0, "the server ended the connection before its 101");
        received.extend_from_slice(&chunk[..read]);
    };
    assert!(received.starts_with(b"HTTP/1.1 101"));
    // A masked close frame (mask 0) with code 1000.
    socket
        .write_all(&[0x88, 0x82, 0, 0, 0, 0, 0x03, 0xe8])
        .await
        .unwrap();
    let mut after_head = received.split_off(head_end);
    tokio::time::timeout(CLOSE_WAIT, async {
        loop {
            let read = socket.read(&mut chunk).await.unwrap();
            if read == 0 {
                return;
            }
            after_head.extend_from_slice(&chunk[..read]);
        }
    })
    .await
    .expect("the server closes the TCP connection right after its close frame");
    assert_eq!(
        after_head,
        [0x88, 0x02, 0x03, 0xe8],
        "the server's close frame, code 1000, and nothing else"
    );
}

/// Every request with an id is answered once, also when the connection closes while it is
/// being served: requests sent in the same packet as a frame that ends the connection (a
/// text frame that is not UTF-8, or the client's close frame) each get one reply — their
/// answer, or `-32603` saying the connection closed — before the server's close frame.
#[actix_web::test]
async fn requests_cut_by_a_close_are_answered_before_it() {
    for (ending, code) in [
        (vec![0x81, 0x82, 0, 0, 0, 0, 0xff, 0xfe], 1007_u16),
        (vec![0x88, 0x82, 0, 0, 0, 0, 0x03, 0xe8], 1000),
    ] {
        let app = TestApp::start().await;
        let mut packet = upgrade_request(&app, "/");
        packet.extend(masked_text_frame(
            r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#,
        ));
        packet.extend(masked_text_frame(
            r#"[{"id":2,"method":"getModels"},{"id":3,"method":"ping"},{"method":"ping"},7]"#,
        ));
        packet.extend(masked_text_frame(r#"{"id":4,"method":"getModels"}"#));
        packet.extend(ending);
        let frames = server_frames(&exchange_until_closed(&app, &packet).await);
        let (last, replies) = frames.split_last().expect("the server sent frames");
        assert_eq!(last.0, 0x8, "the close frame comes last: {frames:?}");
        assert_eq!(u16::from_be_bytes([last.1[0], last.1[1]]), code);
        let mut ids = Vec::new();
        for (opcode, payload) in replies {
            assert_eq!(*opcode, 0x1, "{frames:?}");
            let reply: Value = serde_json::from_slice(payload).unwrap();
            let answers = match reply {
                Value::Array(answers) => answers,
                single => vec![single],
            };
            for answer in answers {
                let closing = answer["error"]["code"] == json!(-32603)
                    && answer["error"]["message"]
                        .as_str()
                        .unwrap()
                        .contains("connection closed");
                assert!(
                    answer.get("result").is_some()
                        || closing
                        || answer["error"]["code"] == json!(-32600),
                    "{answer}"
                );
                ids.push(answer["id"].clone());
            }
        }
        ids.sort_by_key(Value::to_string);
        assert_eq!(ids, [json!(1), json!(2), json!(3), json!(4), Value::Null]);
    }
}

/// Writes `packet` (a handshake and frames) and reads until the server ends the
/// connection; what came after the `101`'s head.
async fn exchange_until_closed(app: &TestApp, packet: &[u8]) -> Vec<u8> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut socket = tokio::net::TcpStream::connect(app.addr()).await.unwrap();
    socket.write_all(packet).await.unwrap();
    let mut received = Vec::new();
    tokio::time::timeout(CLOSE_WAIT, socket.read_to_end(&mut received))
        .await
        .expect("the server ends the connection")
        .unwrap();
    assert!(received.starts_with(b"HTTP/1.1 101"));
    let head_end = received
        .windows(4)
        .position(|window| window == b"\r\n\r\n")
        .unwrap();
    received.split_off(head_end + 4)
}

/// The server's (unmasked) frames in `bytes`: opcode and payload.
fn server_frames(mut bytes: &[u8]) -> Vec<(u8, Vec<u8>)> {
    let mut frames = Vec::new();
    while bytes.len() >= 2 {
        let opcode = bytes[0] & 0x0f;
        let (length, start) = match bytes[1] & 0x7f {
            126 => (usize::from(u16::from_be_bytes([bytes[2], bytes[3]])), 4),
            127 => (
                usize::try_from(u64::from_be_bytes(bytes[2..10].try_into().unwrap())).unwrap(),
                10,
            ),
            length => (usize::from(length), 2),
        };
        frames.push((opcode, bytes[start..start + length].to_vec()));
        bytes = &bytes[start + length..];
    }
    frames
}
