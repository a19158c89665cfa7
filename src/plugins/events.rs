//! Events: what plugins observe (PLUGINS: events observe, filters rewrite). The agent emits
//! a typed [`Event`] at fixed points of a loop; observers run in priority order and never
//! change the run. Observers must not block: file work goes to the blocking pool.

use crate::db::enums::{LoopMode, RunStatus};
use crate::db::ids::{LoopId, ProjectId, RunId};

/// Something that happened in a run.
#[derive(Debug, Clone, Copy)]
pub enum Event<'a> {
    LoopStarted {
        run: RunId,
        /// The run's alias when the loop started.
        alias: &'a str,
        project: ProjectId,
        project_name: &'a str,
        loop_id: LoopId,
        mode: LoopMode,
        /// Its prompt (empty when it resumes).
        prompt: &'a str,
    },
    /// The model answered a turn.
    TurnResponse {
        run: RunId,
        /// The run-wide turn number.
        turn: i32,
        /// The system message sent.
        system: &'a str,
        /// The user message sent.
        user: &'a str,
        /// The model's raw reply.
        content: &'a str,
    },
    LoopEnded {
        run: RunId,
        loop_id: LoopId,
        /// How it ended.
        status: RunStatus,
    },
}

/// A plugin that observes events.
pub trait Observer: Send + Sync {
    /// Position among observers; lower runs first.
    fn priority(&self) -> i32 {
        100
    }

    fn observe(&self, event: &Event<'_>);
}

/// The observers, in priority order.
#[derive(Default)]
pub struct Events {
    observers: Vec<Box<dyn Observer>>,
}

impl Events {
    /// Adds an observer after every observer of lower or equal priority.
    pub fn register(&mut self, observer: Box<dyn Observer>) {
        let position = self
            .observers
            .partition_point(|other| other.priority() <= observer.priority());
        self.observers.insert(position, observer);
    }

    /// Tells every observer, in order.
    pub fn emit(&self, event: Event<'_>) {
        for observer in &self.observers {
            observer.observe(&event);
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use super::*;

    struct Recorder {
        priority: i32,
        seen: Arc<Mutex<Vec<(i32, String)>>>,
    }

    impl Observer for Recorder {
        fn priority(&self) -> i32 {
            self.priority
        }

        fn observe(&self, event: &Event<'_>) {
            let name = match event {
                Event::LoopStarted { .. } => "loop started",
                Event::TurnResponse { .. } => "turn response",
                Event::LoopEnded { .. } => "loop ended",
            };
            self.seen
                .lock()
                .unwrap()
                .push((self.priority, name.to_string()));
        }
    }

    #[test]
    fn observers_see_every_event_in_priority_order() {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let mut events = Events::default();
        for priority in [200, 50, 100] {
            events.register(Box::new(Recorder {
                priority,
                seen: Arc::clone(&seen),
            }));
        }
        events.emit(Event::LoopEnded {
            run: RunId(1),
            loop_id: LoopId(1),
            status: RunStatus::Completed,
        });
        let seen = seen.lock().unwrap().clone();
        assert_eq!(
            seen,
            [
                (50, "loop ended".to_string()),
                (100, "loop ended".to_string()),
                (200, "loop ended".to_string())
            ]
        );
    }
}
