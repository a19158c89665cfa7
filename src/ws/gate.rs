//! The gates a WebSocket request passes before anything else: a wrong or missing token gets
//! 401, a browser `Origin` not on the allow-list gets 403. The token says who the
//! connection acts for (`access`; a personal access token, `tokens`).

use std::net::IpAddr;

use actix_http::RequestHead;
use actix_web::{http::header, web, HttpResponse};

use crate::access::{Access, Caller, Role};
use crate::config::ServerSettings;
use crate::db::DbHandle;
use crate::tokens::{self, Unopened};

/// Why a request is turned away.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// No token, or one that opens nothing: 401.
    Unauthorized,
    /// A browser origin not on the allow-list: 403.
    Origin,
    /// A valid token without the right to this route: 403.
    NotAdmin,
    /// A personal access token that was revoked: 401.
    TokenRevoked,
    /// A personal access token that expired: 401.
    TokenExpired,
}

impl Refusal {
    /// The HTTP answer.
    pub(crate) fn response(self) -> HttpResponse {
        match self {
            Refusal::Unauthorized => HttpResponse::Unauthorized()
                .insert_header((header::WWW_AUTHENTICATE, "Bearer"))
                .body("a valid bearer token is required"),
            Refusal::Origin => HttpResponse::Forbidden().body("origin not allowed"),
            Refusal::NotAdmin => HttpResponse::Forbidden().body("this needs an admin's token"),
            Refusal::TokenRevoked => HttpResponse::Unauthorized()
                .insert_header((header::WWW_AUTHENTICATE, "Bearer"))
                .body("this personal access token was revoked; it opens nothing more"),
            Refusal::TokenExpired => HttpResponse::Unauthorized()
                .insert_header((header::WWW_AUTHENTICATE, "Bearer"))
                .body("this personal access token expired; mint another in the console"),
        }
    }
}

/// Who `head` acts for, or why it is turned away.
pub(crate) fn admit(
    head: &RequestHead,
    access: &Access,
    server: &ServerSettings,
) -> Result<Caller, Refusal> {
    let caller = authenticate(head, access)?;
    allowed_origin(head, server)?;
    Ok(caller)
}

/// As [`admit`], and a personal access token (looked up in the store) opens the socket too.
pub(crate) async fn admit_socket(
    head: &RequestHead,
    access: &Access,
    db: &DbHandle,
    server: &ServerSettings,
    client: Option<IpAddr>,
) -> Result<Caller, Refusal> {
    match admit(head, access, server) {
        Err(Refusal::Unauthorized) => {}
        admitted => return admitted,
    }
    let presented = presented_token(head).ok_or(Refusal::Unauthorized)?;
    let caller = tokens::admit(db, access, &presented, client)
        .await
        .map_err(|unopened| match unopened {
            Unopened::Unknown => Refusal::Unauthorized,
            Unopened::Revoked => Refusal::TokenRevoked,
            Unopened::Expired => Refusal::TokenExpired,
        })?;
    allowed_origin(head, server)?;
    Ok(caller)
}

/// Refuses a browser `Origin` not on the allow-list.
fn allowed_origin(head: &RequestHead, server: &ServerSettings) -> Result<(), Refusal> {
    if let Some(origin) = head.headers().get(header::ORIGIN) {
        let allowed = origin.to_str().is_ok_and(|origin| {
            server
                .allowed_origins
                .iter()
                .any(|allowed| allowed == origin)
        });
        if !allowed {
            return Err(Refusal::Origin);
        }
    }
    Ok(())
}

/// Who the token `head` presents opens the server for.
pub(crate) fn authenticate(head: &RequestHead, access: &Access) -> Result<Caller, Refusal> {
    access
        .authenticate(presented_token(head).as_deref())
        .ok_or(Refusal::Unauthorized)
}

/// As [`authenticate`], for a caller who must be an admin (the shared token is one).
pub(crate) fn authenticate_admin(head: &RequestHead, access: &Access) -> Result<(), Refusal> {
    let caller = authenticate(head, access)?;
    match access.grant(&caller) {
        Ok(grant) if grant.role() == Role::Admin => Ok(()),
        _ => Err(Refusal::NotAdmin),
    }
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
