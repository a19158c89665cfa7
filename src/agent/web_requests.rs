//! The web requests of a reply's commands (`<search>` queries, `<get>` of an `http(s)`
//! URL): made before the unit of work that runs the commands, concurrently, and dropped
//! with the future (an aborted turn). Under `noWeb` nothing is requested (the commands are
//! refused as they are dispatched).

use futures_util::future::join_all;

use crate::parser::Command;
use crate::plugins::policy::ToolPolicy;
use crate::plugins::tool::{Availability, ToolInfo};
use crate::plugins::tools::{get, search};
use crate::plugins::web::WebAnswers;
use crate::web::WebClient;

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

/// Makes every request of `commands` at once (each one once), through `client`.
pub async fn gather(client: &WebClient, commands: &[Command], policy: &ToolPolicy) -> WebAnswers {
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
            Some(async move { (query, *count, client.search(query, *count).await) })
        }
        WebRequest::Page { .. } => None,
    });
    let pages = requests.iter().filter_map(|request| match request {
        WebRequest::Page { url } => Some(async move { (url, client.fetch(url).await) }),
        WebRequest::Search { .. } => None,
    });
    let (searches, pages) = tokio::join!(join_all(searches), join_all(pages));
    let answers = searches
        .into_iter()
        .fold(WebAnswers::default(), |answers, (query, count, answer)| {
            answers.with_search(query, count, answer)
        });
    pages.into_iter().fold(answers, |answers, (url, answer)| {
        answers.with_page(url, answer)
    })
}
