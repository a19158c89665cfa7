//! A JSON-RPC 2.0 client over one WebSocket: sends a request, waits for the reply with its
//! id, counts the notifications that arrive meanwhile and answers the server's pings.

use std::time::{Duration, Instant};

use actix_codec::Framed;
use awc::ws::{Codec, Frame, Message};
use awc::BoxedSocket;
use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};

/// Largest frame accepted from the server (a `getEntries` over a big store is large).
const MAX_FRAME_BYTES: usize = 64 * 1024 * 1024;

/// Why a call got no answer.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CallError {
    /// No reply within the timeout.
    #[error("no reply in time")]
    Timeout,
    /// The connection closed or broke.
    #[error("connection lost: {0}")]
    Lost(String),
}

/// Why a connection could not be opened.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub(crate) struct ConnectError(pub String);

/// The answer to one request.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Answer {
    /// `result`.
    Result(Value),
    /// `error` with its code and message.
    Error {
        /// `error.code`.
        code: i64,
        /// `error.message`.
        message: String,
    },
}

/// One open connection.
pub(crate) struct RpcClient {
    framed: Framed<BoxedSocket, Codec>,
    next_id: u64,
    notifications: u64,
}

impl RpcClient {
    /// Opens a WebSocket to `url`, presenting `token` as a bearer token when given.
    pub(crate) async fn connect(
        url: &str,
        token: Option<&str>,
        timeout: Duration,
    ) -> Result<RpcClient, ConnectError> {
        let client = awc::Client::builder().timeout(timeout).finish();
        let mut request = client.ws(url).max_frame_size(MAX_FRAME_BYTES);
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        let (_, framed) = request
            .connect()
            .await
            .map_err(|error| ConnectError(describe_connect_error(&error)))?;
        Ok(RpcClient {
            framed,
            next_id: 0,
            notifications: 0,
        })
    }

    /// Notifications received so far.
    pub(crate) fn notifications(&self) -> u64 {
        self.notifications
    }

    /// Sends `method` with `params` and waits up to `timeout` for its reply; returns the
    /// answer and the time from sending to the reply.
    pub(crate) async fn call(
        &mut self,
        method: &str,
        params: Value,
        timeout: Duration,
    ) -> Result<(Answer, Duration), CallError> {
        self.next_id += 1;
        let id = self.next_id;
        let request = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let started = Instant::now();
        let exchange = async {
            self.framed
                .send(Message::Text(request.to_string().into()))
                .await
                .map_err(|error| CallError::Lost(error.to_string()))?;
            self.reply_to(id).await
        };
        let answer = tokio::time::timeout(timeout, exchange)
            .await
            .map_err(|_| CallError::Timeout)??;
        Ok((answer, started.elapsed()))
    }

    /// Closes the connection politely: sends a close frame and waits, at most `timeout`,
    /// for the server's before dropping the socket. Errors are of no interest at this point.
    pub(crate) async fn close(mut self, timeout: Duration) {
        let handshake = async {
            if self.framed.send(Message::Close(None)).await.is_err() {
                return;
            }
            while let Some(Ok(frame)) = self.framed.next().await {
                if matches!(frame, Frame::Close(_)) {
                    return;
                }
            }
        };
        let _ = tokio::time::timeout(timeout, handshake).await;
    }

    /// Stays open until `until`, answering the server's pings and ignoring anything else;
    /// whether the connection lasted that long.
    pub(crate) async fn idle_until(mut self, until: Instant) -> bool {
        let listening = async {
            while let Some(Ok(frame)) = self.framed.next().await {
                let answered = match frame {
                    Frame::Ping(payload) => self.framed.send(Message::Pong(payload)).await,
                    Frame::Close(_) => return,
                    _ => Ok(()),
                };
                if answered.is_err() {
                    return;
                }
            }
        };
        tokio::time::timeout_at(until.into(), listening)
            .await
            .is_err()
    }

    async fn reply_to(&mut self, id: u64) -> Result<Answer, CallError> {
        loop {
            let frame = match self.framed.next().await {
                Some(Ok(frame)) => frame,
                Some(Err(error)) => return Err(CallError::Lost(error.to_string())),
                None => return Err(CallError::Lost("stream ended".into())),
            };
            let text = match frame {
                Frame::Text(text) => text,
                Frame::Ping(payload) => {
                    self.framed
                        .send(Message::Pong(payload))
                        .await
                        .map_err(|error| CallError::Lost(error.to_string()))?;
                    continue;
                }
                Frame::Close(reason) => return Err(CallError::Lost(format!("closed: {reason:?}"))),
                Frame::Binary(_) | Frame::Continuation(_) | Frame::Pong(_) => continue,
            };
            let Ok(message) = serde_json::from_slice::<Value>(&text) else {
                return Err(CallError::Lost(
                    "the server sent a frame that is not JSON".into(),
                ));
            };
            if message.get("id").is_none() {
                self.notifications += 1;
                continue;
            }
            if message.get("id").and_then(Value::as_u64) == Some(id) {
                return Ok(answer_of(message));
            }
        }
    }
}

/// The answer a reply carries.
fn answer_of(mut reply: Value) -> Answer {
    match reply.get("error") {
        Some(error) => Answer::Error {
            code: error
                .get("code")
                .and_then(Value::as_i64)
                .unwrap_or_default(),
            message: error
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
        },
        None => Answer::Result(reply.get_mut("result").map(Value::take).unwrap_or_default()),
    }
}

/// A short reason, so failures group well in the report.
fn describe_connect_error(error: &awc::error::WsClientError) -> String {
    use awc::error::WsClientError;
    match error {
        WsClientError::InvalidResponseStatus(status) => format!("HTTP {}", status.as_u16()),
        WsClientError::SendRequest(awc::error::SendRequestError::Timeout) => "timeout".into(),
        WsClientError::SendRequest(awc::error::SendRequestError::Connect(connect)) => {
            format!("connect: {connect}")
        }
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_result_reply_is_its_result() {
        let answer = answer_of(json!({"jsonrpc": "2.0", "id": 1, "result": {"ok": true}}));
        assert_eq!(answer, Answer::Result(json!({"ok": true})));
    }

    #[test]
    fn an_error_reply_keeps_code_and_message() {
        let answer = answer_of(json!({
            "jsonrpc": "2.0", "id": 1,
            "error": {"code": -32602, "message": "run is required"}
        }));
        assert_eq!(
            answer,
            Answer::Error {
                code: -32602,
                message: "run is required".into()
            }
        );
    }
}
