//! How often refused console sign-ins reach the audit: the first refusal of a kind (how,
//! why, from which address, of whom) in a minute writes its row; the others of that kind
//! in the same minute only count in that row (`detail.count`). A flood of refused sign-ins
//! (a bot replaying callbacks, guessing tokens) grows the audit by one row per kind and
//! address a minute, and this instance's memory by as many entries, forgotten after the
//! minute; past [`MAX_KINDS`] kinds in one minute, the rest share one entry and one row,
//! whatever address they came from.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

/// Seconds a refusal's row takes the others of its kind.
pub(crate) const WINDOW_SECS: i64 = 60;
/// Kinds counted apart in one minute, at most; the rest count as from [`MANY`].
pub(crate) const MAX_KINDS: usize = 4096;
/// The address the refusals past [`MAX_KINDS`] are counted under.
pub(crate) const MANY: &str = "(many addresses)";

/// What makes two refusals one row: how (`token`, `oidc`), why (a fixed name of the
/// reason, never text a caller chose), from where, and of whom (when known).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct RefusalKind {
    pub via: &'static str,
    pub why: &'static str,
    pub from: String,
    pub person: Option<String>,
}

#[derive(Debug)]
struct Noted {
    since: i64,
    /// The audit row, once written.
    row: Option<i64>,
    count: u64,
    /// Whether a write of the count is on its way (it writes the count as it is then).
    pending: bool,
}

/// What to do with one refusal.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Note {
    /// Write its row (the first of its kind this minute).
    Write(RefusalKind),
    /// Write the count ([`RefusalNotes::take_count`]) into the row `row`.
    Count { row: i64, kind: RefusalKind },
    /// Nothing: the row, or its count, is on its way and takes this one in.
    Counted,
}

/// The refusals of the last minute, by kind. Cheap to clone (one table).
#[derive(Debug, Clone, Default)]
pub(crate) struct RefusalNotes {
    noted: Arc<Mutex<HashMap<RefusalKind, Noted>>>,
}

impl RefusalNotes {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<RefusalKind, Noted>> {
        self.noted.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Counts a refusal of `kind` at `now`: what to write for it.
    pub(crate) fn claim(&self, mut kind: RefusalKind, now: i64) -> Note {
        let mut noted = self.lock();
        noted.retain(|_, seen| now.saturating_sub(seen.since) < WINDOW_SECS);
        if !noted.contains_key(&kind) && noted.len() >= MAX_KINDS {
            kind.from = MANY.to_owned();
            kind.person = None;
        }
        match noted.get_mut(&kind) {
            Some(seen) => {
                seen.count += 1;
                match seen.row {
                    Some(row) if !seen.pending => {
                        seen.pending = true;
                        Note::Count { row, kind }
                    }
                    _ => Note::Counted,
                }
            }
            None => {
                noted.insert(
                    kind.clone(),
                    Noted {
                        since: now,
                        row: None,
                        count: 1,
                        pending: true,
                    },
                );
                Note::Write(kind)
            }
        }
    }

    /// Notes that `kind`'s row is `row`; how many refusals it stands for by now.
    pub(crate) fn written(&self, kind: &RefusalKind, row: i64) -> u64 {
        let mut noted = self.lock();
        let Some(seen) = noted.get_mut(kind) else {
            return 1;
        };
        seen.row = Some(row);
        seen.pending = false;
        seen.count
    }

    /// How many refusals `kind`'s row stands for now, as its pending write takes it
    /// (`None` once the minute is over: the count written last stays).
    pub(crate) fn take_count(&self, kind: &RefusalKind) -> Option<u64> {
        let mut noted = self.lock();
        let seen = noted.get_mut(kind)?;
        seen.pending = false;
        Some(seen.count)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(why: &'static str, from: &str) -> RefusalKind {
        RefusalKind {
            via: "oidc",
            why,
            from: from.into(),
            person: None,
        }
    }

    #[test]
    fn one_row_per_kind_and_address_a_minute_counting_the_others() {
        let notes = RefusalNotes::default();
        let state = kind("unknown-state", "10.0.0.1");
        assert_eq!(notes.claim(state.clone(), 1000), Note::Write(state.clone()));
        assert_eq!(notes.claim(state.clone(), 1001), Note::Counted);
        assert_eq!(notes.written(&state, 7), 2);
        let count = Note::Count {
            row: 7,
            kind: state.clone(),
        };
        assert_eq!(notes.claim(state.clone(), 1002), count);
        assert_eq!(notes.claim(state.clone(), 1003), Note::Counted);
        assert_eq!(notes.take_count(&state), Some(4));
        assert_eq!(notes.claim(state.clone(), 1059), count);
        assert_eq!(notes.take_count(&state), Some(5));
        let other_address = kind("unknown-state", "10.0.0.2");
        assert_eq!(
            notes.claim(other_address.clone(), 1059),
            Note::Write(other_address)
        );
        let other_reason = kind("other-browser", "10.0.0.1");
        assert_eq!(
            notes.claim(other_reason.clone(), 1059),
            Note::Write(other_reason)
        );
        assert_eq!(notes.claim(state.clone(), 1060), Note::Write(state.clone()));
        assert_eq!(notes.written(&state, 8), 1);
    }

    #[test]
    fn past_the_most_kinds_a_minute_the_rest_share_one_row() {
        let notes = RefusalNotes::default();
        for at in 0..MAX_KINDS {
            let fresh = kind("unknown-state", &format!("10.{at}"));
            assert!(matches!(notes.claim(fresh, 1000), Note::Write(_)));
        }
        let many = kind("unknown-state", MANY);
        assert_eq!(
            notes.claim(kind("unknown-state", "192.0.2.1"), 1000),
            Note::Write(many.clone())
        );
        assert_eq!(
            notes.claim(kind("unknown-state", "192.0.2.2"), 1000),
            Note::Counted
        );
        assert_eq!(notes.written(&many, 9), 2);
        assert!(matches!(
            notes.claim(kind("unknown-state", "192.0.2.3"), 1060),
            Note::Write(RefusalKind { from, .. }) if from == "192.0.2.3"
        ));
    }
}
