//! Personal access tokens: a person mints them for their editors (`tokens/mint`, in
//! `rpc::handlers::tokens`), and each opens a WebSocket as today's tokens do (the same
//! `Authorization: Bearer` header or `token` query parameter), acting for its person within
//! its scope: read-only (a viewer at most) and one project, when minted so.
//!
//! A token is `rpat_` and 64 hex digits (256 random bits). The store keeps its SHA-256 (the
//! users file's hash: for a secret this random a fast hash is as strong as a slow one) and
//! its first characters ([`prefix_of`]), by which its person recognises it; the token itself
//! is shown once, in the reply to the mint.
//!
//! A token opens a connection ([`admit`]) while it is neither revoked nor expired and its
//! person is still a person of the server (the users file's, or one who signed in through
//! the identity provider on any instance: taken from the store when this one does not know
//! them yet); a connection it opened looks again on every call
//! ([`check`], one read beside the writer; nothing for other callers) and at each heartbeat
//! ([`still_open`], which closes it), so a revocation on any instance ends it. Its person's
//! role and projects as they are now bound it too (`Access::grant`), narrowed by its scope
//! (`Grant`). A use is noted (`last_used_at`) at most once a minute per token, and each
//! refused use (revoked, expired) reaches the admins' audit at most once a minute per token.

use std::net::IpAddr;
use std::sync::Arc;

use serde_json::json;

use crate::access::{Access, AccessError, Caller, TokenRefusal, TokenUse};
use crate::db::queries::oidc;
use crate::db::queries::personal_tokens::{self, TokenRow, NOTE_EVERY_SECS};
use crate::db::{DbError, DbHandle};
use crate::error::AppError;
use crate::rpc::handlers::admin_changes;
use crate::unix_time::now;

/// How every personal access token begins, so a server knows which to look up in the store.
pub(crate) const TOKEN_PREFIX: &str = "rpat_";

/// How many characters of a token the store keeps to recognise it: `rpat_` and 8 hex digits.
const SHOWN_CHARS: usize = TOKEN_PREFIX.len() + 8;

/// What a connection opened with `row`'s token may know of it.
fn token_use(row: &TokenRow) -> TokenUse {
    TokenUse::new(
        row.id,
        row.name.clone(),
        row.person.as_str().into(),
        row.read_only != 0,
        row.project.clone(),
    )
}

impl From<TokenRefusal> for AppError {
    fn from(refusal: TokenRefusal) -> Self {
        AppError::Access(refusal.into())
    }
}

/// Whether `row`'s token still opens anything at `now`.
pub(crate) fn standing(row: &TokenRow, now: i64) -> Result<(), TokenRefusal> {
    let (who, token) = (row.person.clone(), row.name.clone());
    if row.revoked_at.is_some() {
        return Err(TokenRefusal::Revoked { who, token });
    }
    if row.expires_at <= now {
        return Err(TokenRefusal::Expired { who, token });
    }
    Ok(())
}

/// A new token.
pub(crate) fn mint_secret() -> Result<String, getrandom::Error> {
    Ok(format!("{TOKEN_PREFIX}{}", crate::random::random_hex(32)?))
}

/// The first characters of `token` the store keeps to recognise it.
pub(crate) fn prefix_of(token: &str) -> String {
    token.chars().take(SHOWN_CHARS).collect()
}

/// What the audit says of a token (never the token): its id, name and first characters.
pub(crate) fn described(row: &TokenRow) -> serde_json::Value {
    json!({ "id": row.id, "name": row.name, "prefix": row.prefix })
}

/// Why the token `presented` opens no connection, for the upgrade's 401.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Unopened {
    /// No such token, or its person is gone.
    Unknown,
    Revoked,
    Expired,
}

/// Who the personal access token `presented` opens a connection for, coming from `client`.
/// A revoked or expired token's refusal is audited; a store that cannot be read opens
/// nothing.
pub(crate) async fn admit(
    db: &DbHandle,
    access: &Access,
    presented: &str,
    client: Option<IpAddr>,
) -> Result<Caller, Unopened> {
    if !presented.starts_with(TOKEN_PREFIX) {
        return Err(Unopened::Unknown);
    }
    let hash = crate::access::hash_token(presented);
    let row = match db
        .read(move |conn| personal_tokens::by_hash(conn, &hash))
        .await
    {
        Ok(Some(row)) => row,
        Ok(None) => return Err(Unopened::Unknown),
        Err(error) => {
            tracing::warn!(%error, "personal tokens unreadable");
            return Err(Unopened::Unknown);
        }
    };
    let now = now();
    if let Err(refusal) = standing(&row, now) {
        audit_refused(db, &row, &refusal, client, now);
        return Err(match refusal {
            TokenRefusal::Revoked { .. } => Unopened::Revoked,
            _ => Unopened::Expired,
        });
    }
    let token = Arc::new(token_use(&row));
    if access.grant(&Caller::Person(token.person.clone())).is_err()
        && !recalled(db, access, &token.person).await
    {
        return Err(Unopened::Unknown);
    }
    note_use(db, &token, row.last_used_at, now);
    Ok(Caller::Token(token))
}

/// Whether `person`, unknown here, is a person the identity provider signed in on another
/// instance (or before this one's start took the store's people in): then known here from
/// now on, with the role their last sign-in's groups give.
async fn recalled(db: &DbHandle, access: &Access, person: &str) -> bool {
    if !access.has_provider() {
        return false;
    }
    let name = person.to_owned();
    match db.read(move |conn| oidc::person(conn, &name)).await {
        Ok(Some(stored)) => access
            .signed_in(person, Some(&stored.group_list()))
            .is_some(),
        Ok(None) => false,
        Err(error) => {
            tracing::warn!(%error, "people who signed in through the provider unreadable");
            false
        }
    }
}

/// Refuses a call of a connection whose token was revoked or expired since it opened (the
/// refusal audited); notes the use otherwise. Nothing for a caller without a token.
pub(crate) async fn check(
    db: &DbHandle,
    caller: &Caller,
    client: Option<IpAddr>,
) -> Result<(), AccessError> {
    let Caller::Token(token) = caller else {
        return Ok(());
    };
    let id = token.id;
    let row = db
        .read(move |conn| personal_tokens::by_id(conn, id))
        .await
        .map_err(|error| AccessError::Refused(format!("the token store: {error}")))?;
    let Some(row) = row else {
        return Err(TokenRefusal::Revoked {
            who: token.person.to_string(),
            token: token.name.clone(),
        }
        .into());
    };
    let now = now();
    if let Err(refusal) = standing(&row, now) {
        audit_refused(db, &row, &refusal, client, now);
        return Err(refusal.into());
    }
    note_use(db, token, row.last_used_at, now);
    Ok(())
}

/// Whether the token of `caller` (if any) still opens the server; `Err` when the store
/// cannot say (the connection stays until the next look).
pub(crate) async fn still_open(db: &DbHandle, caller: &Caller) -> Result<bool, DbError> {
    let Caller::Token(token) = caller else {
        return Ok(true);
    };
    let id = token.id;
    let row = db
        .read(move |conn| personal_tokens::by_id(conn, id))
        .await?;
    Ok(row.is_some_and(|row| standing(&row, now()).is_ok()))
}

/// Notes a use of `token` at `now`, without waiting, unless the store or this connection
/// noted one within the minute before.
fn note_use(db: &DbHandle, token: &TokenUse, last_used_at: Option<i64>, now: i64) {
    let recent = last_used_at.is_some_and(|last| now.saturating_sub(last) < NOTE_EVERY_SECS);
    if recent || !token.claim_note(now, NOTE_EVERY_SECS) {
        return;
    }
    let id = token.id;
    db.call_later("note a token's use", move |conn| {
        personal_tokens::touch(conn, id, now).map(drop)
    });
}

/// Audits a refused use of `row`'s token from `client`, at most once a minute per token.
fn audit_refused(
    db: &DbHandle,
    row: &TokenRow,
    refusal: &TokenRefusal,
    client: Option<IpAddr>,
    now: i64,
) {
    let reason = match refusal {
        TokenRefusal::Revoked { .. } => "revoked",
        _ => "expired",
    };
    let mut detail = described(row);
    detail["reason"] = json!(reason);
    detail["from"] = json!(client.map(|addr| addr.to_string()));
    let (id, person) = (row.id, row.person.clone());
    db.call_later("audit a refused token", move |conn| {
        if personal_tokens::note_refused(conn, id, now)? {
            admin_changes::record(conn, Some(&person), "tokens/refused", &person, &detail)?;
        }
        Ok(())
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(revoked_at: Option<i64>, expires_at: i64) -> TokenRow {
        TokenRow {
            id: 1,
            person: "ana".into(),
            name: "laptop".into(),
            prefix: "rpat_12345678".into(),
            read_only: 0,
            project: None,
            created_at: 0,
            expires_at,
            last_used_at: None,
            revoked_at,
            revoked_by: None,
        }
    }

    #[test]
    fn a_token_stands_until_it_is_revoked_or_expires() {
        assert!(standing(&row(None, 100), 99).is_ok());
        assert_eq!(
            standing(&row(None, 100), 100).unwrap_err().to_string(),
            "ana's token 'laptop' expired; it opens nothing more (mint another in the console)."
        );
        assert_eq!(
            standing(&row(Some(5), 100), 10).unwrap_err().to_string(),
            "ana's token 'laptop' was revoked; it opens nothing more."
        );
    }

    #[test]
    fn a_token_is_random_and_recognised_by_its_first_characters() {
        let token = mint_secret().unwrap();
        assert!(token.starts_with("rpat_"));
        assert_eq!(token.len(), 5 + 64);
        assert_ne!(token, mint_secret().unwrap());
        assert_eq!(prefix_of(&token), token[..13]);
    }

    #[test]
    fn a_connection_claims_a_note_at_most_once_a_minute() {
        let token = token_use(&row(None, 100));
        assert!(token.claim_note(1000, NOTE_EVERY_SECS));
        assert!(!token.claim_note(1059, NOTE_EVERY_SECS));
        assert!(token.claim_note(1060, NOTE_EVERY_SECS));
    }
}
