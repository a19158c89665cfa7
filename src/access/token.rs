//! What a connection opened with a personal access token knows of it, and why a token
//! opens nothing (more) or may not do what was asked; the tokens themselves are `crate::tokens`.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

use super::Role;

/// A token a connection opened with: its person and its scope.
#[derive(Debug)]
pub(crate) struct TokenUse {
    pub id: i64,
    /// What its person called it.
    pub name: String,
    /// Whom it acts for.
    pub person: Arc<str>,
    /// It acts as a viewer at most.
    pub read_only: bool,
    /// The one project it opens, when minted for one.
    pub project: Option<String>,
    /// When this connection last asked the store to note a use (unix seconds).
    noted_at: AtomicI64,
}

impl PartialEq for TokenUse {
    fn eq(&self, other: &Self) -> bool {
        self.id == other.id
    }
}

impl Eq for TokenUse {}

impl TokenUse {
    pub(crate) fn new(
        id: i64,
        name: String,
        person: Arc<str>,
        read_only: bool,
        project: Option<String>,
    ) -> TokenUse {
        TokenUse {
            id,
            name,
            person,
            read_only,
            project,
            noted_at: AtomicI64::new(i64::MIN),
        }
    }

    /// Whether this connection should note a use at `now`: none noted by it within the
    /// `every` seconds before (the store's own condition keeps it to one such interval
    /// across them).
    pub(crate) fn claim_note(&self, now: i64, every: i64) -> bool {
        let last = self.noted_at.load(Ordering::Relaxed);
        now.saturating_sub(last) >= every
            && self
                .noted_at
                .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
    }
}

/// Why a token opens nothing (more), or may not do what was asked.
#[derive(Debug, Clone, thiserror::Error)]
pub(crate) enum TokenRefusal {
    #[error("{who}'s token '{token}' was revoked; it opens nothing more.")]
    Revoked { who: String, token: String },
    #[error(
        "{who}'s token '{token}' expired; it opens nothing more (mint another in the console)."
    )]
    Expired { who: String, token: String },
    #[error("{who}'s token '{token}' is read-only; '{method}' needs the {needed} role.")]
    ReadOnly {
        who: String,
        token: String,
        method: String,
        needed: Role,
    },
    #[error("{who}'s token '{token}' opens only project '{only}', not '{project}'.")]
    OtherProject {
        who: String,
        token: String,
        only: String,
        project: String,
    },
    #[error("A personal access token cannot mint or revoke tokens; sign in to the console.")]
    WithAToken,
    #[error(
        "The operator (the shared token) is nobody in particular and has no tokens; sign in \
         as a person to mint one."
    )]
    Operator,
    #[error("{who} may not revoke {owner}'s token: only its person or an admin may.")]
    NotYours { who: String, owner: String },
}
