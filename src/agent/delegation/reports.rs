//! The reports of the children a reply's `<delegate>`s ran before its unit of work: one kind
//! of [`Answers`](crate::plugins::answers::Answers), taken by the handler.

use std::collections::{HashMap, VecDeque};

use crate::agent::delegation::tool::Task;
use crate::db::enums::EntryStatus;
use crate::plugins::answers::answered;

/// What a child came to, as the parent's result entry says it.
#[derive(Debug, Clone, PartialEq)]
pub struct Report {
    /// 200 with the child's summary; a failure status with why.
    pub status: EntryStatus,
    pub body: String,
    /// The child run's alias (none when no child was made).
    pub child: Option<String>,
}

/// The reports of one reply's children, by task (a reply may delegate the same task twice:
/// in order).
#[derive(Debug, Default)]
pub struct Reports {
    waiting: HashMap<Task, VecDeque<Report>>,
}

impl Reports {
    /// Keeps `report` for the `<delegate>` of `task`.
    pub fn put(&mut self, task: Task, report: Report) {
        self.waiting.entry(task).or_default().push_back(report);
    }

    /// The first report kept for `task` by the unit running on this thread.
    pub fn take(task: &Task) -> Option<Report> {
        answered::<Reports, _>(|reports| reports.waiting.get_mut(task)?.pop_front()).flatten()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plugins::answers::Answers;

    fn task() -> Task {
        Task {
            text: "look".into(),
            context: Vec::new(),
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
    fn reports_are_taken_in_order_inside_their_unit_only() {
        let mut reports = Reports::default();
        reports.put(task(), report("1"));
        reports.put(task(), report("2"));
        let taken = Answers::of(reports).apply(|| {
            let first = Reports::take(&task());
            (first, Reports::take(&task()), Reports::take(&task()))
        });
        assert_eq!(taken, (Some(report("1")), Some(report("2")), None));
        assert_eq!(Reports::take(&task()), None, "nothing outside the unit");
    }
}
