//! One page: the URL checked, the request sent with redirects judged hop by hop, the body
//! read up to the size limit, then made readable.

use std::sync::Arc;

use futures_util::StreamExt;
use reqwest::header::{CONTENT_LENGTH, CONTENT_TYPE};
use reqwest::redirect::{Attempt, Policy};
use reqwest::Url;

use crate::web::address::{NetFilter, RefusedAddress};
use crate::web::page::{readable, BodyKind};
use crate::web::{from_reqwest, WebClient, WebError};

/// A fetched page, as the model reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Page {
    /// Where the page was found, after redirects.
    pub url: String,
    /// The `Content-Type` the server gave ("" when none).
    pub content_type: String,
    /// The page as text (HTML converted to Markdown).
    pub text: String,
}

/// A redirect the policy stopped, carried through reqwest's error to [`from_reqwest`].
#[derive(Debug)]
pub(super) struct RedirectRefused(pub WebError);

impl std::fmt::Display for RedirectRefused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for RedirectRefused {}

/// Follows at most `max` redirects, each to an `http`/`https` URL whose host, when it is an
/// address, the filter permits (a host name is judged when it is resolved).
pub(super) fn redirect_policy(filter: Arc<NetFilter>, max: usize) -> Policy {
    Policy::custom(move |attempt: Attempt<'_>| {
        if attempt.previous().len() > max {
            let error = WebError::Redirect(format!("more than {max} redirects"));
            return attempt.error(RedirectRefused(error));
        }
        match checked(attempt.url(), &filter) {
            Ok(()) => attempt.follow(),
            Err(error) => attempt.error(RedirectRefused(error)),
        }
    })
}

/// Whether `url` may be requested: `http`/`https` with a host, and an address host the
/// filter permits.
fn checked(url: &Url, filter: &NetFilter) -> Result<(), WebError> {
    if !matches!(url.scheme(), "http" | "https") {
        return Err(WebError::InvalidUrl(format!(
            "{url} is not an http or https URL"
        )));
    }
    let address = match url.host() {
        None => return Err(WebError::InvalidUrl(format!("{url} has no host"))),
        Some(url::Host::Domain(_)) => return Ok(()),
        Some(url::Host::Ipv4(v4)) => std::net::IpAddr::V4(v4),
        Some(url::Host::Ipv6(v6)) => std::net::IpAddr::V6(v6),
    };
    match filter.refusal(address) {
        None => Ok(()),
        Some(reason) => Err(WebError::Refused(RefusedAddress {
            host: address.to_string(),
            address,
            reason,
        })),
    }
}

impl WebClient {
    /// Fetches `url` and makes it readable, within the time and size limits.
    pub async fn fetch(&self, url: &str) -> Result<Page, WebError> {
        let url = Url::parse(url.trim())
            .map_err(|error| WebError::InvalidUrl(format!("{url} is not a URL: {error}")))?;
        checked(&url, &self.filter)?;
        self.within(self.fetch_checked(url)).await
    }

    async fn fetch_checked(&self, url: Url) -> Result<Page, WebError> {
        let response = self.pages.get(url).send().await.map_err(from_reqwest)?;
        let status = response.status();
        if !status.is_success() {
            return Err(WebError::Status {
                status: status.as_u16(),
            });
        }
        let found_at = response.url().to_string();
        let content_type = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|value| value.to_str().ok())
            .unwrap_or_default()
            .to_owned();
        let kind = BodyKind::of(Some(content_type.as_str()));
        if kind == BodyKind::Binary {
            return Err(WebError::Binary(content_type));
        }
        let bytes = self.body(response).await?;
        let text = {
            let content_type = content_type.clone();
            tokio::task::spawn_blocking(move || readable(&bytes, kind, &content_type))
                .await
                .map_err(|error| WebError::Unreadable(error.to_string()))??
        };
        Ok(Page {
            url: found_at,
            content_type,
            text,
        })
    }

    /// The body of `response`, refused as soon as it passes the size limit.
    pub(super) async fn body(&self, response: reqwest::Response) -> Result<Vec<u8>, WebError> {
        let limit = self.options.max_bytes;
        let too_large = WebError::TooLarge { limit };
        let declared = response
            .headers()
            .get(CONTENT_LENGTH)
            .and_then(|value| value.to_str().ok())
            .and_then(|value| value.parse::<u64>().ok());
        if declared.is_some_and(|length| length > limit) {
            return Err(too_large);
        }
        let mut bytes = Vec::new();
        let mut stream = response.bytes_stream();
        while let Some(chunk) = stream.next().await {
            let chunk = chunk.map_err(from_reqwest)?;
            if bytes.len() as u64 + chunk.len() as u64 > limit {
                return Err(too_large);
            }
            bytes.extend_from_slice(&chunk);
        }
        Ok(bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_http_urls_with_permitted_address_hosts_pass() {
        let strict = NetFilter::default();
        let check = |text: &str| checked(&Url::parse(text).unwrap(), &strict);
        assert_eq!(check("https://example.com/a"), Ok(()));
        assert_eq!(check("http://93.184.216.34/"), Ok(()));
        assert!(matches!(
            check("ftp://example.com/"),
            Err(WebError::InvalidUrl(_))
        ));
        assert!(matches!(
            check("file:///etc/passwd"),
            Err(WebError::InvalidUrl(_))
        ));
        for refused in [
            "http://127.0.0.1:8080/",
            "http://[::1]/",
            "http://[::ffff:169.254.169.254]/",
            "http://2130706433/",
            "http://0x7f.1/",
            "http://10.0.0.1/",
        ] {
            assert!(
                matches!(check(refused), Err(WebError::Refused(_))),
                "{refused}"
            );
        }
        let stopped = RedirectRefused(WebError::Redirect("more than 2 redirects".into()));
        assert_eq!(stopped.to_string(), "more than 2 redirects");
        let lenient = NetFilter::new(vec!["127.0.0.1/32".parse().unwrap()]);
        assert_eq!(
            checked(&Url::parse("http://127.0.0.1:9/").unwrap(), &lenient),
            Ok(())
        );
    }
}
