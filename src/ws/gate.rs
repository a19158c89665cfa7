//! The gates a WebSocket request passes before anything else: a wrong or missing token gets
//! 401, a browser `Origin` not on the allow-list gets 403. The token says who the
//! connection acts for (`access`).

use actix_http::RequestHead;
use actix_web::{http::header, web, HttpResponse};

use crate::access::{Access, Caller};
use crate::config::ServerSettings;

/// Who `head` acts for, or the response that turns it away.
pub fn admit(
    head: &RequestHead,
    access: &Access,
    server: &ServerSettings,
) -> Result<Caller, HttpResponse> {
    let caller = authenticate(head, access)?;
    if let Some(origin) = head.headers().get(header::ORIGIN) {
        let allowed = origin.to_str().is_ok_and(|origin| {
            server
                .allowed_origins
                .iter()
                .any(|allowed| allowed == origin)
        });
        if !allowed {
            return Err(HttpResponse::Forbidden().body("origin not allowed"));
        }
    }
    Ok(caller)
}

/// Who the token `head` presents opens the server for, or the 401 when none does.
pub fn authenticate(head: &RequestHead, access: &Access) -> Result<Caller, HttpResponse> {
    access
        .authenticate(presented_token(head).as_deref())
        .ok_or_else(|| {
            HttpResponse::Unauthorized()
                .insert_header((header::WWW_AUTHENTICATE, "Bearer"))
                .body("a valid bearer token is required")
        })
}

/// The bearer token of the `Authorization` header, else of the `token` query parameter.
fn presented_token(head: &RequestHead) -> Option<String> {
    // The scheme is case-insensitive (RFC 9110 §11.1): `bearer` is as good as `Bearer`.
    let from_header = head
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.trim_start().split_once(' '))
        .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
        .map(|(_, token)| token.trim().to_owned());
    from_header.or_else(|| {
        web::Query::<std::collections::HashMap<String, String>>::from_query(
            head.uri.query().unwrap_or_default(),
        )
        .ok()
        .and_then(|query| query.get("token").cloned())
    })
}
