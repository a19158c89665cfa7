//! The run's open questions as the session's plan: each `<unknown>` the model writes is a
//! pending entry of the plan, and one it has since resolved (the entry gone from
//! `run/state.unknowns`) stays in it, completed. The editor is sent the whole plan, as ACP
//! asks, each time it changes.

use agent_client_protocol::v1::schema::{
    Plan, PlanEntry, PlanEntryPriority, PlanEntryStatus, SessionUpdate,
};

use crate::hub::notifications::UnknownEntry;

/// The plan shown so far: each question by its path, in the order first seen, and
/// whether it is resolved.
#[derive(Debug, Default)]
pub(super) struct PlanTracker {
    questions: Vec<(UnknownEntry, bool)>,
}

impl PlanTracker {
    /// The plan when `open` (the run's open questions now) changes it.
    pub(super) fn update(&mut self, open: &[UnknownEntry]) -> Option<SessionUpdate> {
        let mut changed = false;
        for (question, resolved) in &mut self.questions {
            let still_open = open.iter().any(|unknown| unknown.path == question.path);
            if *resolved == still_open {
                *resolved = !still_open;
                changed = true;
            }
        }
        for unknown in open {
            if !self
                .questions
                .iter()
                .any(|(question, _)| question.path == unknown.path)
            {
                self.questions.push((unknown.clone(), false));
                changed = true;
            }
        }
        changed.then(|| SessionUpdate::Plan(Plan::new(self.entries())))
    }

    fn entries(&self) -> Vec<PlanEntry> {
        self.questions
            .iter()
            .map(|(question, resolved)| {
                let status = if *resolved {
                    PlanEntryStatus::Completed
                } else {
                    PlanEntryStatus::Pending
                };
                PlanEntry::new(question.body.clone(), PlanEntryPriority::Medium, status)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unknown(path: &str, body: &str) -> UnknownEntry {
        UnknownEntry {
            path: path.into(),
            body: body.into(),
        }
    }

    fn shown(update: Option<SessionUpdate>) -> Vec<(String, PlanEntryStatus)> {
        match update {
            Some(SessionUpdate::Plan(plan)) => plan
                .entries
                .into_iter()
                .map(|entry| (entry.content, entry.status))
                .collect(),
            other => panic!("not a plan: {other:?}"),
        }
    }

    #[test]
    fn questions_are_pending_until_resolved_and_the_plan_is_sent_when_it_changes() {
        let mut plan = PlanTracker::default();
        assert!(plan.update(&[]).is_none());
        let first = unknown("unknown://a", "which port?");
        let second = unknown("unknown://b", "who calls it?");
        assert_eq!(
            shown(plan.update(std::slice::from_ref(&first))),
            [("which port?".into(), PlanEntryStatus::Pending)]
        );
        assert!(plan.update(std::slice::from_ref(&first)).is_none());
        assert_eq!(
            shown(plan.update(std::slice::from_ref(&second))),
            [
                ("which port?".into(), PlanEntryStatus::Completed),
                ("who calls it?".into(), PlanEntryStatus::Pending),
            ]
        );
        assert!(plan.update(std::slice::from_ref(&second)).is_none());
        assert_eq!(
            shown(plan.update(&[first, second])),
            [
                ("which port?".into(), PlanEntryStatus::Pending),
                ("who calls it?".into(), PlanEntryStatus::Pending),
            ]
        );
    }
}
