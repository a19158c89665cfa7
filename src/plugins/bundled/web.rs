//! What the web tools' gather halves obtain before the unit of work that records their
//! commands (`search`: [`Searches`], `get` of an `http(s)` URL: [`Pages`]), each request made
//! once per reply and all at once, so the writer never waits on the network; and the status
//! a failed request leaves.

use std::collections::HashMap;

use futures_util::future::join_all;

use crate::db::enums::EntryStatus;
use crate::llm::CancellationToken;
use crate::web::{Page, SearchHit, WebClient, WebError};

/// What a search answered.
pub(crate) type SearchAnswer = Result<Vec<SearchHit>, WebError>;
/// What a page fetch answered.
pub(crate) type PageAnswer = Result<Page, WebError>;

/// The answers of one reply's searches, by query and result count.
#[derive(Debug, Default)]
pub(crate) struct Searches(HashMap<(String, usize), SearchAnswer>);

impl Searches {
    /// Searches for each of `asked` (a query and a result count) through `web`, all at
    /// once; an abort (`cancel`) drops them and answers none.
    pub(crate) async fn made(
        web: &WebClient,
        asked: Vec<(String, usize)>,
        cancel: &CancellationToken,
    ) -> Searches {
        let searches = join_all(asked.iter().map(|(query, count)| web.search(query, *count)));
        tokio::select! {
            answers = searches => Searches(asked.into_iter().zip(answers).collect()),
            () = cancel.cancelled() => Searches::default(),
        }
    }

    /// These with the search for `query` (`count` results) answered by `answer`.
    #[cfg(test)]
    pub(crate) fn with(mut self, query: &str, count: usize, answer: SearchAnswer) -> Searches {
        self.0.insert((query.to_owned(), count), answer);
        self
    }

    /// The answer of the search for `query` with `count` results, `None` when it was not
    /// made.
    pub(crate) fn of(&self, query: &str, count: usize) -> Option<SearchAnswer> {
        self.0.get(&(query.to_owned(), count)).cloned()
    }
}

/// The answers of one reply's page fetches, by URL as the command wrote it.
#[derive(Debug, Default)]
pub(crate) struct Pages(HashMap<String, PageAnswer>);

impl Pages {
    /// Fetches each of `urls` through `web`, all at once; an abort (`cancel`) drops them
    /// and answers none.
    pub(crate) async fn fetched(
        web: &WebClient,
        urls: Vec<String>,
        cancel: &CancellationToken,
    ) -> Pages {
        let fetches = join_all(urls.iter().map(|url| web.fetch(url)));
        tokio::select! {
            answers = fetches => Pages(urls.into_iter().zip(answers).collect()),
            () = cancel.cancelled() => Pages::default(),
        }
    }

    /// These with the fetch of `url` answered by `answer`.
    #[cfg(test)]
    pub(crate) fn with(mut self, url: &str, answer: PageAnswer) -> Pages {
        self.0.insert(url.to_owned(), answer);
        self
    }

    /// The answer of the fetch of `url`, `None` when it was not made.
    pub(crate) fn of(&self, url: &str) -> Option<PageAnswer> {
        self.0.get(url).cloned()
    }
}

/// Each of `items` once, in order of first appearance.
pub(crate) fn once_each<T: PartialEq>(items: impl IntoIterator<Item = T>) -> Vec<T> {
    items.into_iter().fold(Vec::new(), |mut kept, item| {
        if !kept.contains(&item) {
            kept.push(item);
        }
        kept
    })
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
