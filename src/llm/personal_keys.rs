//! Whether anyone's own provider key can pay for a call here ([`PersonalKeys`]): a person
//! stored one (`keys/set`) or a project requires them (`keys/required`). While neither can
//! be, and no cap can hold a call, a call's admission reads nothing (`spending`): a feature
//! nobody configured costs nothing per turn.
//!
//! One instance alone on its store (SQLite) reads the answer at start and learns it after
//! from its own writes: the call that stores a key or sets a requirement notes it before
//! writing, so every call admitted after that write reads the store again. It never goes
//! back (a key removed leaves the fact set until the next start). On a store several
//! instances share (PostgreSQL) a key or a requirement may be set on another instance at any
//! moment, and a call here must see it at once, so the fact is held set there and each
//! admission reads.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use crate::db::queries::key_policy;
use crate::db::{DbError, DbHandle};

/// Whether a person's own key may pay for a call. Cheap to clone; until [`Self::learn`],
/// it may (the safe answer: admission reads).
#[derive(Clone)]
pub(crate) struct PersonalKeys {
    possible: Arc<AtomicBool>,
}

impl Default for PersonalKeys {
    fn default() -> PersonalKeys {
        PersonalKeys {
            possible: Arc::new(AtomicBool::new(true)),
        }
    }
}

impl PersonalKeys {
    /// Whether a call's admission must read its starter's key and its project's requirement.
    pub(crate) fn possible(&self) -> bool {
        self.possible.load(Ordering::SeqCst)
    }

    /// Notes, before it is written, that a key is stored or a requirement set.
    pub(crate) fn note(&self) {
        self.possible.store(true, Ordering::SeqCst);
    }

    /// Reads at start whether any key or requirement is stored; on a `shared` store, none is
    /// read and the fact stays set.
    pub(crate) async fn learn(&self, db: &DbHandle, shared: bool) -> Result<(), DbError> {
        if shared {
            return Ok(());
        }
        let in_use = db.read(key_policy::anyone_keyed).await?;
        self.possible.store(in_use, Ordering::SeqCst);
        Ok(())
    }
}
