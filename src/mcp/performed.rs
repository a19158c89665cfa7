//! Calls made outside the writer, waiting for the unit of work that records them.
//!
//! A tool handler runs on the DB writer inside a transaction and must not wait on a server,
//! so a reply's direct calls are made before its commands are dispatched
//! ([`crate::mcp::McpServers::perform`]), and an accepted proposal's call before the
//! resolution's unit of work ([`crate::mcp::McpServers::perform_accepted`]). Their outcomes
//! wait here under a [`CallKey`] until the handler (or the acceptance) takes them; the
//! [`Performed`] guard the caller holds drops whatever was not taken.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, PoisonError};

use crate::db::ids::RunId;
use crate::mcp::outcome::CallOutcome;

/// Which command an outcome belongs to.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum CallKey {
    /// A call written in a reply: its run and turn, the server's tag, the tool and its
    /// arguments as written.
    Reply {
        run: RunId,
        turn: i32,
        tag: String,
        tool: String,
        arguments: String,
    },
    /// The call of an accepted proposal, at its path.
    Accepted { run: RunId, path: String },
}

/// The outcomes not yet taken (a reply may make the same call twice: in order).
#[derive(Debug, Default)]
pub struct Outcomes {
    waiting: Mutex<HashMap<CallKey, VecDeque<CallOutcome>>>,
}

impl Outcomes {
    /// Keeps `outcome` for the command at `key`.
    pub fn put(&self, key: CallKey, outcome: CallOutcome) {
        self.waiting
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(key)
            .or_default()
            .push_back(outcome);
    }

    /// The first outcome kept for `key`.
    pub fn take(&self, key: &CallKey) -> Option<CallOutcome> {
        let mut waiting = self.waiting.lock().unwrap_or_else(PoisonError::into_inner);
        let queue = waiting.get_mut(key)?;
        let outcome = queue.pop_front();
        if queue.is_empty() {
            waiting.remove(key);
        }
        outcome
    }

    fn forget(&self, keys: &[CallKey]) {
        let mut waiting = self.waiting.lock().unwrap_or_else(PoisonError::into_inner);
        for key in keys {
            waiting.remove(key);
        }
    }
}

/// The outcomes one caller put; held until its unit of work is done, then dropped with
/// whatever it did not take (a command the dispatch cancelled).
#[must_use = "the outcomes are dropped with it"]
pub struct Performed {
    outcomes: Arc<Outcomes>,
    keys: Vec<CallKey>,
}

impl Performed {
    /// Nothing put yet.
    pub fn new(outcomes: Arc<Outcomes>) -> Performed {
        Performed {
            outcomes,
            keys: Vec::new(),
        }
    }

    /// Keeps `outcome` for the command at `key`.
    pub fn put(&mut self, key: CallKey, outcome: CallOutcome) {
        self.outcomes.put(key.clone(), outcome);
        self.keys.push(key);
    }
}

impl Drop for Performed {
    fn drop(&mut self) {
        self.outcomes.forget(&self.keys);
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::{CallKey, Outcomes, Performed};
    use crate::db::ids::RunId;
    use crate::mcp::outcome::CallOutcome;

    fn key() -> CallKey {
        CallKey::Accepted {
            run: RunId(1),
            path: "mcp_x://turn_1/t".into(),
        }
    }

    #[test]
    fn outcomes_are_taken_in_order_and_dropped_with_their_guard() {
        let outcomes = Arc::new(Outcomes::default());
        let mut performed = Performed::new(Arc::clone(&outcomes));
        performed.put(key(), CallOutcome::Done("1".into()));
        performed.put(key(), CallOutcome::Done("2".into()));
        assert_eq!(outcomes.take(&key()), Some(CallOutcome::Done("1".into())));
        drop(performed);
        assert_eq!(outcomes.take(&key()), None);
    }
}
