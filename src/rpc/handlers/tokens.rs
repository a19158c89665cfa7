//! `tokens/mint`, `tokens/list` and `tokens/revoke`: a person's personal access tokens
//! (`tokens`). A person mints tokens for themselves (never with a token, never the
//! operator), sees theirs and revokes any of them; an admin lists and revokes anyone's. The
//! token is answered once by the mint and stored only as its hash. Each mint and
//! revocation is audited (`admin/changes`) with who, when and from where, never the token.

use serde::{Deserialize, Serialize};
use serde_json::json;

use super::admin_changes::record;
use crate::access::TokenRefusal;
use crate::access::{hash_token, Caller, Role};
use crate::agent::allow::person_key;
use crate::db::queries::personal_tokens::{self, NewToken, TokenRow};
use crate::error::AppError;
use crate::rpc::call::{CallContext, Reply};
use crate::tokens::{described, mint_secret, prefix_of, standing};
use crate::unix_time::now;

/// The longest a token lives, in days.
pub(crate) const MAX_DAYS: i64 = 366;

/// The most tokens a person may hold at once (neither revoked nor expired).
pub(crate) const MAX_LIVE: i64 = 100;

/// The longest name a token may have, in characters.
const NAME_MAX_CHARS: usize = 64;

/// `tokens/mint` params.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct MintParams {
    name: String,
    expires_in_days: i64,
    #[serde(default)]
    read_only: bool,
    #[serde(default)]
    project: Option<String>,
}

/// `tokens/list` params.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ListParams {
    /// Everyone's tokens (admins).
    #[serde(default)]
    all: bool,
}

/// `tokens/revoke` params.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RevokeParams {
    id: i64,
}

/// A token as `tokens/list` shows it: never the token or its hash.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct TokenView {
    id: i64,
    person: String,
    name: String,
    /// Its first characters, to recognise it.
    prefix: String,
    read_only: bool,
    project: Option<String>,
    /// Unix seconds.
    created_at: i64,
    expires_at: i64,
    last_used_at: Option<i64>,
    revoked_at: Option<i64>,
    /// Who revoked it (`null`: the operator, or not revoked).
    revoked_by: Option<String>,
    /// `live`, `expired` or `revoked`.
    state: &'static str,
}

impl TokenView {
    fn of(row: TokenRow, now: i64) -> TokenView {
        let state = match standing(&row, now) {
            Ok(()) => "live",
            Err(TokenRefusal::Revoked { .. }) => "revoked",
            Err(_) => "expired",
        };
        TokenView {
            id: row.id,
            person: row.person,
            name: row.name,
            prefix: row.prefix,
            read_only: row.read_only != 0,
            project: row.project,
            created_at: row.created_at,
            expires_at: row.expires_at,
            last_used_at: row.last_used_at,
            revoked_at: row.revoked_at,
            revoked_by: row.revoked_by.filter(|by| !by.is_empty()),
            state,
        }
    }
}

/// The person who may manage tokens on this call: a person, not through a token.
fn manager(context: &CallContext) -> Result<&str, AppError> {
    match &context.caller {
        Caller::Person(name) => Ok(name),
        Caller::Token(_) => Err(TokenRefusal::WithAToken.into()),
        Caller::Operator => Err(TokenRefusal::Operator.into()),
    }
}

/// Refuses a token name that is empty, too long or holds control characters.
fn checked_name(name: &str) -> Result<String, AppError> {
    let name = name.trim();
    if name.is_empty()
        || name.chars().count() > NAME_MAX_CHARS
        || name.chars().any(char::is_control)
    {
        return Err(AppError::InvalidParam(format!(
            "name must be 1 to {NAME_MAX_CHARS} characters, none of them control characters"
        )));
    }
    Ok(name.to_owned())
}

/// `tokens/mint`: a new token of the caller's, answered this once.
pub(crate) async fn mint(context: CallContext, params: MintParams) -> Result<Reply, AppError> {
    let person = manager(&context)?.to_owned();
    let name = checked_name(&params.name)?;
    if !(1..=MAX_DAYS).contains(&params.expires_in_days) {
        return Err(AppError::InvalidParam(format!(
            "expiresInDays must be 1 to {MAX_DAYS} (got {})",
            params.expires_in_days
        )));
    }
    if let Some(project) = &params.project {
        context.grant()?.open(project)?;
    }
    let token = mint_secret()
        .map_err(|error| AppError::Internal(format!("cannot draw a token: {error}")))?;
    let now = now();
    let new = NewToken {
        person: person.clone(),
        name,
        token_hash: hash_token(&token),
        prefix: prefix_of(&token),
        read_only: params.read_only,
        project: params.project,
        created_at: now,
        expires_at: now.saturating_add(params.expires_in_days.saturating_mul(86_400)),
    };
    let from = context.client_addr.map(|addr| addr.to_string());
    let stored = new.clone();
    let id = context
        .agent
        .db
        .call(move |conn| {
            if personal_tokens::live_count(conn, &stored.person, now)? >= MAX_LIVE {
                return Ok(None);
            }
            let id = personal_tokens::insert(conn, &stored)?;
            let detail = json!({
                "id": id, "name": stored.name, "prefix": stored.prefix,
                "expiresAt": stored.expires_at, "readOnly": stored.read_only,
                "project": stored.project, "from": from,
            });
            record(
                conn,
                Some(&stored.person),
                "tokens/mint",
                &stored.person,
                &detail,
            )?;
            Ok(Some(id))
        })
        .await?
        .ok_or_else(|| {
            AppError::InvalidParam(format!(
                "{person} holds {MAX_LIVE} live tokens, the most one may; revoke one first"
            ))
        })?;
    Reply::of(json!({
        "id": id,
        "name": new.name,
        "token": token,
        "prefix": new.prefix,
        "readOnly": new.read_only,
        "project": new.project,
        "createdAt": new.created_at,
        "expiresAt": new.expires_at,
    }))
}

/// `tokens/list`: the caller's tokens, or with `all` (admins) everyone's, newest first.
pub(crate) async fn list(context: CallContext, params: ListParams) -> Result<Reply, AppError> {
    let person = if params.all {
        context.grant()?.require(Role::Admin, "tokens/list all")?;
        None
    } else {
        Some(
            context
                .caller
                .person()
                .ok_or(TokenRefusal::Operator)?
                .to_owned(),
        )
    };
    let rows = context
        .agent
        .db
        .read(move |conn| personal_tokens::list(conn, person.as_deref()))
        .await?;
    let now = now();
    let tokens: Vec<TokenView> = rows
        .into_iter()
        .map(|row| TokenView::of(row, now))
        .collect();
    Reply::of(json!({ "tokens": tokens }))
}

/// `tokens/revoke`: revokes one of the caller's tokens, or an admin anyone's; it opens
/// nothing more, and connections it opened can do nothing more.
pub(crate) async fn revoke(context: CallContext, params: RevokeParams) -> Result<Reply, AppError> {
    if matches!(context.caller, Caller::Token(_)) {
        return Err(TokenRefusal::WithAToken.into());
    }
    let admin = context.grant()?.role() >= Role::Admin;
    let by = context.person();
    let id = params.id;
    let row = context
        .agent
        .db
        .read(move |conn| personal_tokens::by_id(conn, id))
        .await?
        .ok_or_else(|| AppError::InvalidParam(format!("there is no token {id}")))?;
    if !admin && by.as_deref() != Some(row.person.as_str()) {
        return Err(TokenRefusal::NotYours {
            who: by.unwrap_or_default(),
            owner: row.person,
        }
        .into());
    }
    let now = now();
    let from = context.client_addr.map(|addr| addr.to_string());
    let revoked = context
        .agent
        .db
        .call(move |conn| {
            let revoked = personal_tokens::revoke(conn, id, person_key(by.as_deref()), now)?;
            if revoked {
                let mut detail = described(&row);
                detail["from"] = json!(from);
                record(conn, by.as_deref(), "tokens/revoke", &row.person, &detail)?;
            }
            Ok(revoked)
        })
        .await?;
    Reply::of(json!({ "id": id, "revoked": revoked }))
}
