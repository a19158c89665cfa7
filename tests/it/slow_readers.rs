//! A client that stops reading never delays the others: its pump keeps serving it while
//! what it does not take piles up, and it is dropped (its socket reset, a log line naming
//! it) once too much waits or its socket takes nothing for `client_timeout_secs`. Run
//! against the binary, whose log the tests read.

use std::time::Duration;

use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::process::LoggedServer;
use crate::support::Client;

/// How long a test waits for the server to read or close before it fails.
const WAIT: Duration = Duration::from_secs(60);

/// A WebSocket client that never reads after its handshake.
struct DeafPeer {
    socket: TcpStream,
}

impl DeafPeer {
    async fn connect(port: u16) -> DeafPeer {
        let mut socket = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
        let handshake = format!(
            "GET / HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\n\
             Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\
             Sec-WebSocket-Version: 13\r\n\r\n"
        );
        socket.write_all(handshake.as_bytes()).await.unwrap();
        let mut head = Vec::new();
        while !head.ends_with(b"\r\n\r\n") {
            let mut byte = [0];
            assert_eq!(socket.read(&mut byte).await.unwrap(), 1, "no handshake");
            head.push(byte[0]);
        }
        assert!(head.starts_with(b"HTTP/1.1 101"), "{head:?}");
        DeafPeer { socket }
    }

    /// Sends a request whose reply is about `bytes` long (it names an unknown method of
    /// that length); false once the server has dropped the connection.
    async fn ask_for_a_large_reply(&mut self, id: usize, bytes: usize) -> bool {
        let method = "x".repeat(bytes);
        let request = json!({"jsonrpc": "2.0", "id": id, "method": method}).to_string();
        let frame = client_frame(request.as_bytes());
        tokio::time::timeout(WAIT, self.socket.write_all(&frame))
            .await
            .expect("the server stopped reading a client that does not read")
            .is_ok()
    }

    /// Reads what is left until the connection ends: true for an end (EOF or reset).
    async fn ended(&mut self) -> bool {
        let mut chunk = vec![0; 64 * 1024];
        let end = async {
            loop {
                match self.socket.read(&mut chunk).await {
                    Ok(0) | Err(_) => return,
                    Ok(_) => {}
                }
            }
        };
        tokio::time::timeout(WAIT, end).await.is_ok()
    }
}

/// `payload` as one text frame from a client (masked, with the all-zero key).
fn client_frame(payload: &[u8]) -> Vec<u8> {
    let mut frame = vec![0x81];
    match payload.len() {
        short @ 0..=125 => frame.push(0x80 | u8::try_from(short).unwrap()),
        medium @ 126..=0xFFFF => {
            frame.push(0x80 | 126);
            frame.extend_from_slice(&u16::try_from(medium).unwrap().to_be_bytes());
        }
        long => {
            frame.push(0x80 | 127);
            frame.extend_from_slice(&u64::try_from(long).unwrap().to_be_bytes());
        }
    }
    frame.extend_from_slice(&[0, 0, 0, 0]);
    frame.extend_from_slice(payload);
    frame
}

#[actix_web::test]
async fn a_client_that_does_not_read_is_dropped_once_too_much_waits_for_it() {
    let mut server = LoggedServer::start(
        tempfile::tempdir().unwrap(),
        &[
            ("RUMMY_MAX_FRAME_BYTES", "1048576"),
            ("RUMMY_CLIENT_SEND_BUFFER_BYTES", "2097152"),
        ],
    )
    .await;
    let mut other = Client::connect(&server.url()).await;
    let mut deaf = DeafPeer::connect(server.port).await;
    let mut sent = 0;
    while deaf.ask_for_a_large_reply(sent, 256 * 1024).await {
        sent += 1;
        assert!(sent < 1000, "the server kept a client that reads nothing");
        assert_eq!(
            other.ok("ping", json!({})).await,
            json!({}),
            "others are served meanwhile"
        );
    }
    let line = server
        .logged(&["client is not reading: dropping the connection", "conn=2 "])
        .await;
    assert!(line.contains("limit=2097152"), "{line}");
    assert!(deaf.ended().await);
    assert_eq!(other.ok("ping", json!({})).await, json!({}));
}

#[actix_web::test]
async fn a_client_whose_socket_takes_nothing_is_dropped_after_the_client_timeout() {
    let mut server = LoggedServer::start(
        tempfile::tempdir().unwrap(),
        &[
            ("RUMMY_CLIENT_TIMEOUT_SECS", "1"),
            ("RUMMY_HEARTBEAT_SECS", "1"),
            ("RUMMY_CLIENT_SEND_BUFFER_BYTES", "1073741824"),
        ],
    )
    .await;
    let mut deaf = DeafPeer::connect(server.port).await;
    for id in 0..32 {
        if !deaf.ask_for_a_large_reply(id, 512 * 1024).await {
            break;
        }
    }
    server
        .logged(&[
            "client took none of the server's bytes in time: dropping the connection",
            "conn=1 ",
        ])
        .await;
    assert!(deaf.ended().await);
    let mut next = Client::connect(&server.url()).await;
    assert_eq!(next.ok("ping", json!({})).await, json!({}));
}
