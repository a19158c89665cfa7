//! A scripted HTTP/1.1 server on 127.0.0.1 port 0 for the provider tests: it answers each
//! request with the next scripted reply, records what it was sent, and reports when a held
//! connection is dropped by the client.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;

/// What the server does with one request.
pub enum Reply {
    /// Answer with this status, extra headers and JSON body.
    Json {
        status: u16,
        headers: Vec<(&'static str, String)>,
        body: Value,
    },
    /// Never answer; report when the client closes the connection.
    Hold,
}

impl Reply {
    /// A 200 with a JSON body.
    pub fn ok(body: Value) -> Reply {
        Reply::Json {
            status: 200,
            headers: Vec::new(),
            body,
        }
    }

    /// A status with a JSON error body.
    pub fn status(status: u16) -> Reply {
        Reply::Json {
            status,
            headers: Vec::new(),
            body: serde_json::json!({"error": {"message": format!("scripted {status}")}}),
        }
    }

    /// A status with one extra header.
    pub fn status_with_header(status: u16, name: &'static str, value: &str) -> Reply {
        Reply::Json {
            status,
            headers: vec![(name, value.to_owned())],
            body: serde_json::json!({"error": {"message": format!("scripted {status}")}}),
        }
    }
}

/// One request as the server saw it.
#[derive(Debug)]
pub struct Recorded {
    pub method: String,
    pub path: String,
    /// Header names lower-cased.
    pub headers: Vec<(String, String)>,
    pub body: Value,
}

impl Recorded {
    /// The value of a header, by lower-case name.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(key, _)| key == name)
            .map(|(_, value)| value.as_str())
    }
}

/// The running server.
pub struct TestServer {
    /// `http://127.0.0.1:<port>`.
    pub url: String,
    requests: mpsc::UnboundedReceiver<Recorded>,
    dropped: mpsc::UnboundedReceiver<()>,
}

impl TestServer {
    /// Starts serving `replies` in order; requests beyond the script get a 418.
    pub async fn start(replies: Vec<Reply>) -> TestServer {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let script = Arc::new(Mutex::new(VecDeque::from(replies)));
        let (request_tx, requests) = mpsc::unbounded_channel();
        let (dropped_tx, dropped) = mpsc::unbounded_channel();
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let script = script.clone();
                let request_tx = request_tx.clone();
                let dropped_tx = dropped_tx.clone();
                tokio::spawn(serve(stream, script, request_tx, dropped_tx));
            }
        });
        TestServer {
            url,
            requests,
            dropped,
        }
    }

    /// The next request the server received.
    pub async fn request(&mut self) -> Recorded {
        self.requests.recv().await.unwrap()
    }

    /// Every request received so far.
    pub fn received(&mut self) -> Vec<Recorded> {
        std::iter::from_fn(|| self.requests.try_recv().ok()).collect()
    }

    /// Resolves when the client closed a held connection.
    pub async fn held_connection_dropped(&mut self) {
        self.dropped.recv().await.unwrap();
    }
}

async fn serve(
    mut stream: TcpStream,
    script: Arc<Mutex<VecDeque<Reply>>>,
    request_tx: mpsc::UnboundedSender<Recorded>,
    dropped_tx: mpsc::UnboundedSender<()>,
) {
    let mut buffer = Vec::new();
    while let Some(request) = read_request(&mut stream, &mut buffer).await {
        let _ = request_tx.send(request);
        let reply = script.lock().unwrap().pop_front();
        match reply.unwrap_or_else(|| Reply::status(418)) {
            Reply::Hold => {
                let mut rest = [0u8; 1024];
                while matches!(stream.read(&mut rest).await, Ok(read) if read > 0) {}
                let _ = dropped_tx.send(());
                return;
            }
            Reply::Json {
                status,
                headers,
                body,
            } => {
                let body = body.to_string();
                let mut head = format!(
                    "HTTP/1.1 {status} Scripted\r\ncontent-type: application/json\r\ncontent-length: {}\r\n",
                    body.len()
                );
                for (name, value) in headers {
                    head.push_str(&format!("{name}: {value}\r\n"));
                }
                head.push_str("\r\n");
                let written = stream.write_all(head.as_bytes()).await;
                if written.is_err() || stream.write_all(body.as_bytes()).await.is_err() {
                    return;
                }
            }
        }
    }
}

/// Reads one request (head and `content-length` body); `None` when the client hung up.
async fn read_request(stream: &mut TcpStream, buffer: &mut Vec<u8>) -> Option<Recorded> {
    let head_end = loop {
        if let Some(at) = buffer.windows(4).position(|window| window == b"\r\n\r\n") {
            break at + 4;
        }
        read_more(stream, buffer).await?;
    };
    let head = String::from_utf8_lossy(&buffer[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let mut request_line = lines.next()?.split(' ');
    let method = request_line.next()?.to_owned();
    let path = request_line.next()?.to_owned();
    let headers: Vec<(String, String)> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(name, value)| (name.trim().to_ascii_lowercase(), value.trim().to_owned()))
        .collect();
    let length: usize = headers
        .iter()
        .find(|(name, _)| name == "content-length")
        .map(|(_, value)| value.parse().unwrap())
        .unwrap_or(0);
    while buffer.len() < head_end + length {
        read_more(stream, buffer).await?;
    }
    let body_bytes: Vec<u8> = buffer.drain(..head_end + length).skip(head_end).collect();
    let body = serde_json::from_slice(&body_bytes).unwrap_or(Value::Null);
    Some(Recorded {
        method,
        path,
        headers,
        body,
    })
}

async fn read_more(stream: &mut TcpStream, buffer: &mut Vec<u8>) -> Option<()> {
    let mut chunk = [0u8; 4096];
    match stream.read(&mut chunk).await {
        Ok(read) if read > 0 => {
            buffer.extend_from_slice(&chunk[..read]);
            Some(())
        }
        _ => None,
    }
}
