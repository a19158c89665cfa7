//! The gates a WebSocket request passes before anything else: a wrong or missing token gets
//! 401, a browser `Origin` not on the allow-list gets 403.

use actix_http::RequestHead;
use actix_web::{http::header, web, HttpResponse};
use subtle::ConstantTimeEq;

use crate::config::ServerSettings;

/// The response that turns `head` away, or `None` when it may pass.
pub fn refusal(head: &RequestHead, server: &ServerSettings) -> Option<HttpResponse> {
    if let Some(unauthorized) = token_refusal(head, server) {
        return Some(unauthorized);
    }
    if let Some(origin) = head.headers().get(header::ORIGIN) {
        let allowed = origin.to_str().is_ok_and(|origin| {
            server
                .allowed_origins
                .iter()
                .any(|allowed| allowed == origin)
        });
        if !allowed {
            return Some(HttpResponse::Forbidden().body("origin not allowed"));
        }
    }
    None
}

/// The 401 for a request that does not present the server's token, when one is set.
pub fn token_refusal(head: &RequestHead, server: &ServerSettings) -> Option<HttpResponse> {
    let token = server.auth_token.as_ref()?;
    if presents_token(head, token.expose()) {
        return None;
    }
    Some(
        HttpResponse::Unauthorized()
            .insert_header((header::WWW_AUTHENTICATE, "Bearer"))
            .body("a valid bearer token is required"),
    )
}

fn presents_token(head: &RequestHead, expected: &str) -> bool {
    // The scheme is case-insensitive (RFC 9110 §11.1): `bearer` is as good as `Bearer`.
    let from_header = head
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.trim_start().split_once(' '))
        .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
        .map(|(_, token)| token.trim());
    if from_header.is_some_and(|token| constant_time_eq(token, expected)) {
        return true;
    }
    web::Query::<std::collections::HashMap<String, String>>::from_query(
        head.uri.query().unwrap_or_default(),
    )
    .ok()
    .and_then(|query| query.get("token").cloned())
    .is_some_and(|token| constant_time_eq(&token, expected))
}

/// Compares in time that does not depend on where the two differ.
fn constant_time_eq(given: &str, expected: &str) -> bool {
    given.as_bytes().ct_eq(expected.as_bytes()).into()
}

#[cfg(test)]
mod tests {
    use super::constant_time_eq;

    #[test]
    fn tokens_compare_exactly() {
        assert!(constant_time_eq("s3cret", "s3cret"));
        assert!(!constant_time_eq("s3cre", "s3cret"));
        assert!(!constant_time_eq("s3cret!", "s3cret"));
        assert!(!constant_time_eq("", "s3cret"));
    }
}
