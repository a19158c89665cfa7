//! Console sign-ins in the admins' audit (`admin/changes`): each sign-in and each refused
//! one, as a [`SIGN_IN`] or [`REFUSED`] change by the person (`null`: the operator, with the
//! shared token; [`UNKNOWN`] when a refused one names no one), with how (`via`: `token` or
//! `oidc`), from where (`from`: the client's address, through trusted proxies) and, for a
//! refusal, why. Never a token, a code or a secret.

use actix_web::HttpRequest;
use serde_json::json;

use crate::db::{Conn, DbError};
use crate::rpc::handlers::admin_changes::record;
use crate::ws::client_addr::client_addr;
use crate::ws::state::ServerState;

pub(super) const SIGN_IN: &str = "console/signIn";
pub(super) const REFUSED: &str = "console/signInRefused";
/// Who a refused sign-in was by when it names no one (not a possible person's name).
const UNKNOWN: &str = "(unknown)";

/// How a sign-in was made.
#[derive(Debug, Clone, Copy)]
pub(super) enum Via {
    Token,
    Oidc,
}

impl Via {
    fn as_str(self) -> &'static str {
        match self {
            Via::Token => "token",
            Via::Oidc => "oidc",
        }
    }
}

/// The address `request` comes from, as the audit shows it.
pub(super) fn from(request: &HttpRequest, state: &ServerState) -> String {
    request.peer_addr().map_or_else(String::new, |peer| {
        client_addr(
            peer.ip(),
            request.head(),
            &state.agent.settings.server.trusted_proxies,
        )
        .to_string()
    })
}

/// Notes that `person` (`None`: the operator) signed in, in the unit of work that stores the
/// session.
pub(super) fn signed_in(
    conn: &mut Conn,
    person: Option<&str>,
    via: Via,
    from: &str,
) -> Result<(), DbError> {
    record(
        conn,
        person,
        SIGN_IN,
        person.unwrap_or(""),
        &json!({ "via": via.as_str(), "from": from }),
    )
}

/// Notes a refused sign-in of `person` (when known) and why; a store that fails is logged.
pub(super) async fn refused(
    state: &ServerState,
    person: Option<String>,
    via: Via,
    from: String,
    reason: String,
) {
    let noted = state
        .agent
        .db
        .call(move |conn| {
            record(
                conn,
                Some(person.as_deref().unwrap_or(UNKNOWN)),
                REFUSED,
                person.as_deref().unwrap_or(""),
                &json!({ "via": via.as_str(), "from": from, "reason": reason }),
            )
        })
        .await;
    if let Err(error) = noted {
        tracing::warn!(%error, "a refused console sign-in could not be audited");
    }
}
