//! The spend caps admins set at run time (`caps/set`, `stored_caps` in the store), held in
//! memory so that admitting a model call reads no more than before: each replaces the
//! configured cap of the same scope, subject, period and unit (`Limits::replaced_by`); the
//! configured ones it does not name stay. An instance takes them at start and after each
//! change it makes; on a store several instances share, each also reads them again every
//! heartbeat ([`follow`]), so a cap set on one instance holds on the others within a beat.

use std::collections::HashMap;
use std::sync::{Arc, PoisonError, RwLock};
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::db::queries::stored_caps::{self, StoredCapRow};
use crate::db::{DbError, DbHandle};
use crate::usage::{CapLimits, Limits, Scope};

/// The stored caps of each scope, by subject.
#[derive(Debug, Default, PartialEq)]
struct Held {
    server: Limits,
    projects: HashMap<String, Limits>,
    people: HashMap<String, Limits>,
}

/// The stored caps as last read. Cheap to clone.
#[derive(Clone, Default)]
pub(crate) struct StoredCaps {
    held: Arc<RwLock<Arc<Held>>>,
}

impl StoredCaps {
    /// The stored caps of `scope` and `subject` (none for a run: its caps are its own).
    pub(crate) fn of(&self, scope: Scope, subject: &str) -> Limits {
        let held = self
            .held
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        match scope {
            Scope::Server => held.server.clone(),
            Scope::Project => held.projects.get(subject).cloned().unwrap_or_default(),
            Scope::Person => held.people.get(subject).cloned().unwrap_or_default(),
            Scope::Run => Limits::default(),
        }
    }

    /// Whether no stored cap limits anything.
    pub(crate) fn is_empty(&self) -> bool {
        let held = self
            .held
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        held.server.is_empty()
            && held.projects.values().all(Limits::is_empty)
            && held.people.values().all(Limits::is_empty)
    }

    /// Reads them again from the store; whether they changed.
    pub(crate) async fn reload(&self, db: &DbHandle) -> Result<bool, DbError> {
        let rows = db.read(stored_caps::all).await?;
        let held = held(rows);
        let mut current = self.held.write().unwrap_or_else(PoisonError::into_inner);
        if **current == held {
            return Ok(false);
        }
        *current = Arc::new(held);
        Ok(true)
    }
}

/// The caps of `rows`; a row that does not read (written by a later version) is left out,
/// logged.
fn held(rows: Vec<StoredCapRow>) -> Held {
    let mut held = Held::default();
    for row in rows {
        let limits = serde_json::from_str::<CapLimits>(&row.caps)
            .map_err(|error| error.to_string())
            .and_then(|caps| caps.checked().map_err(|error| error.to_string()));
        let limits = match limits {
            Ok(limits) => limits,
            Err(error) => {
                tracing::warn!(scope = row.scope, subject = row.subject, %error, "a stored cap does not read; left out");
                continue;
            }
        };
        match row.scope.as_str() {
            "server" => held.server = limits,
            "project" => {
                held.projects.insert(row.subject, limits);
            }
            "person" => {
                held.people.insert(row.subject, limits);
            }
            other => tracing::warn!(scope = other, "a stored cap of no known scope; left out"),
        }
    }
    held
}

/// Reads the stored caps again every `every` until `stop`, calling `changed` when they
/// changed (a paused loop may be free).
pub(crate) async fn follow(
    stored: StoredCaps,
    db: DbHandle,
    every: Duration,
    stop: CancellationToken,
    changed: impl Fn(),
) {
    let mut tick = tokio::time::interval(every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            () = stop.cancelled() => return,
            _ = tick.tick() => {}
        }
        match stored.reload(&db).await {
            Ok(true) => changed(),
            Ok(false) => {}
            Err(error) => tracing::warn!(%error, "cannot read the stored spend caps"),
        }
    }
}
