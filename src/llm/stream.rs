//! Reading a streamed completion: the body of a 2xx answer, as server-sent events
//! (`text/event-stream`: OpenAI-compatible servers, Ollama's `/v1`, OpenRouter, xAI's
//! Responses), as JSON lines (`application/x-ndjson`: Ollama's own API), or as one JSON
//! document from a server that ignored `stream`. The reply's text is gathered as it comes
//! and shown to a [`TextListener`] on the way; the finished [`ChatResponse`] is the same as
//! an unstreamed answer's, its usage as the provider reported it in its last events (the
//! ledger counts what a provider leaves out).
//!
//! Bytes are split into lines before they are decoded, so a chunk boundary inside a UTF-8
//! character costs nothing. A stream that breaks once some of the reply has arrived (the
//! connection drops, an event is not JSON, the body ends before the provider's end marker)
//! is [`LlmError::StreamBroken`], which keeps the text that arrived and is not retried; one
//! that breaks before any text is a connection failure like any other.

mod chat;
mod responses;

use std::time::Duration;

use futures_util::{Stream, StreamExt};
use reqwest::header::CONTENT_TYPE;
use serde_json::Value;

use super::chat::ChatResponse;
use super::chat_completions;
use super::error::LlmError;
use super::route::ProviderKind;

/// Told the reply's text as it grows, for the clients that watch the turn.
pub trait TextListener: Send + Sync {
    /// The whole text so far, after a piece was added; `done` once the stream ended.
    fn grew(&self, text: &str, done: bool);
}

/// How a stream's events build the answer.
enum Fold {
    Chat(chat::ChatFold),
    Responses(responses::ResponsesFold),
}

impl Fold {
    /// Takes one event; true once the provider said the reply is complete.
    fn take(&mut self, event: &Value) -> Result<bool, LlmError> {
        match self {
            Fold::Chat(fold) => fold.take(event),
            Fold::Responses(fold) => fold.take(event),
        }
    }

    fn text(&self) -> &str {
        match self {
            Fold::Chat(fold) => fold.text(),
            Fold::Responses(fold) => fold.text(),
        }
    }

    fn finish(self) -> Result<ChatResponse, LlmError> {
        match self {
            Fold::Chat(fold) => Ok(fold.finish()),
            Fold::Responses(fold) => fold.finish(),
        }
    }
}

/// How a body is framed.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Framing {
    Events,
    Lines,
    Whole,
}

fn framing(response: &reqwest::Response) -> Framing {
    let content_type = response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .unwrap_or_default()
        .to_ascii_lowercase();
    if content_type.starts_with("text/event-stream") {
        Framing::Events
    } else if content_type.starts_with("application/x-ndjson") {
        Framing::Lines
    } else {
        Framing::Whole
    }
}

/// Reads the answer of a 2xx `response` to a streamed request for `requested_model`.
pub(super) async fn read(
    provider: ProviderKind,
    requested_model: &str,
    response: reqwest::Response,
    listener: Option<&dyn TextListener>,
    timeout: Duration,
) -> Result<ChatResponse, LlmError> {
    let framing = framing(&response);
    let transport = |error: reqwest::Error| LlmError::transport(provider, error, timeout);
    if framing == Framing::Whole {
        let bytes = response.bytes().await.map_err(transport)?;
        let body: Value = serde_json::from_slice(&bytes).map_err(|error| LlmError::Decode {
            provider,
            message: error.to_string(),
        })?;
        let answer = match provider {
            ProviderKind::Xai => super::responses::parse_response(requested_model, &body),
            _ => chat_completions::parse_response(provider, requested_model, &body),
        }?;
        if let Some(listener) = listener {
            listener.grew(&answer.content, true);
        }
        return Ok(answer);
    }
    let mut fold = match provider {
        ProviderKind::Xai => Fold::Responses(responses::ResponsesFold::new(requested_model)),
        _ => Fold::Chat(chat::ChatFold::new(provider, requested_model)),
    };
    let body = response.bytes_stream();
    let ended = match framing {
        Framing::Events => events(body, &mut fold, listener, provider).await,
        _ => lines(body, &mut fold, listener, provider).await,
    };
    let broken = |message: String, fold: &Fold| LlmError::StreamBroken {
        provider,
        message,
        partial: fold.text().to_owned(),
    };
    match ended {
        Ok(true) => {}
        Ok(false) => return Err(broken("it ended before the provider's end".into(), &fold)),
        Err(Broke::Body(error)) if fold.text().is_empty() => return Err(transport(error)),
        Err(Broke::Body(error)) => {
            return Err(broken(transport(error).to_string(), &fold));
        }
        Err(Broke::Event(message)) => return Err(broken(message, &fold)),
        Err(Broke::Said(error)) => return Err(error),
    }
    if let Some(listener) = listener {
        listener.grew(fold.text(), true);
    }
    fold.finish()
}

/// Why a stream stopped before its end.
enum Broke {
    /// The body could not be read.
    Body(reqwest::Error),
    /// An event was not what the API sends.
    Event(String),
    /// The provider sent an error in the stream.
    Said(LlmError),
}

/// Folds one event's data; true at the end.
fn fold_data(
    data: &str,
    fold: &mut Fold,
    listener: Option<&dyn TextListener>,
) -> Result<bool, Broke> {
    let data = data.trim();
    if data == "[DONE]" {
        return Ok(true);
    }
    if data.is_empty() {
        return Ok(false);
    }
    let event: Value = serde_json::from_str(data)
        .map_err(|error| Broke::Event(format!("an event is not JSON: {error}")))?;
    let before = fold.text().len();
    let done = fold.take(&event).map_err(Broke::Said)?;
    if let Some(listener) = listener.filter(|_| fold.text().len() != before) {
        listener.grew(fold.text(), false);
    }
    Ok(done)
}

/// Server-sent events until the end marker (or the body's end: false).
async fn events(
    body: impl Stream<Item = Result<bytes::Bytes, reqwest::Error>>,
    fold: &mut Fold,
    listener: Option<&dyn TextListener>,
    provider: ProviderKind,
) -> Result<bool, Broke> {
    let mut events = std::pin::pin!(sse_stream::SseStream::from_bytes_stream(body));
    while let Some(event) = events.next().await {
        let event = event.map_err(|error| match error {
            sse_stream::Error::Body(error) => match error.downcast::<reqwest::Error>() {
                Ok(error) => Broke::Body(*error),
                Err(error) => Broke::Event(error.to_string()),
            },
            error => Broke::Event(format!("{provider} sent an invalid event: {error}")),
        })?;
        let Some(data) = event.data else { continue };
        if fold_data(&data, fold, listener)? {
            return Ok(true);
        }
    }
    Ok(false)
}

/// JSON lines until one says the reply is done (or the body's end: false).
async fn lines(
    body: impl Stream<Item = Result<bytes::Bytes, reqwest::Error>>,
    fold: &mut Fold,
    listener: Option<&dyn TextListener>,
    provider: ProviderKind,
) -> Result<bool, Broke> {
    let mut body = std::pin::pin!(body);
    let mut pending = Vec::new();
    while let Some(bytes) = body.next().await {
        pending.extend_from_slice(&bytes.map_err(Broke::Body)?);
        while let Some(end) = pending.iter().position(|byte| *byte == b'\n') {
            let line: Vec<u8> = pending.drain(..=end).collect();
            let line = std::str::from_utf8(&line).map_err(|error| {
                Broke::Event(format!("{provider} sent a line that is not UTF-8: {error}"))
            })?;
            if fold_data(line, fold, listener)? {
                return Ok(true);
            }
        }
    }
    let rest = std::str::from_utf8(&pending).map_err(|error| {
        Broke::Event(format!("{provider} sent a line that is not UTF-8: {error}"))
    })?;
    fold_data(rest, fold, listener)
}
