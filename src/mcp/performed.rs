//! The outcomes of calls made before the unit of work that records them.
//!
//! A tool handler runs on the DB writer inside a transaction and must not wait on a server,
//! so a reply's direct calls are made before its commands are dispatched
//! ([`crate::mcp::McpServers::perform`]), and an accepted proposal's call before the
//! resolution's unit of work ([`crate::mcp::McpServers::perform_accepted`]). Their
//! [`CallOutcomes`] go to that unit as one kind of
//! [`Answers`](crate::plugins::answers::Answers), where the handler (or the acceptance)
//! takes each by its [`CallKey`]; what it does not take (a command the dispatch cancelled)
//! is dropped with the unit.

use std::collections::{HashMap, VecDeque};

use crate::mcp::outcome::CallOutcome;
use crate::plugins::answers::answered;

/// Which command of the unit an outcome belongs to.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum CallKey {
    /// A call written in the reply: the server's tag, the tool and its arguments as written.
    Reply {
        tag: String,
        tool: String,
        arguments: String,
    },
    /// The call of the accepted proposal at `path`.
    Accepted { path: String },
}

/// The outcomes of one unit's calls (a reply may make the same call twice: in order).
#[derive(Debug, Default)]
pub struct CallOutcomes {
    waiting: HashMap<CallKey, VecDeque<CallOutcome>>,
}

impl CallOutcomes {
    /// Keeps `outcome` for the command at `key`.
    pub fn put(&mut self, key: CallKey, outcome: CallOutcome) {
        self.waiting.entry(key).or_default().push_back(outcome);
    }

    /// The first outcome kept for `key` by the unit running on this thread.
    pub fn take(key: &CallKey) -> Option<CallOutcome> {
        answered::<CallOutcomes, _>(|outcomes| outcomes.waiting.get_mut(key)?.pop_front()).flatten()
    }
}

#[cfg(test)]
mod tests {
    use super::{CallKey, CallOutcomes};
    use crate::mcp::outcome::CallOutcome;
    use crate::plugins::answers::Answers;

    fn key() -> CallKey {
        CallKey::Accepted {
            path: "mcp_x://turn_1/t".into(),
        }
    }

    #[test]
    fn outcomes_are_taken_in_order_inside_their_unit_only() {
        let mut outcomes = CallOutcomes::default();
        outcomes.put(key(), CallOutcome::Done("1".into()));
        outcomes.put(key(), CallOutcome::Done("2".into()));
        let taken = Answers::of(outcomes).apply(|| {
            let first = CallOutcomes::take(&key());
            (
                first,
                CallOutcomes::take(&key()),
                CallOutcomes::take(&key()),
            )
        });
        assert_eq!(
            taken,
            (
                Some(CallOutcome::Done("1".into())),
                Some(CallOutcome::Done("2".into())),
                None
            )
        );
        assert_eq!(CallOutcomes::take(&key()), None);
    }
}
