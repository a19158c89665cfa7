//! The answers of the web requests of a unit of work's commands (`<search>` queries, `<get>`
//! of an `http(s)` URL), obtained before the unit (`agent::web_requests`) and handed to it
//! as one kind of [`Answers`](crate::plugins::answers::Answers); inside the unit the
//! handlers look them up (`searched`, `fetched`), so the writer never waits on the network.

use std::collections::HashMap;

use crate::db::enums::EntryStatus;
use crate::plugins::answers::answered;
use crate::web::{Page, SearchHit, WebError};

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

impl WebAnswers {
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
}

/// The answer of the search for `query` with `count` results, `None` when it was not made.
pub(crate) fn searched(query: &str, count: usize) -> Option<SearchAnswer> {
    answered::<WebAnswers, _>(|web| web.searches.get(&(query.to_owned(), count)).cloned()).flatten()
}

/// The answer of the fetch of `url`, `None` when it was not made.
pub(crate) fn fetched(url: &str) -> Option<PageAnswer> {
    answered::<WebAnswers, _>(|web| web.pages.get(url).cloned()).flatten()
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
