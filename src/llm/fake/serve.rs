//! The fake's request handlers and the state they share with the `FakeLlm` handle.

use std::collections::VecDeque;
use std::sync::{Mutex, MutexGuard, PoisonError};

use actix_web::http::StatusCode;
use actix_web::{web, HttpRequest, HttpResponse};
use serde_json::Value;
use tokio::sync::watch;

use std::time::Duration;

use super::{
    wire, FixedPaths, Recorded, Recording, Reply, Step, StreamEnd, Streamed, WhenExhausted,
};

/// Request bodies up to this size are accepted (actix's default limit is 256 KiB; a turn's
/// packet can be far larger).
const MAX_REQUEST_BYTES: usize = 64 * 1024 * 1024;

/// How long a broken stream's last piece has to reach the client before the break.
const BREAK_AFTER: Duration = Duration::from_millis(50);

/// State shared by the handlers and the `FakeLlm` handle.
pub(super) struct Shared {
    pub(super) script: Mutex<VecDeque<Step>>,
    pub(super) when_exhausted: WhenExhausted,
    pub(super) n_ctx: u32,
    pub(super) recording: Recording,
    pub(super) requests: Mutex<Vec<Recorded>>,
    /// Requests that took a step.
    pub(super) received: watch::Sender<usize>,
    pub(super) dropped: watch::Sender<usize>,
    /// How many requests took a `Step::Held`, numbering them in arrival order.
    pub(super) held: Mutex<usize>,
    /// How many held requests `FakeLlm::release` let go.
    pub(super) released: watch::Sender<usize>,
}

impl Shared {
    /// Records a request and takes its step; returns the step and the request's number.
    fn record(&self, request: &Recorded) -> (Step, usize) {
        if self.recording == Recording::Kept {
            lock(&self.requests).push(request.clone());
        }
        let mut number = 0;
        self.received.send_modify(|received| {
            *received += 1;
            number = *received;
        });
        let step = lock(&self.script).pop_front();
        let step = step.unwrap_or_else(|| match &self.when_exhausted {
            WhenExhausted::Reply(reply) => Step::Reply(reply.clone()),
            WhenExhausted::Respond(respond) => respond(&request.body),
            WhenExhausted::Error(status) => Step::error(*status),
        });
        (step, number)
    }

    /// Numbers a held request, then waits until the test releases that many.
    async fn hold(&self) {
        let position = {
            let mut held = lock(&self.held);
            *held += 1;
            *held
        };
        let mut released = self.released.subscribe();
        // The sender lives as long as `self`.
        let _ = released.wait_for(|released| *released >= position).await;
    }
}

/// Every request takes a step but those to the paths the server answers itself.
pub(super) fn routes(config: &mut web::ServiceConfig, fixed_paths: FixedPaths) {
    config.app_data(web::PayloadConfig::new(MAX_REQUEST_BYTES));
    if fixed_paths == FixedPaths::Answered {
        config
            .route("/props", web::get().to(props))
            .route("/v1/models", web::get().to(models))
            .route("/stats", web::get().to(stats));
    }
    config.default_service(web::to(scripted));
}

/// Counts an abandoned request: actix drops the handler's future (or a streamed body) when
/// the client goes away, and this guard with it, unless the answer was complete first.
struct AbandonGuard {
    dropped: Option<web::Data<Shared>>,
}

impl AbandonGuard {
    fn answered(&mut self) {
        self.dropped = None;
    }
}

impl Drop for AbandonGuard {
    fn drop(&mut self) {
        if let Some(shared) = &self.dropped {
            shared.dropped.send_modify(|dropped| *dropped += 1);
        }
    }
}

async fn scripted(
    shared: web::Data<Shared>,
    request: HttpRequest,
    body: web::Bytes,
) -> HttpResponse {
    let body = if body.is_empty() {
        Value::Null
    } else {
        match serde_json::from_slice(&body) {
            Ok(body) => body,
            Err(error) => return error_response(400, None, &format!("invalid JSON body: {error}")),
        }
    };
    let request = Recorded {
        method: request.method().to_string(),
        path: request.path().to_owned(),
        headers: request
            .headers()
            .iter()
            .map(|(name, value)| {
                let value = String::from_utf8_lossy(value.as_bytes()).into_owned();
                (name.as_str().to_owned(), value)
            })
            .collect(),
        body,
        at: std::time::Instant::now(),
    };
    let (step, number) = shared.record(&request);
    let mut guard = AbandonGuard {
        dropped: Some(shared.clone()),
    };
    let answer = |reply: &Reply, pause: Duration| match request
        .body
        .get("stream")
        .and_then(Value::as_bool)
    {
        Some(true) => {
            Answer::Streamed(wire::completion_events(&request.body, reply, number, pause))
        }
        _ => Answer::Now(HttpResponse::Ok().json(wire::completion(&request.body, reply, number))),
    };
    let answer = match step {
        Step::Reply(reply) => answer(&reply, Duration::ZERO),
        Step::Paced(reply, pause) => answer(&reply, pause),
        Step::Stream(streamed) => Answer::Streamed(streamed),
        Step::Json(body) => Answer::Now(HttpResponse::Ok().json(body)),
        Step::Error {
            status,
            retry_after,
        } => Answer::Now(error_response(
            status,
            retry_after,
            &format!("scripted error {status}"),
        )),
        Step::Delayed { delay, reply } => {
            tokio::time::sleep(delay).await;
            answer(&reply, Duration::ZERO)
        }
        Step::Held(reply) => {
            shared.hold().await;
            answer(&reply, Duration::ZERO)
        }
        Step::Hang => std::future::pending().await,
    };
    match answer {
        Answer::Now(response) => {
            guard.answered();
            response
        }
        Answer::Streamed(streamed) => streaming(streamed, guard),
    }
}

/// An answer ready now, or a body still to stream.
enum Answer {
    Now(HttpResponse),
    Streamed(Streamed),
}

/// Sends `streamed`'s pieces as they are due; `guard` counts the request abandoned when the
/// client goes away before the body's end.
fn streaming(streamed: Streamed, guard: AbandonGuard) -> HttpResponse {
    let Streamed {
        content_type,
        pieces,
        end,
    } = streamed;
    let state = (VecDeque::from(pieces), Some(end), guard);
    let body = futures_util::stream::unfold(state, |(mut pieces, end, mut guard)| async move {
        if let Some((pause, piece)) = pieces.pop_front() {
            if !pause.is_zero() {
                tokio::time::sleep(pause).await;
            }
            return Some((Ok(web::Bytes::from(piece)), (pieces, end, guard)));
        }
        match end? {
            StreamEnd::Complete => {
                guard.answered();
                None
            }
            StreamEnd::Broken => {
                // actix drops what it has not written yet with the connection: give it
                // time to write the pieces first.
                tokio::time::sleep(BREAK_AFTER).await;
                guard.answered();
                let broken = std::io::Error::other("the fake LLM broke the stream");
                Some((Err(broken), (pieces, None, guard)))
            }
            StreamEnd::Hang => std::future::pending().await,
        }
    });
    HttpResponse::Ok()
        .content_type(content_type)
        .streaming(body)
}

async fn props(shared: web::Data<Shared>) -> HttpResponse {
    HttpResponse::Ok().json(wire::props(shared.n_ctx))
}

async fn models(shared: web::Data<Shared>) -> HttpResponse {
    HttpResponse::Ok().json(wire::models(shared.n_ctx))
}

async fn stats(shared: web::Data<Shared>) -> HttpResponse {
    HttpResponse::Ok().json(wire::stats(*shared.received.borrow()))
}

fn error_response(status: u16, retry_after: Option<String>, message: &str) -> HttpResponse {
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut response = HttpResponse::build(status);
    if let Some(retry_after) = retry_after {
        response.insert_header(("retry-after", retry_after));
    }
    response.json(wire::error(status.as_u16(), message))
}

pub(super) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
