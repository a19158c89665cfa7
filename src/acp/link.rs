//! A client of rummy's own JSON-RPC over WebSocket, one connection per ACP session (a
//! connection is bound to one project by `init`, and a session is one project).
//!
//! The socket (awc, whose futures are not `Send`) lives in a task on the actix runtime
//! this agent runs on; the ACP side, whose handlers must be `Send`, reaches it through
//! channels: a [`Dialer`] opens connections, a [`Link`] makes calls, and each connection's
//! notifications arrive on a receiver of their own.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use actix_codec::Framed;
use actix_http::ws::Item;
use awc::error::WsClientError;
use awc::ws::{Codec, Frame, Message};
use awc::BoxedSocket;
use bytes::BytesMut;
use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use tokio::sync::{mpsc, oneshot};

use crate::acp::error::AcpError;
use crate::config::Secret;

/// The largest frame taken from rummy (a long run's `run/state` is large).
const MAX_FRAME_BYTES: usize = 64 * 1024 * 1024;

/// Where rummy listens and the token that opens it.
pub(super) struct Endpoint {
    /// `ws://host:port/` or `wss://…`.
    pub url: String,
    /// Sent as `Authorization: Bearer`.
    pub token: Option<Secret>,
    /// Where a remote server's token is read from when the editor signs in
    /// (`authenticate`); `None` for the local server, whose token this process made.
    pub token_file: Option<PathBuf>,
}

/// A notification from rummy: `run/state`, `run/progress`, `run/proposal`, ….
#[derive(Debug, Clone)]
pub(super) struct Notice {
    pub method: String,
    pub params: Value,
}

/// One open connection: its calls and its notifications.
pub(super) struct Connected {
    pub link: Link,
    pub notices: mpsc::UnboundedReceiver<Notice>,
}

/// Opens connections on the runtime it was started on; cloned into `Send` code.
#[derive(Clone)]
pub(super) struct Dialer {
    requests: mpsc::UnboundedSender<Dial>,
}

struct Dial {
    endpoint: Arc<Endpoint>,
    reply: oneshot::Sender<Result<Connected, AcpError>>,
}

impl Dialer {
    /// Starts the task that dials, on the current actix runtime.
    pub(super) fn start() -> Dialer {
        let (requests, mut received) = mpsc::unbounded_channel::<Dial>();
        actix_web::rt::spawn(async move {
            while let Some(dial) = received.recv().await {
                actix_web::rt::spawn(async move {
                    let _ = dial.reply.send(connect(&dial.endpoint).await);
                });
            }
        });
        Dialer { requests }
    }

    /// A new connection to `endpoint`.
    pub(super) async fn dial(&self, endpoint: Arc<Endpoint>) -> Result<Connected, AcpError> {
        let (reply, answer) = oneshot::channel();
        self.requests
            .send(Dial { endpoint, reply })
            .map_err(|_| AcpError::Disconnected)?;
        answer.await.map_err(|_| AcpError::Disconnected)?
    }
}

/// Calls on one connection; the connection closes when the last clone is dropped.
#[derive(Clone)]
pub(super) struct Link {
    calls: mpsc::UnboundedSender<Call>,
}

struct Call {
    method: String,
    params: Value,
    reply: oneshot::Sender<Result<Value, AcpError>>,
}

impl Link {
    /// Calls `method` and waits for its result; a JSON-RPC error becomes
    /// [`AcpError::Rpc`].
    pub(super) async fn call(&self, method: &str, params: Value) -> Result<Value, AcpError> {
        let (reply, answer) = oneshot::channel();
        self.calls
            .send(Call {
                method: method.to_string(),
                params,
                reply,
            })
            .map_err(|_| AcpError::Disconnected)?;
        answer.await.map_err(|_| AcpError::Disconnected)?
    }
}

async fn connect(endpoint: &Endpoint) -> Result<Connected, AcpError> {
    let failed = |reason: String| AcpError::Connect {
        url: shown(&endpoint.url),
        reason,
    };
    let client = if endpoint.url.starts_with("wss://") {
        let tls = tls_config().map_err(failed)?;
        awc::Client::builder()
            .connector(awc::Connector::new().rustls_0_23(tls))
            .finish()
    } else if endpoint.url.starts_with("ws://") {
        awc::Client::new()
    } else {
        return Err(failed("the URL must start with ws:// or wss://".into()));
    };
    let mut request = client
        .ws(endpoint.url.as_str())
        .max_frame_size(MAX_FRAME_BYTES);
    if let Some(token) = &endpoint.token {
        request = request.bearer_auth(token.expose());
    }
    let (_, framed) = request.connect().await.map_err(|error| match error {
        WsClientError::InvalidResponseStatus(status)
            if status == awc::http::StatusCode::UNAUTHORIZED =>
        {
            let url = shown(&endpoint.url);
            let file = endpoint
                .token_file
                .as_ref()
                .map_or_else(|| "a token file".into(), |file| file.display().to_string());
            match endpoint.token {
                Some(_) => AcpError::TokenRefused { url, file },
                None => AcpError::NoToken { url, file },
            }
        }
        error => failed(error.to_string()),
    })?;
    let (calls, calls_received) = mpsc::unbounded_channel();
    let (notices_sent, notices) = mpsc::unbounded_channel();
    actix_web::rt::spawn(Pump::new(notices_sent).run(framed, calls_received));
    Ok(Connected {
        link: Link { calls },
        notices,
    })
}

/// `url` as errors show it: without its query, fragment and user information, any of
/// which may carry a token (rummy takes one in `?token=`).
fn shown(url: &str) -> String {
    let end = url.find(['?', '#']).unwrap_or(url.len());
    let url = &url[..end];
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let authority_end = rest.find('/').unwrap_or(rest.len());
    let host = match rest[..authority_end].rfind('@') {
        Some(at) => &rest[at + 1..],
        None => rest,
    };
    format!("{scheme}://{host}")
}

/// TLS for `wss://`: the system's root certificates (`SSL_CERT_FILE` and `SSL_CERT_DIR`
/// name others), HTTP/1.1 (a WebSocket upgrade), rustls' ring provider.
fn tls_config() -> Result<Arc<rustls::ClientConfig>, String> {
    let found = rustls_native_certs::load_native_certs();
    let mut roots = rustls::RootCertStore::empty();
    let (added, _) = roots.add_parsable_certificates(found.certs);
    if added == 0 {
        let why = found
            .errors
            .first()
            .map(|error| format!(" ({error})"))
            .unwrap_or_default();
        return Err(format!(
            "no root certificates to verify the server with{why}: install the system's \
             (ca-certificates), or name a CA file in SSL_CERT_FILE"
        ));
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|error| error.to_string())?
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// The task that owns one socket.
struct Pump {
    notices: mpsc::UnboundedSender<Notice>,
    pending: HashMap<u64, Call>,
    next_id: u64,
    /// A text message arriving in continuation frames.
    partial: Option<BytesMut>,
}

impl Pump {
    fn new(notices: mpsc::UnboundedSender<Notice>) -> Pump {
        Pump {
            notices,
            pending: HashMap::new(),
            next_id: 0,
            partial: None,
        }
    }

    async fn run(
        mut self,
        mut framed: Framed<BoxedSocket, Codec>,
        mut calls: mpsc::UnboundedReceiver<Call>,
    ) {
        loop {
            tokio::select! {
                call = calls.recv() => {
                    let Some(call) = call else { break };
                    self.next_id += 1;
                    let frame = json!({
                        "jsonrpc": "2.0",
                        "id": self.next_id,
                        "method": call.method,
                        "params": call.params,
                    });
                    if framed.send(Message::Text(frame.to_string().into())).await.is_err() {
                        let _ = call.reply.send(Err(AcpError::Disconnected));
                        break;
                    }
                    self.pending.insert(self.next_id, call);
                }
                frame = framed.next() => match frame {
                    Some(Ok(Frame::Text(bytes))) => self.deliver(&bytes),
                    Some(Ok(Frame::Continuation(item))) => self.continued(item),
                    Some(Ok(Frame::Ping(payload))) => {
                        if framed.send(Message::Pong(payload)).await.is_err() {
                            break;
                        }
                    }
                    Some(Ok(Frame::Close(_))) | Some(Err(_)) | None => break,
                    Some(Ok(_)) => {}
                },
            }
        }
        for (_, call) in self.pending.drain() {
            let _ = call.reply.send(Err(AcpError::Disconnected));
        }
        let _ = framed.close().await;
    }

    fn continued(&mut self, item: Item) {
        match item {
            Item::FirstText(bytes) => self.partial = Some(BytesMut::from(&bytes[..])),
            Item::Continue(bytes) => {
                if let Some(partial) = &mut self.partial {
                    partial.extend_from_slice(&bytes);
                }
            }
            Item::Last(bytes) => {
                if let Some(mut partial) = self.partial.take() {
                    partial.extend_from_slice(&bytes);
                    self.deliver(&partial);
                }
            }
            Item::FirstBinary(_) => self.partial = None,
        }
    }

    /// A reply goes to its call, a notification to the session.
    fn deliver(&mut self, bytes: &[u8]) {
        let Ok(mut message) = serde_json::from_slice::<Value>(bytes) else {
            tracing::warn!("rummy sent a frame that is not JSON");
            return;
        };
        if let Some(id) = message.get("id").and_then(Value::as_u64) {
            let Some(call) = self.pending.remove(&id) else {
                return;
            };
            let answer = match message.get_mut("error") {
                Some(error) => Err(AcpError::Rpc {
                    code: error
                        .get("code")
                        .and_then(Value::as_i64)
                        .and_then(|code| i32::try_from(code).ok())
                        .unwrap_or(-32603),
                    message: error
                        .get("message")
                        .and_then(Value::as_str)
                        .unwrap_or("rummy answered with an error")
                        .to_string(),
                    data: error.get_mut("data").map(Value::take),
                    method: call.method,
                }),
                None => Ok(message
                    .get_mut("result")
                    .map(Value::take)
                    .unwrap_or_default()),
            };
            let _ = call.reply.send(answer);
        } else if let Some(method) = message.get("method").and_then(Value::as_str) {
            let notice = Notice {
                method: method.to_string(),
                params: message
                    .get_mut("params")
                    .map(Value::take)
                    .unwrap_or_default(),
            };
            let _ = self.notices.send(notice);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_url_is_shown_without_what_may_carry_a_token() {
        assert_eq!(shown("ws://127.0.0.1:3044/"), "ws://127.0.0.1:3044/");
        assert_eq!(
            shown("wss://team.example/rummy?token=s3cret#top"),
            "wss://team.example/rummy"
        );
        assert_eq!(
            shown("wss://mo:s3cret@team.example/"),
            "wss://team.example/"
        );
        assert_eq!(shown("wss://mo@team.example"), "wss://team.example");
        assert_eq!(shown("wss://team.example/a@b"), "wss://team.example/a@b");
        assert_eq!(shown("team.example?token=s3cret"), "team.example");
    }
}
