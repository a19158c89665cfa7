//! Which runs and projects a plugin process serves, learnt from the events that name a
//! project (`project.init.completed`, `loop.started`), and its observer: it sends the
//! plugin an `event` notification (never awaited) for each hook it observes, of a run or
//! project it serves only.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde_json::{json, Value};

use super::link::Link;
use super::protocol::EVENT;
use crate::db::ids::{ProjectId, RunId};
use crate::plugins::events::{Event, Hook, Observer};

/// The most runs kept in a plugin's reach, and whose section texts are kept; past it they
/// are forgotten (learnt again when a run's next loop starts; a section asked again before
/// its next turn).
pub(super) const KEPT_RUNS: usize = 4096;

/// The projects and runs a plugin serves, as the events taught it.
pub(super) struct Reach {
    pub(super) link: Arc<Link>,
    projects: Mutex<HashMap<ProjectId, bool>>,
    runs: Mutex<HashMap<RunId, bool>>,
}

impl Reach {
    pub(super) fn new(link: Arc<Link>) -> Reach {
        Reach {
            link,
            projects: Mutex::new(HashMap::new()),
            runs: Mutex::new(HashMap::new()),
        }
    }

    fn learn(&self, event: &Event<'_>) {
        let (project, name, run) = match *event {
            Event::ProjectInitCompleted { project, name, .. } => (project, name, None),
            Event::LoopStarted {
                run,
                project,
                project_name,
                ..
            } => (project, project_name, Some(run)),
            _ => return,
        };
        let serves = self.link.serves(name);
        lock(&self.projects).insert(project, serves);
        if let Some(run) = run {
            let mut runs = lock(&self.runs);
            if runs.len() >= KEPT_RUNS {
                runs.clear();
            }
            runs.insert(run, serves);
        }
    }

    pub(super) fn project(&self, project: ProjectId) -> bool {
        lock(&self.projects).get(&project).copied().unwrap_or(false)
    }

    pub(super) fn run(&self, run: RunId) -> bool {
        lock(&self.runs).get(&run).copied().unwrap_or(false)
    }
}

pub(super) fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Learns the plugin's reach, and sends it the events of the hooks it observes.
pub(super) struct ProcessObserver {
    pub reach: Arc<Reach>,
    /// What it observes, and the two hooks that teach the reach.
    pub hooks: Vec<Hook>,
    pub observed: Vec<Hook>,
}

impl Observer for ProcessObserver {
    fn hooks(&self) -> &[Hook] {
        &self.hooks
    }

    fn observe(&self, event: &Event<'_>) {
        self.reach.learn(event);
        let hook = event.hook();
        if !self.observed.contains(&hook) {
            return;
        }
        let (run, project, mut fields) = described(event);
        // A new run (`run.created`) is known by its project before its first loop starts.
        let served = run.is_some_and(|run| self.reach.run(run))
            || project.is_some_and(|project| self.reach.project(project));
        if served {
            fields.insert("hook".into(), json!(hook.name()));
            self.reach.link.notify(EVENT, Value::Object(fields));
        }
    }
}

/// The run and project an event is about, and what a plugin is told of it (ids, names,
/// statuses; never a prompt, a packet or a reply).
fn described(
    event: &Event<'_>,
) -> (
    Option<RunId>,
    Option<ProjectId>,
    serde_json::Map<String, Value>,
) {
    let (run, project, fields) = match *event {
        Event::ProjectInitStarted { .. } => (None, None, json!({})),
        Event::ProjectInitCompleted { project, name, .. } => (
            None,
            Some(project),
            json!({"project": project, "name": name}),
        ),
        Event::RpcStarted { method, project } | Event::RpcCompleted { method, project } => {
            (None, project, json!({"method": method}))
        }
        Event::RpcError {
            method,
            project,
            code,
            ..
        } => (None, project, json!({"method": method, "code": code})),
        Event::AskStarted { project, model, .. } => (None, Some(project), json!({"model": model})),
        Event::RunCreated {
            run,
            alias,
            project,
            ..
        } => (Some(run), Some(project), json!({"alias": alias})),
        Event::AskCompleted {
            project,
            run,
            status,
            ..
        } => (
            None,
            Some(project),
            json!({"alias": run, "status": status.code()}),
        ),
        Event::LoopStarted {
            run, alias, mode, ..
        } => (
            Some(run),
            None,
            json!({"alias": alias, "mode": mode.as_str()}),
        ),
        Event::TurnStarted { run, turn, .. } | Event::TurnResponse { run, turn, .. } => {
            (Some(run), None, json!({"turn": turn}))
        }
        Event::ToolBefore {
            run,
            turn,
            tool,
            path,
        } => (
            Some(run),
            None,
            json!({"turn": turn, "tool": tool, "path": path}),
        ),
        Event::ToolAfter {
            run,
            turn,
            tool,
            path,
            status,
        } => (
            Some(run),
            None,
            json!({"turn": turn, "tool": tool, "path": path, "status": status.code()}),
        ),
        Event::EntryCreated {
            run,
            turn,
            path,
            status,
        } => (
            Some(run),
            None,
            json!({"turn": turn, "path": path, "status": status.code()}),
        ),
        Event::EntryChanged { run, path, .. } => (Some(run), None, json!({"path": path})),
        Event::TurnCompleted {
            run,
            turn,
            proposed,
        } => (Some(run), None, json!({"turn": turn, "proposed": proposed})),
        Event::RunState { project, .. } => (None, Some(project), json!({})),
        Event::LoopEnded { run, status, .. } => (Some(run), None, json!({"status": status.code()})),
    };
    let mut fields = match fields {
        Value::Object(fields) => fields,
        _ => serde_json::Map::new(),
    };
    if let Some(run) = run {
        fields.insert("run".into(), json!(run));
    }
    (run, project, fields)
}
