//! Events: what plugins observe (PLUGINS: events observe, filters rewrite). The server emits
//! a typed [`Event`] at the hook points of AGENT §9.2 that it honours; observers run in
//! ascending priority (equal priorities in registration order) and never change the run.
//! An observer that panics is caught and logged, and the others still see the event; an
//! observer must not block (file work goes to a thread of its own or the blocking pool).
//! With no observer an emit is an empty loop: the payloads are borrowed, never built.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;
use std::sync::Arc;

use crate::db::enums::{ChangeType, EntryStatus, LoopMode, RunStatus};
use crate::db::ids::{LoopId, ProjectId, RunId};
use crate::hub::notifications::RunState;

/// Something that happened, in the order of a request, a loop and a turn.
#[derive(Debug, Clone, Copy)]
pub enum Event<'a> {
    /// `project.init.started`: a connection asks `init` for a project.
    ProjectInitStarted { name: &'a str, root: &'a Path },
    /// `project.init.completed`: the connection is bound to the project.
    ProjectInitCompleted {
        project: ProjectId,
        name: &'a str,
        root: &'a Path,
    },
    /// `rpc.started`: a request passed the access checks and its handler starts.
    RpcStarted {
        method: &'a str,
        /// The connection's project, once bound.
        project: Option<ProjectId>,
    },
    /// `rpc.completed`: the handler answered.
    RpcCompleted {
        method: &'a str,
        project: Option<ProjectId>,
    },
    /// `rpc.error`: the request failed (refused, invalid, timed out or failed).
    RpcError {
        method: &'a str,
        project: Option<ProjectId>,
        /// The JSON-RPC error code the client gets.
        code: i64,
        message: &'a str,
    },
    /// `ask.started` / `act.started`: a client asked for a loop.
    AskStarted {
        mode: LoopMode,
        project: ProjectId,
        /// The model alias.
        model: &'a str,
        prompt: &'a str,
        /// The run it continues, when named.
        run: Option<&'a str>,
    },
    /// `run.created`: a new run, or a fork of `forked_from`.
    RunCreated {
        run: RunId,
        alias: &'a str,
        project: ProjectId,
        forked_from: Option<&'a str>,
    },
    /// `ask.completed` / `act.completed`: the client's loop ended and is answered.
    AskCompleted {
        mode: LoopMode,
        project: ProjectId,
        /// The run's alias.
        run: &'a str,
        status: RunStatus,
    },
    /// `loop.started`.
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
    /// `turn.started`: the turn's packet is assembled; the LLM is about to be called.
    TurnStarted {
        run: RunId,
        loop_id: LoopId,
        /// The run-wide turn number.
        turn: i32,
        /// The turn's place in its loop, from 1.
        iteration: u32,
    },
    /// `turn.response`: the model answered a turn.
    TurnResponse {
        run: RunId,
        /// The run-wide turn number.
        turn: i32,
        /// The system message sent.
        system: &'a str,
        /// The user message sent.
        user: &'a str,
        /// The model's raw reply (after the `llm.response` filters).
        content: &'a str,
    },
    /// `tool.before`: an action's handler is about to run (on the writer's thread).
    ToolBefore {
        run: RunId,
        turn: i32,
        tool: &'a str,
        /// Its result entry.
        path: &'a str,
    },
    /// `tool.after`: an action's handler ran.
    ToolAfter {
        run: RunId,
        turn: i32,
        tool: &'a str,
        path: &'a str,
        status: EntryStatus,
    },
    /// `entry.created`: a command's result entry is written, with its status.
    EntryCreated {
        run: RunId,
        turn: i32,
        path: &'a str,
        status: EntryStatus,
    },
    /// `entry.changed`: a committed unit of work changed an entry (one event per change,
    /// in order; on the database thread).
    EntryChanged {
        run: RunId,
        path: &'a str,
        change: ChangeType,
    },
    /// `turn.completed`: the turn's commands ran and are stored.
    TurnCompleted {
        run: RunId,
        turn: i32,
        /// Proposals the turn left pending.
        proposed: usize,
    },
    /// `run.state`: what the clients are told after a turn.
    RunState {
        project: ProjectId,
        state: &'a RunState,
    },
    /// `loop.completed`.
    LoopEnded {
        run: RunId,
        loop_id: LoopId,
        /// How it ended.
        status: RunStatus,
    },
}

impl Event<'_> {
    /// The hook's name in AGENT §9.2 (what a log line says of an event: never its payload,
    /// which may hold prompts and replies).
    pub fn hook(&self) -> &'static str {
        match self {
            Event::ProjectInitStarted { .. } => "project.init.started",
            Event::ProjectInitCompleted { .. } => "project.init.completed",
            Event::RpcStarted { .. } => "rpc.started",
            Event::RpcCompleted { .. } => "rpc.completed",
            Event::RpcError { .. } => "rpc.error",
            Event::AskStarted {
                mode: LoopMode::Ask,
                ..
            } => "ask.started",
            Event::AskStarted { .. } => "act.started",
            Event::RunCreated { .. } => "run.created",
            Event::AskCompleted {
                mode: LoopMode::Ask,
                ..
            } => "ask.completed",
            Event::AskCompleted { .. } => "act.completed",
            Event::LoopStarted { .. } => "loop.started",
            Event::TurnStarted { .. } => "turn.started",
            Event::TurnResponse { .. } => "turn.response",
            Event::ToolBefore { .. } => "tool.before",
            Event::ToolAfter { .. } => "tool.after",
            Event::EntryCreated { .. } => "entry.created",
            Event::EntryChanged { .. } => "entry.changed",
            Event::TurnCompleted { .. } => "turn.completed",
            Event::RunState { .. } => "run.state",
            Event::LoopEnded { .. } => "loop.completed",
        }
    }
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
#[derive(Default, Clone)]
pub struct Events {
    observers: Vec<Arc<dyn Observer>>,
}

impl Events {
    /// Adds an observer after every observer of lower or equal priority.
    pub fn register(&mut self, observer: Arc<dyn Observer>) {
        let position = self
            .observers
            .partition_point(|other| other.priority() <= observer.priority());
        self.observers.insert(position, observer);
    }

    /// Whether any observer is registered.
    pub fn is_empty(&self) -> bool {
        self.observers.is_empty()
    }

    /// Tells every observer, in order; one that panics is logged and skipped.
    pub fn emit(&self, event: Event<'_>) {
        for observer in &self.observers {
            if catch_unwind(AssertUnwindSafe(|| observer.observe(&event))).is_err() {
                let hook = event.hook();
                tracing::error!(hook, "an observer panicked; the event went on");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;

    struct Recorder {
        priority: i32,
        label: &'static str,
        seen: Arc<Mutex<Vec<&'static str>>>,
    }

    impl Observer for Recorder {
        fn priority(&self) -> i32 {
            self.priority
        }

        fn observe(&self, _: &Event<'_>) {
            self.seen.lock().unwrap().push(self.label);
        }
    }

    struct Panicker;

    impl Observer for Panicker {
        fn observe(&self, _: &Event<'_>) {
            panic!("observer bug");
        }
    }

    fn ended() -> Event<'static> {
        Event::LoopEnded {
            run: RunId(1),
            loop_id: LoopId(1),
            status: RunStatus::Completed,
        }
    }

    #[test]
    fn observers_see_every_event_in_priority_order_then_registration_order() {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let mut events = Events::default();
        for (priority, label) in [
            (200, "200"),
            (50, "50"),
            (100, "100 first"),
            (100, "100 second"),
        ] {
            events.register(Arc::new(Recorder {
                priority,
                label,
                seen: Arc::clone(&seen),
            }));
        }
        events.emit(ended());
        assert_eq!(
            *seen.lock().unwrap(),
            ["50", "100 first", "100 second", "200"]
        );
    }

    #[test]
    fn events_are_named_by_their_hooks() {
        assert_eq!(ended().hook(), "loop.completed");
        let asked = |mode| Event::AskStarted {
            mode,
            project: ProjectId(1),
            model: "m",
            prompt: "p",
            run: None,
        };
        assert_eq!(asked(LoopMode::Ask).hook(), "ask.started");
        assert_eq!(asked(LoopMode::Act).hook(), "act.started");
    }

    #[test]
    fn a_panicking_observer_is_caught_and_the_others_still_observe() {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let mut events = Events::default();
        events.register(Arc::new(Panicker));
        events.register(Arc::new(Recorder {
            priority: 100,
            label: "after",
            seen: Arc::clone(&seen),
        }));
        events.emit(ended());
        events.emit(ended());
        assert_eq!(*seen.lock().unwrap(), ["after", "after"]);
    }
}
