//! A scripted OpenAI-compatible LLM server: what `rummy-load fake-llm` serves, and what the
//! tests put in place of a model where they need determinism.
//!
//! `FakeLlm::start(script)` serves on 127.0.0.1 port 0 (actix-web, inside the caller's actix
//! system), so rummy's real reqwest client, retries and timeouts are exercised over real
//! HTTP. Every request takes the next `Step` of the script, whatever its path: an
//! OpenAI-style chat completion, a JSON body as given, an HTTP error (optionally with
//! Retry-After), a reply after a delay or once the test releases it, or a hang that lasts
//! until the client goes away. When the script is used up the server answers with its
//! `WhenExhausted` choice, by default the reply `<summarize>done</summarize>` so a loop that
//! asks once more than scripted still ends cleanly; a fixed reply forever is also how
//! `rummy-load` answers every turn at once.
//!
//! Three paths are answered by the server itself and take no step, unless
//! `script_every_request` says otherwise: `GET /props` (llama.cpp) and `GET /v1/models` report
//! the configured context size for discovery, and `GET /stats` reports how many requests took
//! a step (`{"completions": n}`).

use std::collections::VecDeque;
use std::io;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use actix_web::dev::ServerHandle;
use actix_web::{web, App, HttpServer};
use serde_json::Value;
use tokio::sync::watch;

use serve::{lock, Shared};

mod serve;
#[cfg(test)]
mod tests;
mod wire;

/// The reply sent when the script is used up, unless configured otherwise.
pub const DEFAULT_FINAL_REPLY: &str = "<summarize>done</summarize>";

/// The context size `/props` and `/v1/models` report unless configured otherwise (SmolLM2's).
pub const DEFAULT_N_CTX: u32 = 8192;

/// The model id `/v1/models` lists, and the one replies name when the request names none.
pub const FAKE_MODEL_ID: &str = "fake-llm";

/// How long a `wait_for_*` call waits before failing the test instead of hanging it.
const WAIT_LIMIT: Duration = Duration::from_secs(30);

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

/// What the fake does with one request.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// Answer 200 with a chat completion carrying this reply.
    Reply(Reply),
    /// Answer 200 with this body as it is (another wire format, a discovery answer).
    Json(Value),
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
    /// Wait until the test lets it go ([`FakeLlm::release`]: the held requests in arrival
    /// order, one per call), then answer 200 with the reply: a request kept waiting exactly
    /// as long as the test needs, with no timing to guess.
    Held(Reply),
    /// Answer 200 with the reply streamed (to a request asking for a stream), each event
    /// sent this long after the one before: words that come as a model's do.
    Paced(Reply, Duration),
    /// Answer 200 with this body, sent in pieces as they are: another provider's stream,
    /// or a broken one.
    Stream(Streamed),
}

/// A streamed body as it is sent: its content type, its pieces each after a pause, and
/// how it ends.
#[derive(Debug, Clone, PartialEq)]
pub struct Streamed {
    /// The `Content-Type` header.
    pub content_type: String,
    /// The pieces of the body, each sent after its pause.
    pub pieces: Vec<(Duration, Vec<u8>)>,
    /// What happens after the last piece.
    pub end: StreamEnd,
}

/// How a streamed body ends.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum StreamEnd {
    /// The body is complete.
    Complete,
    /// The server breaks the connection (the body is left unfinished).
    Broken,
    /// Nothing more is sent until the client goes away (counted as a dropped connection).
    Hang,
}

impl Streamed {
    /// Server-sent events, one piece per event data, at once, complete.
    pub fn events<I, T>(data: I) -> Streamed
    where
        I: IntoIterator<Item = T>,
        T: AsRef<str>,
    {
        Streamed {
            content_type: "text/event-stream".into(),
            pieces: data
                .into_iter()
                .map(|data| {
                    (
                        Duration::ZERO,
                        format!("data: {}\n\n", data.as_ref()).into_bytes(),
                    )
                })
                .collect(),
            end: StreamEnd::Complete,
        }
    }

    /// The same body, ending as `end` says.
    pub fn ending(self, end: StreamEnd) -> Streamed {
        Streamed { end, ..self }
    }
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

    /// A 200 reply with this content, held until released.
    pub fn held(content: impl Into<String>) -> Step {
        Step::Held(Reply::new(content))
    }
}

impl From<Reply> for Step {
    fn from(reply: Reply) -> Step {
        Step::Reply(reply)
    }
}

/// The answer to every request after the script is used up.
#[derive(Clone)]
pub enum WhenExhausted {
    /// Answer 200 with this reply (the default: `DEFAULT_FINAL_REPLY`).
    Reply(Reply),
    /// Take the step this function makes of the request's body (a reply, or an HTTP fault).
    Respond(Arc<dyn Fn(&Value) -> Step + Send + Sync>),
    /// Answer with this HTTP status.
    Error(u16),
}

impl std::fmt::Debug for WhenExhausted {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WhenExhausted::Reply(reply) => formatter.debug_tuple("Reply").field(reply).finish(),
            WhenExhausted::Respond(_) => formatter.write_str("Respond(..)"),
            WhenExhausted::Error(status) => formatter.debug_tuple("Error").field(status).finish(),
        }
    }
}

impl Default for WhenExhausted {
    fn default() -> Self {
        WhenExhausted::Reply(Reply::new(DEFAULT_FINAL_REPLY))
    }
}

/// One request that took a step, as the server saw it.
#[derive(Debug, Clone, PartialEq)]
pub struct Recorded {
    /// `GET`, `POST`, ...
    pub method: String,
    /// The path, without the query.
    pub path: String,
    /// Every header, names lower-cased, in arrival order.
    pub headers: Vec<(String, String)>,
    /// The JSON body; `Value::Null` when the body was empty.
    pub body: Value,
    /// When it arrived, by the server's clock.
    pub at: std::time::Instant,
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

/// Options of a fake server before it starts.
#[derive(Debug)]
pub struct FakeLlmBuilder {
    script: VecDeque<Step>,
    n_ctx: u32,
    when_exhausted: WhenExhausted,
    address: SocketAddr,
    fixed_paths: FixedPaths,
    recording: Recording,
}

/// Whether `/props`, `/v1/models` and `/stats` are answered by the server or take steps.
#[derive(Debug, Clone, Copy, PartialEq)]
enum FixedPaths {
    Answered,
    Scripted,
}

/// Whether the requests that took a step are kept for `requests` and `recorded`.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Recording {
    Kept,
    Counted,
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

    /// Where to listen instead of 127.0.0.1 port 0 (port 0 still picks a free one).
    pub fn address(self, address: SocketAddr) -> FakeLlmBuilder {
        FakeLlmBuilder { address, ..self }
    }

    /// `/props`, `/v1/models` and `/stats` take steps like every other request, for tests of
    /// what a client makes of other servers' answers there.
    pub fn script_every_request(self) -> FakeLlmBuilder {
        FakeLlmBuilder {
            fixed_paths: FixedPaths::Scripted,
            ..self
        }
    }

    /// Counts requests without keeping them, so a long-running server does not grow;
    /// `requests` and `recorded` then stay empty.
    pub fn forget_requests(self) -> FakeLlmBuilder {
        FakeLlmBuilder {
            recording: Recording::Counted,
            ..self
        }
    }

    /// Binds and starts serving; the server stops when the `FakeLlm` is dropped. Call it
    /// inside an actix system (`#[actix_web::test]`, `System::block_on`).
    pub fn try_start(self) -> io::Result<FakeLlm> {
        let shared = web::Data::new(Shared {
            script: Mutex::new(self.script),
            when_exhausted: self.when_exhausted,
            n_ctx: self.n_ctx,
            recording: self.recording,
            requests: Mutex::new(Vec::new()),
            received: watch::Sender::new(0),
            dropped: watch::Sender::new(0),
            held: Mutex::new(0),
            released: watch::Sender::new(0),
        });
        let app_state = shared.clone();
        let fixed_paths = self.fixed_paths;
        let server = HttpServer::new(move || {
            App::new()
                .app_data(app_state.clone())
                .configure(|config| serve::routes(config, fixed_paths))
        })
        .workers(1)
        .disable_signals()
        .shutdown_timeout(0)
        .h1_allow_half_closed(false)
        .bind(self.address)?;
        let Some(address) = server.addrs().first().copied() else {
            return Err(io::Error::other("the fake LLM bound no address"));
        };
        let server = server.run();
        let handle = server.handle();
        actix_web::rt::spawn(server);
        Ok(FakeLlm {
            base_url: format!("http://{address}"),
            shared: shared.into_inner(),
            handle,
        })
    }

    /// `try_start` for tests: a failure to bind fails the test.
    pub fn start(self) -> FakeLlm {
        let address = self.address;
        match self.try_start() {
            Ok(fake) => fake,
            Err(error) => panic!("fake LLM: cannot bind {address}: {error}"),
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

    /// Options for a server answering with `script`: context size `DEFAULT_N_CTX`,
    /// `WhenExhausted::default()`, 127.0.0.1 port 0, discovery answered and requests kept
    /// unless changed.
    pub fn builder(script: impl IntoIterator<Item = Step>) -> FakeLlmBuilder {
        FakeLlmBuilder {
            script: script.into_iter().collect(),
            n_ctx: DEFAULT_N_CTX,
            when_exhausted: WhenExhausted::default(),
            address: SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), 0),
            fixed_paths: FixedPaths::Answered,
            recording: Recording::Kept,
        }
    }

    /// `http://<address>:<port>`, the value for `OPENAI_BASE_URL` (with or without `/v1`).
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    /// The body of every request that took a step so far, in arrival order (including
    /// requests whose client later went away).
    pub fn requests(&self) -> Vec<Value> {
        lock(&self.shared.requests)
            .iter()
            .map(|request| request.body.clone())
            .collect()
    }

    /// Every request that took a step so far, in arrival order, with method, path and headers.
    pub fn recorded(&self) -> Vec<Recorded> {
        lock(&self.shared.requests).clone()
    }

    /// How many requests the client abandoned before the answer was ready.
    pub fn dropped(&self) -> usize {
        *self.shared.dropped.borrow()
    }

    /// Waits until at least `count` requests have taken a step; fails the test after 30 s.
    pub async fn wait_for_requests(&self, count: usize) {
        wait_for(&self.shared.received, count, "requests").await;
    }

    /// Waits until at least `count` requests were abandoned by their client; fails the test
    /// after 30 s.
    pub async fn wait_for_dropped(&self, count: usize) {
        wait_for(&self.shared.dropped, count, "dropped connections").await;
    }

    /// Lets the oldest request held by a [`Step::Held`] not yet let go be answered (or the
    /// next one to arrive, when none waits yet).
    pub fn release(&self) {
        self.shared.released.send_modify(|released| *released += 1);
    }

    /// Stops answering and waits until the server has stopped.
    pub async fn stop(self) {
        self.handle.stop(true).await;
    }
}

impl Drop for FakeLlm {
    fn drop(&mut self) {
        // The stop command is sent at once; the returned future only awaits completion.
        drop(self.handle.stop(false));
    }
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
