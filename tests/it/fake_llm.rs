//! A scripted fake OpenAI-compatible LLM server for deterministic loop tests.
//!
//! `FakeLlm::start(script)` serves on 127.0.0.1 port 0 (actix-web, inside the test's actix
//! system), so the server's real reqwest client, retries and timeouts are exercised over real
//! HTTP. Each `POST /v1/chat/completions` takes the next `Step` of the script: a reply, an
//! HTTP error (optionally with Retry-After), a reply after a delay, or a hang that lasts until
//! the client goes away. When the script is used up the server answers with its
//! `WhenExhausted` choice, by default the reply `<summarize>done</summarize>` so a loop that
//! asks once more than scripted still ends cleanly; tests that must catch such an extra call
//! choose `WhenExhausted::Error(500)` or assert on `requests()`. `GET /props` (llama.cpp) and
//! `GET /v1/models` report the configured context size for discovery.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use actix_web::dev::ServerHandle;
use actix_web::http::StatusCode;
use actix_web::{web, App, HttpResponse, HttpServer};
use serde_json::Value;
use tokio::sync::watch;

/// The reply sent when the script is used up, unless configured otherwise.
pub const DEFAULT_FINAL_REPLY: &str = "<summarize>done</summarize>";

/// The context size `/props` and `/v1/models` report unless configured otherwise (SmolLM2's).
pub const DEFAULT_N_CTX: u32 = 8192;

/// The model id `/v1/models` lists, and the one replies name when the request names none.
pub const FAKE_MODEL_ID: &str = "fake-llm";

/// How long a `wait_for_*` call waits before failing the test instead of hanging it.
const WAIT_LIMIT: Duration = Duration::from_secs(30);

/// Request bodies up to this size are accepted (actix's default limit is 256 KiB).
const MAX_REQUEST_BYTES: usize = 64 * 1024 * 1024;

/// Token accounting reported with one reply.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Usage {
    /// `usage.prompt_tokens`.
    pub prompt_tokens: u64,
    /// `usage.completion_tokens`.
    pub completion_tokens: u64,
    /// `usage.prompt_tokens_details.cached_tokens`.
    pub cached_tokens: u64,
    /// `usage.cost` in US dollars.
    pub cost: f64,
}

/// One assistant answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Reply {
    /// `choices[0].message.content`.
    pub content: String,
    /// `choices[0].message.reasoning_content`, left out when `None`.
    pub reasoning_content: Option<String>,
    /// Reported usage; `None` estimates it at one token per 4 characters of the request's
    /// message contents and of the reply's content, and a cost of 0.
    pub usage: Option<Usage>,
}

impl Reply {
    /// A reply with this content, no reasoning and estimated usage.
    pub fn new(content: impl Into<String>) -> Reply {
        Reply {
            content: content.into(),
            reasoning_content: None,
            usage: None,
        }
    }

    /// The same reply with reasoning text beside the content.
    pub fn with_reasoning(self, reasoning: impl Into<String>) -> Reply {
        Reply {
            reasoning_content: Some(reasoning.into()),
            ..self
        }
    }

    /// The same reply reporting exactly this usage.
    pub fn with_usage(self, usage: Usage) -> Reply {
        Reply {
            usage: Some(usage),
            ..self
        }
    }
}

/// What the fake does with one chat completion request.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// Answer 200 with this reply.
    Reply(Reply),
    /// Answer with this HTTP status, an OpenAI-style error body and, when given, this
    /// `Retry-After` header value (seconds or an HTTP date).
    Error {
        /// The HTTP status; an invalid one becomes 500.
        status: u16,
        /// The `Retry-After` header value.
        retry_after: Option<String>,
    },
    /// Wait, then answer 200 with the reply. A client that gives up meanwhile counts as a
    /// dropped connection.
    Delayed {
        /// How long to wait first.
        delay: Duration,
        /// The reply sent afterwards.
        reply: Reply,
    },
    /// Never answer; the connection counts as dropped once the client goes away.
    Hang,
}

impl Step {
    /// A 200 reply with this content.
    pub fn reply(content: impl Into<String>) -> Step {
        Step::Reply(Reply::new(content))
    }

    /// An HTTP error without Retry-After.
    pub fn error(status: u16) -> Step {
        Step::Error {
            status,
            retry_after: None,
        }
    }

    /// An HTTP error with a Retry-After header.
    pub fn error_retry_after(status: u16, retry_after: impl Into<String>) -> Step {
        Step::Error {
            status,
            retry_after: Some(retry_after.into()),
        }
    }

    /// A reply sent after a delay.
    pub fn delayed(delay: Duration, reply: Reply) -> Step {
        Step::Delayed { delay, reply }
    }
}

impl From<Reply> for Step {
    fn from(reply: Reply) -> Step {
        Step::Reply(reply)
    }
}

/// The answer to every request after the script is used up.
#[derive(Debug, Clone, PartialEq)]
pub enum WhenExhausted {
    /// Answer 200 with this reply (the default: `DEFAULT_FINAL_REPLY`).
    Reply(Reply),
    /// Answer with this HTTP status.
    Error(u16),
}

impl Default for WhenExhausted {
    fn default() -> Self {
        WhenExhausted::Reply(Reply::new(DEFAULT_FINAL_REPLY))
    }
}

/// Options of a fake server before it starts.
#[derive(Debug)]
pub struct FakeLlmBuilder {
    script: VecDeque<Step>,
    n_ctx: u32,
    when_exhausted: WhenExhausted,
}

impl FakeLlmBuilder {
    /// The context size reported by `/props` and `/v1/models`.
    pub fn n_ctx(self, n_ctx: u32) -> FakeLlmBuilder {
        FakeLlmBuilder { n_ctx, ..self }
    }

    /// The answer once the script is used up.
    pub fn when_exhausted(self, when_exhausted: WhenExhausted) -> FakeLlmBuilder {
        FakeLlmBuilder {
            when_exhausted,
            ..self
        }
    }

    /// Binds 127.0.0.1 port 0 and starts serving. Call it inside an actix system
    /// (`#[actix_web::test]`); the server stops when the `FakeLlm` is dropped.
    pub fn start(self) -> FakeLlm {
        let shared = web::Data::new(Shared {
            script: Mutex::new(self.script),
            when_exhausted: self.when_exhausted,
            n_ctx: self.n_ctx,
            requests: Mutex::new(Vec::new()),
            received: watch::Sender::new(0),
            dropped: watch::Sender::new(0),
        });
        let app_state = shared.clone();
        let server = HttpServer::new(move || {
            App::new()
                .app_data(app_state.clone())
                .app_data(web::PayloadConfig::new(MAX_REQUEST_BYTES))
                .route("/v1/chat/completions", web::post().to(chat_completions))
                .route("/props", web::get().to(props))
                .route("/v1/models", web::get().to(models))
        })
        .workers(1)
        .disable_signals()
        .shutdown_timeout(0)
        .h1_allow_half_closed(false)
        .bind(("127.0.0.1", 0));
        let server = match server {
            Ok(server) => server,
            Err(error) => panic!("fake LLM: cannot bind 127.0.0.1:0: {error}"),
        };
        let Some(address) = server.addrs().first().copied() else {
            panic!("fake LLM: bound no address");
        };
        let server = server.run();
        let handle = server.handle();
        actix_web::rt::spawn(server);
        FakeLlm {
            base_url: format!("http://{address}"),
            shared: shared.into_inner(),
            handle,
        }
    }
}

/// A running fake OpenAI-compatible server.
pub struct FakeLlm {
    base_url: String,
    shared: Arc<Shared>,
    handle: ServerHandle,
}

impl FakeLlm {
    /// Starts a server answering with `script`, the defaults otherwise (see `builder`).
    pub fn start(script: impl IntoIterator<Item = Step>) -> FakeLlm {
        FakeLlm::builder(script).start()
    }

    /// Options for a server answering with `script`: context size `DEFAULT_N_CTX` and
    /// `WhenExhausted::default()` unless changed.
    pub fn builder(script: impl IntoIterator<Item = Step>) -> FakeLlmBuilder {
        FakeLlmBuilder {
            script: script.into_iter().collect(),
            n_ctx: DEFAULT_N_CTX,
            when_exhausted: WhenExhausted::default(),
        }
    }

    /// `http://127.0.0.1:<port>`, the value for `OPENAI_BASE_URL` (with or without `/v1`).
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    /// Every chat completion request body received so far, in arrival order (including
    /// requests whose client later went away).
    pub fn requests(&self) -> Vec<Value> {
        lock(&self.shared.requests).clone()
    }

    /// How many requests the client abandoned before the answer was ready.
    pub fn dropped(&self) -> usize {
        *self.shared.dropped.borrow()
    }

    /// Waits until at least `count` chat completion requests have arrived; fails the test
    /// after 30 s.
    pub async fn wait_for_requests(&self, count: usize) {
        wait_for(&self.shared.received, count, "requests").await;
    }

    /// Waits until at least `count` requests were abandoned by their client; fails the test
    /// after 30 s.
    pub async fn wait_for_dropped(&self, count: usize) {
        wait_for(&self.shared.dropped, count, "dropped connections").await;
    }
}

impl Drop for FakeLlm {
    fn drop(&mut self) {
        // The stop command is sent at once; the returned future only awaits completion.
        drop(self.handle.stop(false));
    }
}

/// State shared by the handlers and the test.
struct Shared {
    script: Mutex<VecDeque<Step>>,
    when_exhausted: WhenExhausted,
    n_ctx: u32,
    requests: Mutex<Vec<Value>>,
    received: watch::Sender<usize>,
    dropped: watch::Sender<usize>,
}

impl Shared {
    /// Records a request and takes its step; returns the step and the request's number.
    fn record(&self, request: Value) -> (Step, usize) {
        let number = {
            let mut requests = lock(&self.requests);
            requests.push(request);
            requests.len()
        };
        self.received.send_modify(|received| *received += 1);
        let step = lock(&self.script).pop_front();
        let step = step.unwrap_or_else(|| match &self.when_exhausted {
            WhenExhausted::Reply(reply) => Step::Reply(reply.clone()),
            WhenExhausted::Error(status) => Step::error(*status),
        });
        (step, number)
    }
}

/// Counts an abandoned request: actix drops the handler's future when the client goes away,
/// and this guard with it, unless the answer was ready first.
struct AbandonGuard<'a> {
    dropped: Option<&'a watch::Sender<usize>>,
}

impl AbandonGuard<'_> {
    fn answered(mut self) {
        self.dropped = None;
    }
}

impl Drop for AbandonGuard<'_> {
    fn drop(&mut self) {
        if let Some(dropped) = self.dropped {
            dropped.send_modify(|dropped| *dropped += 1);
        }
    }
}

async fn chat_completions(shared: web::Data<Shared>, body: web::Bytes) -> HttpResponse {
    let request: Value = match serde_json::from_slice(&body) {
        Ok(request) => request,
        Err(error) => return error_response(400, None, &format!("invalid JSON body: {error}")),
    };
    let (step, number) = shared.record(request.clone());
    let guard = AbandonGuard {
        dropped: Some(&shared.dropped),
    };
    let response = match step {
        Step::Reply(reply) => HttpResponse::Ok().json(wire::completion(&request, &reply, number)),
        Step::Error {
            status,
            retry_after,
        } => error_response(status, retry_after, &format!("scripted error {status}")),
        Step::Delayed { delay, reply } => {
            tokio::time::sleep(delay).await;
            HttpResponse::Ok().json(wire::completion(&request, &reply, number))
        }
        Step::Hang => std::future::pending().await,
    };
    guard.answered();
    response
}

async fn props(shared: web::Data<Shared>) -> HttpResponse {
    HttpResponse::Ok().json(wire::props(shared.n_ctx))
}

async fn models(shared: web::Data<Shared>) -> HttpResponse {
    HttpResponse::Ok().json(wire::models(shared.n_ctx))
}

fn error_response(status: u16, retry_after: Option<String>, message: &str) -> HttpResponse {
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut response = HttpResponse::build(status);
    if let Some(retry_after) = retry_after {
        response.insert_header(("retry-after", retry_after));
    }
    response.json(wire::error(status.as_u16(), message))
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

async fn wait_for(counter: &watch::Sender<usize>, count: usize, what: &str) {
    let mut receiver = counter.subscribe();
    let reached = tokio::time::timeout(WAIT_LIMIT, receiver.wait_for(|seen| *seen >= count)).await;
    if !matches!(reached, Ok(Ok(_))) {
        panic!(
            "fake LLM: waited {WAIT_LIMIT:?} for {count} {what}, saw {}",
            *counter.borrow()
        );
    }
}

#[cfg(test)]
mod tests;
mod wire;
