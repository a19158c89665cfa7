//! Which runs and projects a plugin process serves, and where they are, learnt from the
//! events that name them (`project.init.completed`, `run.created`, `loop.started`), and its
//! observer: it sends the plugin an `event` notification (never awaited) for each hook it
//! observes, of a run or project it serves only. A run is named there by its alias and a
//! project by its name and root, never by the store's ids; an entry whose path is made of
//! the model's words by its scheme, turn and id, never by its path.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};

use serde_json::{json, Value};

use super::link::Link;
use super::protocol::{Place, EVENT};
use crate::db::ids::{ProjectId, RunId};
use crate::plugins::events::{Event, EventEntry, Hook, Observer};

/// The most runs kept in a plugin's reach, and whose section texts are kept; past it they
/// are forgotten (learnt again when a run's next loop starts; a section asked again before
/// its next turn).
pub(super) const KEPT_RUNS: usize = 4096;

/// A project as the events taught it.
struct ProjectSeen {
    serves: bool,
    name: String,
    root: String,
}

/// A run as the events taught it.
struct RunSeen {
    serves: bool,
    alias: String,
    project: ProjectId,
}

/// The projects and runs a plugin serves, as the events taught it.
pub(super) struct Reach {
    pub(super) link: Arc<Link>,
    projects: Mutex<HashMap<ProjectId, ProjectSeen>>,
    runs: Mutex<HashMap<RunId, RunSeen>>,
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
        match *event {
            Event::ProjectInitCompleted {
                project,
                name,
                root,
            } => self.learn_project(project, name, root),
            Event::RunCreated {
                run,
                alias,
                project,
                ..
            } => self.learn_run(run, alias, project),
            Event::LoopStarted {
                run,
                alias,
                project,
                project_name,
                project_root,
                ..
            } => {
                self.learn_project(project, project_name, project_root);
                self.learn_run(run, alias, project);
            }
            _ => {}
        }
    }

    fn learn_project(&self, project: ProjectId, name: &str, root: &Path) {
        let seen = ProjectSeen {
            serves: self.link.serves(name),
            name: name.to_owned(),
            root: root.display().to_string(),
        };
        lock(&self.projects).insert(project, seen);
    }

    /// Learns `run` of a project already learnt (a run of another is not served).
    fn learn_run(&self, run: RunId, alias: &str, project: ProjectId) {
        let Some(serves) = lock(&self.projects).get(&project).map(|seen| seen.serves) else {
            return;
        };
        let mut runs = lock(&self.runs);
        if runs.len() >= KEPT_RUNS {
            runs.clear();
        }
        let seen = RunSeen {
            serves,
            alias: alias.to_owned(),
            project,
        };
        runs.insert(run, seen);
    }

    pub(super) fn project(&self, project: ProjectId) -> bool {
        lock(&self.projects)
            .get(&project)
            .is_some_and(|seen| seen.serves)
    }

    pub(super) fn run(&self, run: RunId) -> bool {
        lock(&self.runs).get(&run).is_some_and(|seen| seen.serves)
    }

    /// Where `run` is, when it was learnt.
    pub(super) fn run_place(&self, run: RunId) -> Option<Place> {
        let (alias, project) = {
            let runs = lock(&self.runs);
            let seen = runs.get(&run)?;
            (seen.alias.clone(), seen.project)
        };
        let mut place = self.project_place(project)?;
        place.run = Some(alias);
        Some(place)
    }

    /// Where `project` is, when it was learnt.
    pub(super) fn project_place(&self, project: ProjectId) -> Option<Place> {
        let projects = lock(&self.projects);
        let seen = projects.get(&project)?;
        Some(Place {
            run: None,
            project: seen.name.clone(),
            root: seen.root.clone(),
        })
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
    /// What it observes, and the hooks that teach the reach.
    pub hooks: Vec<Hook>,
    pub observed: Vec<Hook>,
}

impl ProcessObserver {
    /// The hooks whose events teach a reach, observed whatever the plugin names.
    pub(super) const TEACHING: [Hook; 3] = [
        Hook::ProjectInitCompleted,
        Hook::RunCreated,
        Hook::LoopStarted,
    ];
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
        let place = match (run, project) {
            (Some(run), _) if self.reach.run(run) => self.reach.run_place(run),
            (None, Some(project)) if self.reach.project(project) => {
                self.reach.project_place(project)
            }
            _ => None,
        };
        let Some(Value::Object(place)) = place.and_then(|place| serde_json::to_value(place).ok())
        else {
            return;
        };
        fields.extend(place);
        fields.insert("hook".into(), json!(hook.name()));
        self.reach.link.notify(EVENT, Value::Object(fields));
    }
}

/// The run (or else the project) an event is about, and what a plugin is told of it
/// (names, statuses, turns, entries; never a prompt, a packet or a reply).
fn described(
    event: &Event<'_>,
) -> (
    Option<RunId>,
    Option<ProjectId>,
    serde_json::Map<String, Value>,
) {
    let (run, project, fields) = match *event {
        Event::ProjectInitStarted { .. } => (None, None, json!({})),
        Event::ProjectInitCompleted { project, .. } => (None, Some(project), json!({})),
        Event::RpcStarted { method, project } | Event::RpcCompleted { method, project } => {
            (None, project, json!({"method": method}))
        }
        Event::RpcError {
            method,
            project,
            code,
            ..
        } => (None, project, json!({"method": method, "code": code})),
        Event::AskStarted {
            project,
            model,
            run,
            ..
        } => (None, Some(project), json!({"model": model, "run": run})),
        Event::RunCreated {
            run, forked_from, ..
        } => (Some(run), None, json!({"forkedFrom": forked_from})),
        Event::AskCompleted {
            project,
            run,
            status,
            ..
        } => (
            None,
            Some(project),
            json!({"run": run, "status": status.code()}),
        ),
        Event::LoopStarted { run, mode, .. } => (Some(run), None, json!({"mode": mode.as_str()})),
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
            entry,
            status,
        } => {
            let mut fields = named(&entry);
            fields.insert("turn".into(), json!(turn));
            fields.insert("status".into(), json!(status.code()));
            (Some(run), None, Value::Object(fields))
        }
        Event::EntryChanged { run, entry, change } => {
            let mut fields = named(&entry);
            fields.insert("turn".into(), json!(entry.turn));
            fields.insert("change".into(), json!(change.as_str()));
            (Some(run), None, Value::Object(fields))
        }
        Event::TurnCompleted {
            run,
            turn,
            proposed,
        } => (Some(run), None, json!({"turn": turn, "proposed": proposed})),
        Event::RunState { project, state } => (
            None,
            Some(project),
            json!({"run": state.run, "turn": state.turn, "status": state.status.code()}),
        ),
        Event::LoopEnded { run, status, .. } => (Some(run), None, json!({"status": status.code()})),
    };
    let fields = match fields {
        Value::Object(fields) => fields,
        _ => serde_json::Map::new(),
    };
    (run, project, fields)
}

/// An entry as a plugin is told of it: its id, and its path, or its scheme alone when the
/// path is made of the model's words.
fn named(entry: &EventEntry<'_>) -> serde_json::Map<String, Value> {
    let mut fields = serde_json::Map::new();
    fields.insert("id".into(), json!(entry.id.0));
    if entry.worded {
        fields.insert("scheme".into(), json!(entry.scheme()));
    } else {
        fields.insert("path".into(), json!(entry.path));
    }
    fields
}
