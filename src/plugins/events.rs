//! Events: what plugins observe (PLUGINS: events observe, filters rewrite). The server emits
//! a typed [`Event`] at the hook points of AGENT §9.2 that it honours; observers run in
//! ascending priority (equal priorities in registration order) and never change the run.
//! An observer that panics is caught and logged, and the others still see the event; an
//! observer must not block (file work goes to a thread of its own or the blocking pool).
//! Each observer names the hooks it sees ([`Hook`]); an emit at a hook no one observes is an
//! empty loop: the payloads are borrowed, never built.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;
use std::sync::Arc;

use crate::db::enums::{ChangeType, EntryStatus, LoopMode, RunStatus};
use crate::db::ids::{EntryId, LoopId, ProjectId, RunId};
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
        project_root: &'a Path,
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
        /// The command's turn.
        turn: i32,
        entry: EventEntry<'a>,
        status: EntryStatus,
    },
    /// `entry.changed`: a committed unit of work changed an entry (one event per change,
    /// in order; on the database thread).
    EntryChanged {
        run: RunId,
        /// As it was, when the change removed it.
        entry: EventEntry<'a>,
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

/// The entry an event is about.
#[derive(Debug, Clone, Copy)]
pub struct EventEntry<'a> {
    /// Its row in the store.
    pub id: EntryId,
    pub path: &'a str,
    /// The run-wide turn it was written in.
    pub turn: i32,
    /// Its path is made of the model's words (an `update` or a `summarize` is stored at a
    /// slug of its text: `ToolInfo::paths_are_words`): a plugin process is told its scheme,
    /// turn and id instead, never the path.
    pub worded: bool,
}

impl EventEntry<'_> {
    /// The scheme of its path (`None` for a file).
    pub fn scheme(&self) -> Option<&str> {
        crate::db::paths::scheme_of(self.path)
    }
}

/// A hook point of AGENT §9.2 that the server honours: what an observer subscribes to, and
/// what a log line says of an event (never its payload, which may hold prompts and replies).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hook {
    ProjectInitStarted,
    ProjectInitCompleted,
    RpcStarted,
    RpcCompleted,
    RpcError,
    AskStarted,
    ActStarted,
    RunCreated,
    AskCompleted,
    ActCompleted,
    LoopStarted,
    TurnStarted,
    TurnResponse,
    ToolBefore,
    ToolAfter,
    EntryCreated,
    EntryChanged,
    TurnCompleted,
    RunState,
    LoopCompleted,
}

impl Hook {
    /// Every hook, in the order of a request, a loop and a turn.
    pub const ALL: [Hook; 20] = [
        Hook::ProjectInitStarted,
        Hook::ProjectInitCompleted,
        Hook::RpcStarted,
        Hook::RpcCompleted,
        Hook::RpcError,
        Hook::AskStarted,
        Hook::ActStarted,
        Hook::RunCreated,
        Hook::AskCompleted,
        Hook::ActCompleted,
        Hook::LoopStarted,
        Hook::TurnStarted,
        Hook::TurnResponse,
        Hook::ToolBefore,
        Hook::ToolAfter,
        Hook::EntryCreated,
        Hook::EntryChanged,
        Hook::TurnCompleted,
        Hook::RunState,
        Hook::LoopCompleted,
    ];

    /// Its name in AGENT §9.2.
    pub fn name(self) -> &'static str {
        match self {
            Hook::ProjectInitStarted => "project.init.started",
            Hook::ProjectInitCompleted => "project.init.completed",
            Hook::RpcStarted => "rpc.started",
            Hook::RpcCompleted => "rpc.completed",
            Hook::RpcError => "rpc.error",
            Hook::AskStarted => "ask.started",
            Hook::ActStarted => "act.started",
            Hook::RunCreated => "run.created",
            Hook::AskCompleted => "ask.completed",
            Hook::ActCompleted => "act.completed",
            Hook::LoopStarted => "loop.started",
            Hook::TurnStarted => "turn.started",
            Hook::TurnResponse => "turn.response",
            Hook::ToolBefore => "tool.before",
            Hook::ToolAfter => "tool.after",
            Hook::EntryCreated => "entry.created",
            Hook::EntryChanged => "entry.changed",
            Hook::TurnCompleted => "turn.completed",
            Hook::RunState => "run.state",
            Hook::LoopCompleted => "loop.completed",
        }
    }
}

impl Event<'_> {
    /// The hook it is emitted at.
    pub fn hook(&self) -> Hook {
        match self {
            Event::ProjectInitStarted { .. } => Hook::ProjectInitStarted,
            Event::ProjectInitCompleted { .. } => Hook::ProjectInitCompleted,
            Event::RpcStarted { .. } => Hook::RpcStarted,
            Event::RpcCompleted { .. } => Hook::RpcCompleted,
            Event::RpcError { .. } => Hook::RpcError,
            Event::AskStarted {
                mode: LoopMode::Ask,
                ..
            } => Hook::AskStarted,
            Event::AskStarted { .. } => Hook::ActStarted,
            Event::RunCreated { .. } => Hook::RunCreated,
            Event::AskCompleted {
                mode: LoopMode::Ask,
                ..
            } => Hook::AskCompleted,
            Event::AskCompleted { .. } => Hook::ActCompleted,
            Event::LoopStarted { .. } => Hook::LoopStarted,
            Event::TurnStarted { .. } => Hook::TurnStarted,
            Event::TurnResponse { .. } => Hook::TurnResponse,
            Event::ToolBefore { .. } => Hook::ToolBefore,
            Event::ToolAfter { .. } => Hook::ToolAfter,
            Event::EntryCreated { .. } => Hook::EntryCreated,
            Event::EntryChanged { .. } => Hook::EntryChanged,
            Event::TurnCompleted { .. } => Hook::TurnCompleted,
            Event::RunState { .. } => Hook::RunState,
            Event::LoopEnded { .. } => Hook::LoopCompleted,
        }
    }
}

/// A plugin that observes events.
pub trait Observer: Send + Sync {
    /// The hooks whose events it sees ([`Hook::ALL`] for every one). A hook no observer
    /// names costs nothing: `entry.changed`'s change log, for one, exists only while some
    /// observer names it.
    fn hooks(&self) -> &[Hook];

    /// Position among observers; lower runs first.
    fn priority(&self) -> i32 {
        100
    }

    fn observe(&self, event: &Event<'_>);
}

/// The observers of each hook, in priority order.
#[derive(Default, Clone)]
pub struct Events {
    by_hook: [Vec<Arc<dyn Observer>>; Hook::ALL.len()],
}

impl Events {
    /// Adds an observer to each hook it names, after every observer of lower or equal
    /// priority.
    pub fn register(&mut self, observer: Arc<dyn Observer>) {
        for hook in observer.hooks() {
            let observers = &mut self.by_hook[*hook as usize];
            if observers.iter().any(|known| Arc::ptr_eq(known, &observer)) {
                continue;
            }
            let position =
                observers.partition_point(|other| other.priority() <= observer.priority());
            observers.insert(position, Arc::clone(&observer));
        }
    }

    /// Whether any observer sees `hook`'s events.
    pub fn observes(&self, hook: Hook) -> bool {
        !self.by_hook[hook as usize].is_empty()
    }

    /// Tells every observer of the event's hook, in order; one that panics is logged and
    /// skipped.
    pub fn emit(&self, event: Event<'_>) {
        let hook = event.hook();
        for observer in &self.by_hook[hook as usize] {
            if catch_unwind(AssertUnwindSafe(|| observer.observe(&event))).is_err() {
                let hook = hook.name();
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
        fn hooks(&self) -> &[Hook] {
            &[Hook::LoopCompleted]
        }

        fn priority(&self) -> i32 {
            self.priority
        }

        fn observe(&self, _: &Event<'_>) {
            self.seen.lock().unwrap().push(self.label);
        }
    }

    /// Records "unranked" for every event, at the default priority.
    struct Unranked(Arc<Mutex<Vec<&'static str>>>);

    impl Observer for Unranked {
        fn hooks(&self) -> &[Hook] {
            &Hook::ALL
        }

        fn observe(&self, _: &Event<'_>) {
            self.0.lock().unwrap().push("unranked");
        }
    }

    /// Counts the events it sees of the hooks it names.
    struct Counter {
        hooks: Vec<Hook>,
        seen: Arc<Mutex<Vec<Hook>>>,
    }

    impl Observer for Counter {
        fn hooks(&self) -> &[Hook] {
            &self.hooks
        }

        fn observe(&self, event: &Event<'_>) {
            self.seen.lock().unwrap().push(event.hook());
        }
    }

    struct Panicker;

    impl Observer for Panicker {
        fn hooks(&self) -> &[Hook] {
            &Hook::ALL
        }

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
        // An observer that names no priority has the bundled ones' 100.
        events.register(Arc::new(Unranked(Arc::clone(&seen))));
        events.register(Arc::new(Recorder {
            priority: 100,
            label: "100 third",
            seen: Arc::clone(&seen),
        }));
        events.emit(ended());
        assert_eq!(
            *seen.lock().unwrap(),
            [
                "50",
                "100 first",
                "100 second",
                "unranked",
                "100 third",
                "200"
            ]
        );
    }

    #[test]
    fn events_are_named_by_their_hooks() {
        assert_eq!(ended().hook().name(), "loop.completed");
        let asked = |mode| Event::AskStarted {
            mode,
            project: ProjectId(1),
            model: "m",
            prompt: "p",
            run: None,
        };
        assert_eq!(asked(LoopMode::Ask).hook().name(), "ask.started");
        assert_eq!(asked(LoopMode::Act).hook().name(), "act.started");
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

    #[test]
    fn an_observer_sees_only_the_hooks_it_names_once_each() {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let mut events = Events::default();
        events.register(Arc::new(Counter {
            hooks: vec![Hook::EntryChanged, Hook::LoopCompleted, Hook::EntryChanged],
            seen: Arc::clone(&seen),
        }));
        assert!(events.observes(Hook::EntryChanged));
        assert!(events.observes(Hook::LoopCompleted));
        assert!(!events.observes(Hook::TurnCompleted));
        events.emit(Event::TurnCompleted {
            run: RunId(1),
            turn: 1,
            proposed: 0,
        });
        events.emit(Event::EntryChanged {
            run: RunId(1),
            entry: EventEntry {
                id: EntryId(1),
                path: "known://x",
                turn: 1,
                worded: false,
            },
            change: ChangeType::Upsert,
        });
        events.emit(ended());
        assert_eq!(
            *seen.lock().unwrap(),
            [Hook::EntryChanged, Hook::LoopCompleted]
        );
    }

    #[test]
    fn hooks_are_listed_once_each_and_named_apart() {
        let mut names: Vec<&str> = Hook::ALL.iter().map(|hook| hook.name()).collect();
        for (index, hook) in Hook::ALL.iter().enumerate() {
            assert_eq!(*hook as usize, index, "{}", hook.name());
        }
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), Hook::ALL.len());
    }
}
