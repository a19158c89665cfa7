//! The web requests of a reply's commands (`<search>` queries, `<get>` of an `http(s)` URL),
//! made before the unit of work that runs the commands, concurrently and cancelled with
//! the turn; inside the unit the handlers look the answers up (`searched`, `fetched`),
//! so the writer never waits on the network. Under `noWeb` nothing is requested (the
//! commands are refused as they are dispatched).

use std::cell::RefCell;
use std::collections::HashMap;

use futures_util::future::join_all;

use crate::db::enums::EntryStatus;
use crate::parser::Command;
use crate::plugins::policy::ToolPolicy;
use crate::plugins::tool::{Availability, ToolInfo};
use crate::plugins::tools::{get, search};
use crate::web::{Page, SearchHit, WebClient, WebError};

/// What a search answered.
pub type SearchAnswer = Result<Vec<SearchHit>, WebError>;
/// What a page fetch answered.
pub type PageAnswer = Result<Page, WebError>;

/// The answers of the web requests of one reply (or one client call).
#[derive(Debug, Default)]
pub struct WebAnswers {
    /// By query and result count.
    searches: HashMap<(String, usize), SearchAnswer>,
    /// By URL as the command wrote it.
    pages: HashMap<String, PageAnswer>,
}

thread_local! {
    static ANSWERS: RefCell<Option<WebAnswers>> = const { RefCell::new(None) };
}

/// One request a command needs.
#[derive(PartialEq)]
enum WebRequest {
    Search { query: String, count: usize },
    Page { url: String },
}

impl WebRequest {
    /// The request `command` needs under `policy`, if any.
    fn of(command: &Command, policy: &ToolPolicy) -> Option<WebRequest> {
        match command {
            Command::Search(input)
                if search::Search.availability(policy) == Availability::Offered =>
            {
                let (query, count) = search::query_of(input)?;
                Some(WebRequest::Search {
                    query: query.to_owned(),
                    count,
                })
            }
            Command::Get(input) if !policy.no_web => Some(WebRequest::Page {
                url: get::url_of(input)?.to_owned(),
            }),
            _ => None,
        }
    }
}

impl WebAnswers {
    /// Makes every request of `commands` at once, through `client`.
    pub async fn gather(
        client: &WebClient,
        commands: &[Command],
        policy: &ToolPolicy,
    ) -> WebAnswers {
        let mut requests: Vec<WebRequest> = Vec::new();
        for request in commands
            .iter()
            .filter_map(|command| WebRequest::of(command, policy))
        {
            if !requests.contains(&request) {
                requests.push(request);
            }
        }
        let searches = requests.iter().filter_map(|request| match request {
            WebRequest::Search { query, count } => {
                Some(async move { ((query.clone(), *count), client.search(query, *count).await) })
            }
            WebRequest::Page { .. } => None,
        });
        let pages = requests.iter().filter_map(|request| match request {
            WebRequest::Page { url } => Some(async move { (url.clone(), client.fetch(url).await) }),
            WebRequest::Search { .. } => None,
        });
        let (searches, pages) = tokio::join!(join_all(searches), join_all(pages));
        WebAnswers {
            searches: searches.into_iter().collect(),
            pages: pages.into_iter().collect(),
        }
    }

    /// These answers with the search for `query` (`count` results) answered by `answer`.
    pub fn with_search(mut self, query: &str, count: usize, answer: SearchAnswer) -> WebAnswers {
        self.searches.insert((query.to_owned(), count), answer);
        self
    }

    /// These answers with the fetch of `url` answered by `answer`.
    pub fn with_page(mut self, url: &str, answer: PageAnswer) -> WebAnswers {
        self.pages.insert(url.to_owned(), answer);
        self
    }

    /// Runs `work` with these answers for the handlers to look up.
    pub fn apply<T>(self, work: impl FnOnce() -> T) -> T {
        ANSWERS.with(|slot| slot.replace(Some(self)));
        let result = work();
        ANSWERS.with(|slot| slot.take());
        result
    }
}

/// The answer of the search for `query` with `count` results, `None` when it was not made.
pub(crate) fn searched(query: &str, count: usize) -> Option<SearchAnswer> {
    ANSWERS.with(|slot| {
        slot.borrow()
            .as_ref()?
            .searches
            .get(&(query.to_owned(), count))
            .cloned()
    })
}

/// The answer of the fetch of `url`, `None` when it was not made.
pub(crate) fn fetched(url: &str) -> Option<PageAnswer> {
    ANSWERS.with(|slot| slot.borrow().as_ref()?.pages.get(url).cloned())
}

/// The entry status a failed search or fetch leaves.
pub(crate) fn failure_status(error: &WebError) -> EntryStatus {
    match error {
        WebError::InvalidUrl(_) => EntryStatus::BadRequest,
        WebError::Refused(_) => EntryStatus::Forbidden,
        WebError::Status { status: 404 | 410 } => EntryStatus::NotFound,
        WebError::TimedOut { .. } => EntryStatus::GatewayTimeout,
        WebError::TooLarge { .. } => EntryStatus::TooLarge,
        WebError::Binary(_) => EntryStatus::UnsupportedMediaType,
        WebError::Redirect(_)
        | WebError::Status { .. }
        | WebError::Unreadable(_)
        | WebError::Junk(_)
        | WebError::Transport(_) => EntryStatus::BadGateway,
    }
}
