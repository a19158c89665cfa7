//! Which URLs a webhook may be sent to: `http` or `https`, with a host, without credentials
//! in it (a secret belongs in the webhook's secret, which no list shows), at most
//! [`MAX_URL_CHARS`]. Private and loopback addresses are allowed: only an admin sets a
//! webhook, and receivers inside the network (a chat bridge, a test receiver) are common.

/// The longest URL a webhook takes.
pub(crate) const MAX_URL_CHARS: usize = 2048;

/// `url` as a webhook's target, or why it cannot be one.
pub(crate) fn checked(url: &str) -> Result<url::Url, String> {
    if url.chars().count() > MAX_URL_CHARS {
        return Err(format!("url must be at most {MAX_URL_CHARS} characters"));
    }
    let parsed = url::Url::parse(url).map_err(|error| format!("url is not a URL ({error})"))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        return Err(format!(
            "url must be http or https, not {}",
            parsed.scheme()
        ));
    }
    if parsed.host().is_none() {
        return Err("url must name a host".into());
    }
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Err(
            "url must hold no user or password: a receiver checks the signature instead".into(),
        );
    }
    Ok(parsed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_webhook_goes_to_an_http_or_https_host_without_credentials() {
        for good in [
            "https://hooks.example.com/rummy",
            "http://127.0.0.1:8080/hook?x=1",
            "http://10.0.0.7/",
        ] {
            assert!(checked(good).is_ok(), "{good}");
        }
        for (bad, says) in [
            ("ftp://example.com/", "http or https"),
            ("file:///etc/passwd", "http or https"),
            ("not a url", "not a URL"),
            ("https://user:pw@example.com/", "no user or password"),
            ("mailto:ops@example.com", "http or https"),
        ] {
            let error = checked(bad).unwrap_err();
            assert!(error.contains(says), "{bad}: {error}");
        }
        let long = format!("https://example.com/{}", "a".repeat(MAX_URL_CHARS));
        assert!(checked(&long).unwrap_err().contains("at most"));
    }
}
