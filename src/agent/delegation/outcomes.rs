//! The reports of children that ran before their reply's unit of work, waiting for the
//! `<delegate>` handler to record them.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, PoisonError};

use crate::agent::delegation::tool::Task;
use crate::db::enums::EntryStatus;
use crate::db::ids::RunId;

/// Which `<delegate>` a report belongs to: the parent run, its turn and the command.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TaskKey {
    pub run: RunId,
    pub turn: i32,
    pub task: Task,
}

/// What a child came to, as the parent's result entry says it.
#[derive(Debug, Clone, PartialEq)]
pub struct Report {
    /// 200 with the child's summary; a failure status with why.
    pub status: EntryStatus,
    pub body: String,
    /// The child run's alias (none when no child was made).
    pub child: Option<String>,
}

/// The reports not yet taken (a reply may delegate the same task twice: in order).
#[derive(Debug, Default)]
pub struct Outcomes {
    waiting: Mutex<HashMap<TaskKey, VecDeque<Report>>>,
}

impl Outcomes {
    /// The first report kept for `key`.
    pub fn take(&self, key: &TaskKey) -> Option<Report> {
        let mut waiting = self.waiting.lock().unwrap_or_else(PoisonError::into_inner);
        let queue = waiting.get_mut(key)?;
        let report = queue.pop_front();
        if queue.is_empty() {
            waiting.remove(key);
        }
        report
    }
}

/// The reports one reply's children left; held until its unit of work is done, then
/// dropped with whatever the handler did not take (a command the dispatch cancelled).
#[must_use = "the reports are dropped with it"]
pub struct Delegated {
    outcomes: Arc<Outcomes>,
    keys: Vec<TaskKey>,
}

impl Delegated {
    /// Nothing put yet.
    pub fn new(outcomes: Arc<Outcomes>) -> Delegated {
        Delegated {
            outcomes,
            keys: Vec::new(),
        }
    }

    /// Keeps `report` for the command at `key`.
    pub fn put(&mut self, key: TaskKey, report: Report) {
        self.outcomes
            .waiting
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(key.clone())
            .or_default()
            .push_back(report);
        self.keys.push(key);
    }
}

impl Drop for Delegated {
    fn drop(&mut self) {
        let mut waiting = self
            .outcomes
            .waiting
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        for key in &self.keys {
            waiting.remove(key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> TaskKey {
        TaskKey {
            run: RunId(1),
            turn: 2,
            task: Task {
                text: "look".into(),
                context: Vec::new(),
            },
        }
    }

    fn report(body: &str) -> Report {
        Report {
            status: EntryStatus::Ok,
            body: body.into(),
            child: None,
        }
    }

    #[test]
    fn reports_are_taken_in_order_and_dropped_with_their_guard() {
        let outcomes = Arc::new(Outcomes::default());
        let mut delegated = Delegated::new(Arc::clone(&outcomes));
        delegated.put(key(), report("1"));
        delegated.put(key(), report("2"));
        assert_eq!(outcomes.take(&key()), Some(report("1")));
        drop(delegated);
        assert_eq!(outcomes.take(&key()), None);
    }
}
