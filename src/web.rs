//! The web, as the model's tools reach it: a SearXNG search (`<search>`) and the fetch of
//! one page (`<get path="https://…">`), each bounded in time and size.
//!
//! Pages are fetched by a client that can only connect to addresses the [`NetFilter`]
//! permits (checked on the resolved addresses at connect time, and on every URL whose host
//! is an address, redirects included), never through a proxy, following at most
//! `max_redirects` redirects. The search backend is the operator's own service and is
//! reached by a client of its own, without that filter. Nothing here blocks the executor:
//! the HTML conversion runs on the blocking pool, and dropping a future drops its request.

mod address;
mod fetch;
mod page;
mod searxng;

use std::sync::Arc;
use std::time::Duration;

use ipnet::IpNet;
use reqwest::Url;

pub(crate) use address::{FilteringResolver, NetFilter, RefusedAddress};
pub(crate) use fetch::Page;
pub(crate) use searxng::SearchHit;

/// What the web tools may do (from `RUMMY_WEB_*` and `RUMMY_SEARXNG_URL`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebOptions {
    /// The SearXNG base URL; `None`: no search.
    pub searxng_url: Option<Url>,
    /// Longest a fetch or a search may take, from the request to its last byte.
    pub timeout: Duration,
    /// Largest body read, in bytes.
    pub max_bytes: u64,
    /// Redirects a fetch follows.
    pub max_redirects: usize,
    /// Networks a fetch may reach although they are private, loopback, ...
    pub allow_nets: Vec<IpNet>,
}

/// Why a search or a fetch gave nothing the model can read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WebError {
    /// Not an `http`/`https` URL.
    #[error("{0}")]
    InvalidUrl(String),
    /// The host is, or resolves only to, an address the server may not reach.
    #[error("{0}: fetching it is refused (the server's own networks are not reachable)")]
    Refused(RefusedAddress),
    /// More redirects than allowed, or one to a URL that is not `http`/`https`.
    #[error("{0}")]
    Redirect(String),
    /// The server answered with an error status.
    #[error("the server answered HTTP {status}")]
    Status { status: u16 },
    /// Nothing arrived within the time allowed.
    #[error("no complete answer within {ms} ms")]
    TimedOut { ms: u128 },
    /// The body is larger than allowed.
    #[error("the body is larger than {limit} bytes")]
    TooLarge { limit: u64 },
    /// The body is not text.
    #[error("{0} is not text: binary content is refused")]
    Binary(String),
    /// The body could not be turned into text.
    #[error("the page could not be read: {0}")]
    Unreadable(String),
    /// The search backend answered something that is not a SearXNG result list.
    #[error("the search backend answered something other than search results: {0}")]
    Junk(String),
    /// No connection, a broken one, or no HTTP client.
    #[error("{0}")]
    Transport(String),
}

/// The web clients, built once at start. Cheap to clone.
#[derive(Clone)]
pub struct WebClient {
    /// Page fetches: filtered addresses, bounded redirects, no proxy.
    pages: reqwest::Client,
    /// The search backend.
    search: reqwest::Client,
    filter: Arc<NetFilter>,
    options: Arc<WebOptions>,
}

impl WebClient {
    /// Builds both clients.
    pub fn new(options: WebOptions) -> Result<WebClient, WebError> {
        let filter = Arc::new(NetFilter::new(options.allow_nets.clone()));
        let transport = |error: reqwest::Error| WebError::Transport(error.to_string());
        let pages = reqwest::Client::builder()
            .no_proxy()
            .dns_resolver(Arc::new(FilteringResolver {
                filter: Arc::clone(&filter),
            }))
            .redirect(fetch::redirect_policy(
                Arc::clone(&filter),
                options.max_redirects,
            ))
            .build()
            .map_err(transport)?;
        let search = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(transport)?;
        Ok(WebClient {
            pages,
            search,
            filter,
            options: Arc::new(options),
        })
    }

    /// Runs `work`, or [`WebError::TimedOut`] once the options' timeout has passed (the
    /// one time limit: dropping `work` drops its request).
    async fn within<T>(
        &self,
        work: impl std::future::Future<Output = Result<T, WebError>>,
    ) -> Result<T, WebError> {
        let timeout = self.options.timeout;
        tokio::time::timeout(timeout, work)
            .await
            .unwrap_or(Err(WebError::TimedOut {
                ms: timeout.as_millis(),
            }))
    }
}

/// The reqwest error as a [`WebError`]: a refused address or redirect found in its
/// sources, or the transport's own message.
fn from_reqwest(error: reqwest::Error) -> WebError {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(&error);
    while let Some(current) = source {
        if let Some(refused) = current.downcast_ref::<RefusedAddress>() {
            return WebError::Refused(refused.clone());
        }
        if let Some(redirect) = current.downcast_ref::<fetch::RedirectRefused>() {
            return match &redirect.0 {
                WebError::Refused(refused) => WebError::Refused(refused.clone()),
                other => other.clone(),
            };
        }
        source = current.source();
    }
    let mut message = error.to_string();
    let mut source = std::error::Error::source(&error);
    while let Some(current) = source {
        message.push_str(": ");
        message.push_str(&current.to_string());
        source = current.source();
    }
    WebError::Transport(message)
}
