//! The web console's session cookie on the way in: whom it opens the server for, and whether
//! a request carrying it comes from the console's own page. The console (`console`) issues
//! and ends sessions; the upgrade admits the console's WebSocket with [`caller`].

use actix_http::RequestHead;
use actix_web::cookie::Cookie;
use actix_web::http::header;

use crate::access::{decode_hash, hash_token, Caller};
use crate::db::queries::{console_sessions, oidc};
use crate::db::DbError;
use crate::unix_time::now;
use crate::ws::gate::Refusal;
use crate::ws::state::ServerState;

/// The session cookie's name.
pub(crate) const COOKIE: &str = "rummy_session";

/// The path of the console's WebSocket under the console's path `base`.
pub(crate) fn socket_path(base: &str) -> String {
    format!("{base}/rpc")
}

/// Whether `head` comes from a page of this server: its `Origin` names the host it was sent
/// to (`Host`), or is one of `RUMMY_ALLOWED_ORIGINS`. A request without `Origin` is not.
pub(crate) fn same_origin(head: &RequestHead, allowed: &[String]) -> bool {
    let Some(origin) = head
        .headers()
        .get(header::ORIGIN)
        .and_then(|value| value.to_str().ok())
    else {
        return false;
    };
    if allowed.iter().any(|allowed| allowed == origin) {
        return true;
    }
    let host = head
        .headers()
        .get(header::HOST)
        .and_then(|value| value.to_str().ok());
    let authority = origin
        .strip_prefix("https://")
        .or_else(|| origin.strip_prefix("http://"));
    matches!((authority, host), (Some(authority), Some(host)) if authority.eq_ignore_ascii_case(host))
}

/// The session id of the cookie `head` carries.
pub(crate) fn session_id(head: &RequestHead) -> Option<String> {
    head.headers()
        .get_all(header::COOKIE)
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(';'))
        .filter_map(|pair| Cookie::parse(pair.trim()).ok())
        .find(|cookie| cookie.name() == COOKIE)
        .map(|cookie| cookie.value().to_owned())
}

/// Who the session `id` acts for now; `None` when it is unknown, expired, signed out, or
/// its token no longer opens the server (for a sign-in through the identity provider: its
/// person is no longer known, `Access::signed_in`).
pub(crate) async fn resume(state: &ServerState, id: &str) -> Result<Option<Caller>, DbError> {
    resume_hashed(state, hash_token(id)).await
}

/// [`resume`] of the session whose id's SHA-256 (hex) is `id_hash`.
pub(crate) async fn resume_hashed(
    state: &ServerState,
    id_hash: String,
) -> Result<Option<Caller>, DbError> {
    let now = now();
    let stored = state
        .agent
        .db
        .read(move |conn| {
            let Some(session) = console_sessions::find(conn, &id_hash, now)? else {
                return Ok(None);
            };
            let signed_in = match (&session.person, session.oidc) {
                (Some(name), true) => oidc::person(conn, name)?,
                _ => None,
            };
            Ok(Some((session, signed_in)))
        })
        .await?;
    Ok(stored.and_then(|(session, signed_in)| {
        if session.oidc {
            let groups = signed_in.map(|person| person.group_list());
            return state.access.signed_in(&session.person?, groups.as_deref());
        }
        let token_hash = decode_hash(&session.token_hash)?;
        state.access.resume(session.person.as_deref(), &token_hash)
    }))
}

/// Who the console WebSocket request `head` acts for, and the SHA-256 of its session id
/// (by which the connection looks again whether its session still holds): it must come
/// from the page's origin (403 otherwise) and carry a live session (401 otherwise; a store
/// that cannot be read opens nothing).
pub(crate) async fn caller(
    head: &RequestHead,
    state: &ServerState,
) -> Result<(Caller, String), Refusal> {
    if !same_origin(head, &state.agent.settings.server.allowed_origins) {
        return Err(Refusal::Origin);
    }
    let id_hash = hash_token(&session_id(head).ok_or(Refusal::Unauthorized)?);
    match resume_hashed(state, id_hash.clone()).await {
        Ok(Some(caller)) => Ok((caller, id_hash)),
        Ok(None) => Err(Refusal::Unauthorized),
        Err(error) => {
            tracing::warn!(%error, "console session store failed");
            Err(Refusal::Unauthorized)
        }
    }
}
