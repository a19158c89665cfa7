//! Console sign-ins in the admins' audit (`admin/changes`): each sign-in and each refused
//! one, as a [`SIGN_IN`] or [`REFUSED`] change by the person (`null`: the operator, with the
//! shared token; [`UNKNOWN`] when a refused one names no one), with how (`via`: `token` or
//! `oidc`), from where (`from`: the client's address, through trusted proxies) and, for a
//! refusal, why and how many times in its minute (`count`: one row per kind of refusal,
//! address and minute, [`super::refusals`]). Never a token, a code or a secret.

use actix_web::HttpRequest;
use serde_json::{json, Value};

use super::refusals::{Note, RefusalKind};
use crate::db::queries::admin_changes;
use crate::db::{Conn, DbError};
use crate::rpc::handlers::admin_changes::record;
use crate::unix_time::now;
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

/// Notes a refused sign-in of `person` (when known) and why (`why`: the reason's fixed name,
/// `reason`: what it said), the first of its kind from `from` in a minute as a row of its
/// own, the others of the minute as its `count` ([`super::refusals`]); a store that fails
/// is logged.
pub(super) async fn refused(
    state: &ServerState,
    person: Option<String>,
    via: Via,
    why: &'static str,
    from: String,
    reason: String,
) {
    let notes = state.sign_in_refusals.clone();
    let kind = RefusalKind {
        via: via.as_str(),
        why,
        from,
        person,
    };
    let noted = match notes.claim(kind, now()) {
        Note::Counted => return,
        Note::Write(kind) => {
            let detail = json!({ "via": via.as_str(), "from": kind.from, "reason": reason });
            state
                .agent
                .db
                .call(move |conn| {
                    let person = kind.person.as_deref();
                    let id = admin_changes::record_returning_id(
                        conn,
                        person.unwrap_or(UNKNOWN),
                        REFUSED,
                        person.unwrap_or(""),
                        &counted(&detail, 1),
                    )?;
                    let count = notes.written(&kind, id);
                    if count > 1 {
                        admin_changes::set_detail(conn, id, &counted(&detail, count))?;
                    }
                    Ok(())
                })
                .await
        }
        Note::Count { row, kind } => {
            state
                .agent
                .db
                .call(move |conn| {
                    let (Some(count), Some(detail)) = (
                        notes.take_count(&kind),
                        admin_changes::detail_of(conn, row)?,
                    ) else {
                        return Ok(());
                    };
                    let detail = serde_json::from_str(&detail).unwrap_or(Value::Null);
                    admin_changes::set_detail(conn, row, &counted(&detail, count))
                })
                .await
        }
    };
    if let Err(error) = noted {
        tracing::warn!(%error, "a refused console sign-in could not be audited");
    }
}

/// `detail` with `count`.
fn counted(detail: &Value, count: u64) -> String {
    let mut detail = detail.clone();
    detail["count"] = json!(count);
    detail.to_string()
}
