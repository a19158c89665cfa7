//! A search through SearXNG's JSON API: `GET {base}/search?q=…&format=json`, its
//! `results` list cut to the count asked for.

use serde::Deserialize;

use crate::web::{from_reqwest, WebClient, WebError};

/// One search result.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct SearchHit {
    pub url: String,
    #[serde(default)]
    pub title: String,
    /// The snippet.
    #[serde(default)]
    pub content: String,
}

/// The part of SearXNG's answer that is read.
#[derive(Deserialize)]
struct SearxngAnswer {
    results: Vec<SearchHit>,
}

impl WebClient {
    /// The first `count` results for `query`.
    pub async fn search(&self, query: &str, count: usize) -> Result<Vec<SearchHit>, WebError> {
        let Some(base) = self.options.searxng_url.clone() else {
            return Err(WebError::Transport(
                "no search backend is configured".into(),
            ));
        };
        self.within(self.search_at(base, query, count)).await
    }

    async fn search_at(
        &self,
        mut url: reqwest::Url,
        query: &str,
        count: usize,
    ) -> Result<Vec<SearchHit>, WebError> {
        let path = format!("{}/search", url.path().trim_end_matches('/'));
        url.set_path(&path);
        url.query_pairs_mut()
            .append_pair("q", query)
            .append_pair("format", "json");
        // The backend's URL is the operator's and may carry credentials: never in a message.
        let response = self
            .search
            .get(url)
            .send()
            .await
            .map_err(|error| from_reqwest(error.without_url()))?;
        let status = response.status();
        if !status.is_success() {
            return Err(WebError::Status {
                status: status.as_u16(),
            });
        }
        let bytes = self.body(response).await?;
        let answer: SearxngAnswer =
            serde_json::from_slice(&bytes).map_err(|error| WebError::Junk(error.to_string()))?;
        Ok(answer
            .results
            .into_iter()
            .filter(|hit| !hit.url.is_empty())
            .take(count)
            .collect())
    }
}
