//! Console sign-in: a person posts their token (or the shared token) to `<path>/session`
//! and gets a session cookie: random, `HttpOnly`, `SameSite=Strict`, `Path=<path>`, `Secure`
//! when the browser reached rummy over TLS ([`over_tls`]), expiring after
//! `RUMMY_CONSOLE_SESSION_HOURS`. The store keeps only the SHA-256 of its id, who it acts
//! for and the SHA-256 of the token used; signing out deletes the row, so the cookie opens
//! nothing on any instance. A session lasts while that token still opens the server
//! (`Access::resume`); what its person may do is looked up on every call, as for a token.
//!
//! Requests that change a session, and the console's WebSocket, must come from the page's
//! own origin (`ws::cookie::same_origin`): a cookie is sent with any request to the host, and a
//! WebSocket is no exception.

use actix_web::cookie::{time::Duration as CookieAge, Cookie, SameSite};
use actix_web::http::header;
use actix_web::{web, HttpRequest, HttpResponse};
use serde::Deserialize;
use serde_json::json;

use super::audit::{self, Via};
use crate::access::{hash_token, Caller};
use crate::db::queries::console_sessions::{self, ConsoleSession};
use crate::db::DbError;
use crate::random::random_hex;
use crate::unix_time::now;
use crate::ws::client_addr::over_tls;
use crate::ws::cookie::{resume, same_origin, session_id, COOKIE};
use crate::ws::state::ServerState;

/// Bytes of randomness in a session id (sent as hex).
const ID_BYTES: usize = 32;

/// The body of a sign-in.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct SignIn {
    token: String,
}

/// The cookie carrying `value`, living `max_age` seconds, as the request asks.
pub(super) fn cookie(
    request: &HttpRequest,
    state: &ServerState,
    value: String,
    max_age: i64,
) -> Cookie<'static> {
    Cookie::build(COOKIE, value)
        .path(state.agent.settings.server.console_path.clone())
        .http_only(true)
        .same_site(SameSite::Strict)
        .secure(reached_over_tls(request, state))
        .max_age(CookieAge::seconds(max_age))
        .finish()
}

/// Whether the browser reached rummy over TLS (itself, or through a trusted proxy that says
/// so): then a cookie is `Secure`.
pub(super) fn reached_over_tls(request: &HttpRequest, state: &ServerState) -> bool {
    let server = &state.agent.settings.server;
    request
        .peer_addr()
        .is_some_and(|peer| over_tls(peer.ip(), request.head(), &server.trusted_proxies))
}

/// A sign-in body that is not `{"token": "…"}` gets a 400 that echoes none of it.
pub(super) fn body_config() -> web::JsonConfig {
    web::JsonConfig::default().error_handler(|error, _| {
        actix_web::error::InternalError::from_response(
            error,
            refused(
                actix_web::http::StatusCode::BAD_REQUEST,
                "the body must be JSON: {\"token\": \"…\"}",
            ),
        )
        .into()
    })
}

pub(super) fn refused(status: actix_web::http::StatusCode, message: &str) -> HttpResponse {
    HttpResponse::build(status).json(json!({ "error": message }))
}

fn cross_origin() -> HttpResponse {
    refused(
        actix_web::http::StatusCode::FORBIDDEN,
        "this request must come from the console's own page",
    )
}

pub(super) fn store_failed(error: &DbError) -> HttpResponse {
    tracing::warn!(%error, "console session store failed");
    refused(
        actix_web::http::StatusCode::SERVICE_UNAVAILABLE,
        "the session store cannot be reached; try again",
    )
}

/// Who the caller is, for the page: `{person, role}` (`person` null for the operator).
fn identity(state: &ServerState, caller: &Caller) -> Option<serde_json::Value> {
    let grant = state.access.grant(caller).ok()?;
    Some(json!({ "person": caller.person(), "role": grant.role().to_string() }))
}

/// `POST <path>/session` `{token}`: a new session for whom the token opens the server for.
pub(super) async fn sign_in(
    request: HttpRequest,
    state: web::Data<ServerState>,
    body: web::Json<SignIn>,
) -> HttpResponse {
    let server = &state.agent.settings.server;
    if !same_origin(request.head(), &server.allowed_origins) {
        return cross_origin();
    }
    let from = audit::from(&request, &state);
    let Some(caller) = state.access.authenticate(Some(&body.token)) else {
        let reason = "that token opens nothing on this server";
        audit::refused(
            &state,
            None,
            Via::Token,
            "unknown-token",
            from,
            reason.to_owned(),
        )
        .await;
        return refused(actix_web::http::StatusCode::UNAUTHORIZED, reason);
    };
    let Some(identity) = identity(&state, &caller) else {
        return refused(
            actix_web::http::StatusCode::UNAUTHORIZED,
            "no longer a user",
        );
    };
    let person = caller.person().map(str::to_owned);
    match open(&state, person, hash_token(&body.token), Via::Token, from).await {
        Ok((id, lifetime)) => HttpResponse::Ok()
            .cookie(cookie(&request, &state, id, lifetime))
            .insert_header((header::CACHE_CONTROL, "no-store"))
            .json(identity),
        Err(response) => response,
    }
}

/// A new session acting for `person` (`None`: the operator), signed in `via` a token (its
/// SHA-256 `token_hash`) or the identity provider (`token_hash` empty), stored with its
/// audit in one unit of work: the cookie's value and lifetime in seconds, or the answer
/// that says why not.
pub(super) async fn open(
    state: &ServerState,
    person: Option<String>,
    token_hash: String,
    via: Via,
    from: String,
) -> Result<(String, i64), HttpResponse> {
    let server = &state.agent.settings.server;
    let Ok(id) = random_hex(ID_BYTES) else {
        return Err(refused(
            actix_web::http::StatusCode::SERVICE_UNAVAILABLE,
            "no randomness for a session id",
        ));
    };
    let lifetime =
        i64::try_from(server.console_session_hours.saturating_mul(3600)).unwrap_or(i64::MAX / 2);
    let now = now();
    let session = ConsoleSession {
        person,
        token_hash,
        oidc: matches!(via, Via::Oidc),
        expires_at: now.saturating_add(lifetime),
    };
    let id_hash = hash_token(&id);
    tracing::info!(person = session.person.as_deref(), ?via, "console sign-in");
    let stored = state
        .agent
        .db
        .call(move |conn| {
            console_sessions::create(conn, &id_hash, &session, now)?;
            audit::signed_in(conn, session.person.as_deref(), via, &from)
        })
        .await;
    if let Err(error) = stored {
        return Err(store_failed(&error));
    }
    Ok((id, lifetime))
}

/// `GET <path>/session`: who the cookie signs in, or 401.
pub(super) async fn who(request: HttpRequest, state: web::Data<ServerState>) -> HttpResponse {
    let caller = match session_id(request.head()) {
        Some(id) => match resume(&state, &id).await {
            Ok(caller) => caller,
            Err(error) => return store_failed(&error),
        },
        None => None,
    };
    match caller.and_then(|caller| identity(&state, &caller)) {
        Some(identity) => HttpResponse::Ok()
            .insert_header((header::CACHE_CONTROL, "no-store"))
            .json(identity),
        None => HttpResponse::Unauthorized().json(json!({
            "error": "not signed in",
            "provider": offer(&state),
        })),
    }
}

/// `DELETE <path>/session`: ends the cookie's session in the store and clears the cookie.
pub(super) async fn sign_out(request: HttpRequest, state: web::Data<ServerState>) -> HttpResponse {
    if !same_origin(request.head(), &state.agent.settings.server.allowed_origins) {
        return cross_origin();
    }
    if let Some(id) = session_id(request.head()) {
        let id_hash = hash_token(&id);
        let ended = state
            .agent
            .db
            .call(move |conn| console_sessions::delete(conn, &id_hash))
            .await;
        if let Err(error) = ended {
            return store_failed(&error);
        }
    }
    HttpResponse::NoContent()
        .cookie(cookie(&request, &state, String::new(), 0))
        .finish()
}

/// What the sign-in page offers besides a token: `{name, start}` when a provider is
/// configured.
fn offer(state: &ServerState) -> Option<serde_json::Value> {
    let settings = &state.agent.settings.oidc;
    settings.client.as_ref()?;
    Some(json!({ "name": settings.provider_name, "start": "oidc/start" }))
}
