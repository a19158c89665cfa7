//! The gates a WebSocket request passes before anything else: a wrong or missing token gets
//! 401, a browser `Origin` not on the allow-list gets 403.

use actix_http::RequestHead;
use actix_web::{http::header, web, HttpResponse};

use crate::config::ServerSettings;

/// The response that turns `head` away, or `None` when it may pass.
pub fn refusal(head: &RequestHead, server: &ServerSettings) -> Option<HttpResponse> {
    if let Some(token) = &server.auth_token {
        if !presents_token(head, token.expose()) {
            return Some(
                HttpResponse::Unauthorized()
                    .insert_header((header::WWW_AUTHENTICATE, "Bearer"))
                    .body("a valid bearer token is required"),
            );
        }
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

fn presents_token(head: &RequestHead, expected: &str) -> bool {
    let from_header = head
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.strip_prefix("Bearer "))
        .map(str::trim);
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

/// Compares without an early exit, so timing does not reveal a matching prefix.
fn constant_time_eq(given: &str, expected: &str) -> bool {
    let given = given.as_bytes();
    let expected = expected.as_bytes();
    let mut difference = given.len() ^ expected.len();
    for (index, byte) in expected.iter().enumerate() {
        difference |= usize::from(byte ^ given.get(index).copied().unwrap_or(0));
    }
    difference == 0
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
