//! What a plugin process adds besides tools, each through the same registrar as an
//! in-process plugin's: observers (`event` notifications, never awaited), filters (each a
//! `filter/apply` request; a failure leaves the value as it was), packet sections (the
//! text `section/render` answered, asked before each turn as a reflection and kept per
//! run) and RPC methods (`method/call`). Which projects a plugin serves is learnt from the
//! events that name a project (`project.init.completed`, `loop.started`): a filter or an
//! event of a run or project it does not serve is not sent.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use futures_util::future::BoxFuture;
use futures_util::FutureExt;
use serde_json::{json, Value};

use super::link::{CallError, Link};
use super::protocol::{
    FilterAnswer, FilterRequest, MethodDecl, MethodRequest, RunSettings, SectionAnswer,
    SectionRequest, EVENT, FILTER_APPLY, METHOD_CALL, SECTION_RENDER,
};
use crate::access::Role;
use crate::db::enums::EntryStatus;
use crate::db::ids::{ProjectId, RunId};
use crate::hub::notifications::ProposedEntry;
use crate::llm::ChatMessage;
use crate::plugins::assembly::{AssemblyContext, AssemblyFilter};
use crate::plugins::events::{Event, Hook, Observer};
use crate::plugins::filters::{
    LlmCall, Measuring, Proposing, Recordable, Recording, Refusal, RunAsked, RunRequest,
};
use crate::plugins::method::{MethodCall, MethodError, MethodFuture, ParamsError, PluginMethod};
use crate::plugins::reflection::{Moment, Reflecting, Reflection, ReflectionServices};
use crate::plugins::{Bucket, MessageBuilder};

/// The most runs whose section texts are kept; past it they are forgotten (asked again
/// before the run's next turn).
const KEPT_RUNS: usize = 4096;

/// The projects and runs a plugin serves, as the events taught it.
pub(super) struct Reach {
    link: Arc<Link>,
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

    fn project(&self, project: ProjectId) -> bool {
        lock(&self.projects).get(&project).copied().unwrap_or(false)
    }

    fn run(&self, run: RunId) -> bool {
        lock(&self.runs).get(&run).copied().unwrap_or(false)
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
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
        let served = match (run, project) {
            (Some(run), _) => self.reach.run(run),
            (None, Some(project)) => self.reach.project(project),
            (None, None) => false,
        };
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

/// Asks the plugin's filter of `hook` for `value`; `None` when it fails or says nothing.
async fn asked_filter(
    link: &Link,
    hook: &str,
    value: Value,
    context: Value,
) -> Option<FilterAnswer> {
    let request = FilterRequest {
        hook,
        value,
        context,
    };
    let params = serde_json::to_value(request).ok()?;
    match link.call(FILTER_APPLY, params).await {
        Ok(answer) => serde_json::from_value(answer).ok(),
        Err(error) => {
            tracing::warn!(plugin = link.name(), hook, %error, "a plugin filter failed; the value goes on unchanged");
            None
        }
    }
}

/// An `entry.recording` filter: it may refuse a command (a rewrite is not taken).
pub(super) fn entry_recording(
    reach: Arc<Reach>,
) -> impl Fn(Recordable, Recording) -> BoxFuture<'static, Recordable> + Send + Sync {
    move |mut recordable, recording| {
        let reach = Arc::clone(&reach);
        async move {
            if recordable.refusal.is_some() || !reach.run(recording.run) {
                return recordable;
            }
            let value = recordable.command.to_json();
            let context = json!({"run": recording.run, "turn": recording.turn});
            let answer = asked_filter(&reach.link, "entry.recording", value, context).await;
            if let Some(refused) = answer.and_then(|answer| answer.refuse) {
                let status = EntryStatus::from_code(i32::from(refused.status))
                    .unwrap_or(EntryStatus::Forbidden);
                recordable.refusal = Some(Refusal::new(status, refused.message));
            }
            recordable
        }
        .boxed()
    }
}

/// An `llm.request` filter: the messages of a turn's request.
pub(super) fn llm_request(
    reach: Arc<Reach>,
) -> impl Fn(Vec<ChatMessage>, LlmCall) -> BoxFuture<'static, Vec<ChatMessage>> + Send + Sync {
    move |messages, call| {
        let reach = Arc::clone(&reach);
        async move {
            if !reach.project(call.project) {
                return messages;
            }
            let value = serde_json::to_value(&messages).unwrap_or(Value::Null);
            let answer = asked_filter(&reach.link, "llm.request", value, llm_context(call)).await;
            answer
                .and_then(|answer| answer.value)
                .and_then(|value| serde_json::from_value(value).ok())
                .unwrap_or(messages)
        }
        .boxed()
    }
}

/// An `llm.response` filter: the model's raw reply.
pub(super) fn llm_response(
    reach: Arc<Reach>,
) -> impl Fn(String, LlmCall) -> BoxFuture<'static, String> + Send + Sync {
    move |reply, call| {
        let reach = Arc::clone(&reach);
        async move {
            if !reach.project(call.project) {
                return reply;
            }
            let answer =
                asked_filter(&reach.link, "llm.response", json!(reply), llm_context(call)).await;
            match answer.and_then(|answer| answer.value) {
                Some(Value::String(filtered)) => filtered,
                _ => reply,
            }
        }
        .boxed()
    }
}

/// A `run.config` filter: it may rewrite any of the settings it is given, or refuse.
pub(super) fn run_config(
    reach: Arc<Reach>,
) -> impl Fn(RunRequest, RunAsked) -> BoxFuture<'static, RunRequest> + Send + Sync {
    move |mut request, asked| {
        let reach = Arc::clone(&reach);
        async move {
            if request.refusal.is_some() || !reach.project(asked.project) {
                return request;
            }
            let value = serde_json::to_value(RunSettings::of(&request)).unwrap_or(Value::Null);
            let context = json!({"project": asked.project});
            let Some(answer) = asked_filter(&reach.link, "run.config", value, context).await else {
                return request;
            };
            if let Some(refused) = answer.refuse {
                request.refusal = Some(refused.message);
                return request;
            }
            if let Some(settings) = answer
                .value
                .and_then(|value| serde_json::from_value::<RunSettings>(value).ok())
            {
                settings.apply_to(&mut request);
            }
            request
        }
        .boxed()
    }
}

/// A `budget.enforce` filter: the window a packet must fit (`null`: none known).
pub(super) fn budget_enforce(
    reach: Arc<Reach>,
) -> impl Fn(u64, Measuring) -> BoxFuture<'static, u64> + Send + Sync {
    move |limit, measuring| {
        let reach = Arc::clone(&reach);
        async move {
            if !reach.project(measuring.project) {
                return limit;
            }
            let value = (limit != u64::MAX).then_some(limit);
            let context = json!({
                "project": measuring.project,
                "run": measuring.run,
                "turn": measuring.turn,
                "measured": measuring.measured,
            });
            let answer = asked_filter(&reach.link, "budget.enforce", json!(value), context).await;
            answer
                .and_then(|answer| answer.value)
                .and_then(|value| value.as_u64())
                .unwrap_or(limit)
        }
        .boxed()
    }
}

/// A `turn.proposing` filter: the proposals offered to the clients.
pub(super) fn turn_proposing(
    reach: Arc<Reach>,
) -> impl Fn(Vec<ProposedEntry>, Proposing) -> BoxFuture<'static, Vec<ProposedEntry>> + Send + Sync
{
    move |offered, proposing| {
        let reach = Arc::clone(&reach);
        async move {
            if !reach.run(proposing.run) {
                return offered;
            }
            let value = serde_json::to_value(&offered).unwrap_or(Value::Null);
            let context = json!({
                "project": proposing.project,
                "run": proposing.run,
                "turn": proposing.turn,
            });
            let answer = asked_filter(&reach.link, "turn.proposing", value, context).await;
            answer
                .and_then(|answer| answer.value)
                .and_then(|value| serde_json::from_value(value).ok())
                .unwrap_or(offered)
        }
        .boxed()
    }
}

fn llm_context(call: LlmCall) -> Value {
    json!({
        "project": call.project,
        "run": call.run,
        "turn": call.turn,
        "purpose": call.purpose.as_str(),
    })
}

/// The texts of a plugin's sections, by section and run.
type Texts = Arc<Mutex<HashMap<(usize, RunId), String>>>;

/// A packet section of a plugin process: the text its plugin last gave for the run.
pub(super) struct ProcessSection {
    pub texts: Texts,
    /// Its place among its plugin's sections.
    pub slot: usize,
    pub index: usize,
    pub priority: i32,
}

impl AssemblyFilter for ProcessSection {
    fn priority(&self) -> i32 {
        self.priority
    }

    fn apply(&self, context: &AssemblyContext<'_>, message: &mut MessageBuilder) {
        if !context.input.policy.plugin_processes.contains(self.index) {
            return;
        }
        let texts = lock(&self.texts);
        if let Some(text) = texts.get(&(self.slot, context.input.run)) {
            if !text.is_empty() {
                message.open_section(Bucket::System);
                message.push(Bucket::System, text);
            }
        }
    }
}

/// Asks the plugin for the text of each of its sections before a run's next turn.
pub(super) struct SectionRefresh {
    pub reach: Arc<Reach>,
    pub texts: Texts,
    /// The sections' names, by slot.
    pub names: Vec<String>,
}

impl SectionRefresh {
    pub(super) fn texts() -> Texts {
        Arc::default()
    }
}

impl Reflection for SectionRefresh {
    fn reflect<'a>(
        &'a self,
        _services: &'a ReflectionServices,
        at: &'a Reflecting,
    ) -> BoxFuture<'a, ()> {
        async move {
            if matches!(at.moment, Moment::BeforePanic | Moment::LoopEnded { .. }) {
                return;
            }
            let next_turn = at.turn + 1;
            if !self.reach.run(at.run) {
                return;
            }
            for (slot, name) in self.names.iter().enumerate() {
                let request = SectionRequest {
                    section: name,
                    run: at.run.0,
                    turn: next_turn,
                };
                let params = serde_json::to_value(request).unwrap_or(Value::Null);
                let text = match self.reach.link.call(SECTION_RENDER, params).await {
                    Ok(answer) => serde_json::from_value::<SectionAnswer>(answer)
                        .map(|answer| answer.text)
                        .unwrap_or_default(),
                    Err(error) => {
                        tracing::warn!(plugin = self.reach.link.name(), section = name.as_str(), %error, "a plugin section failed; it is left out");
                        String::new()
                    }
                };
                let mut texts = lock(&self.texts);
                if texts.len() >= KEPT_RUNS {
                    texts.clear();
                }
                texts.insert((slot, at.run), text);
            }
        }
        .boxed()
    }
}

/// An RPC method of a plugin process.
pub(super) struct ProcessMethod {
    pub reach: Arc<Reach>,
    pub name: &'static str,
    pub description: &'static str,
    pub params: &'static [(&'static str, &'static str)],
    pub role: Role,
}

impl ProcessMethod {
    pub(super) fn new(reach: Arc<Reach>, declared: MethodDecl) -> ProcessMethod {
        let params: Vec<(&'static str, &'static str)> = declared
            .params
            .into_iter()
            .map(|(name, meaning)| (&*name.leak(), &*meaning.leak()))
            .collect();
        ProcessMethod {
            reach,
            name: declared.name.leak(),
            description: declared.description.leak(),
            params: params.leak(),
            role: declared.role,
        }
    }
}

impl PluginMethod for ProcessMethod {
    fn name(&self) -> &'static str {
        self.name
    }

    fn description(&self) -> &'static str {
        self.description
    }

    fn params(&self) -> &'static [(&'static str, &'static str)] {
        self.params
    }

    fn role(&self) -> Role {
        self.role
    }

    fn needs_init(&self) -> bool {
        true
    }

    fn call(&self, call: MethodCall, params: Value) -> Result<MethodFuture, ParamsError> {
        let reach = Arc::clone(&self.reach);
        let method = self.name;
        Ok(Box::pin(async move {
            let served = call.project.is_some_and(|project| reach.project(project));
            if !served {
                return Err(MethodError::Failed(format!(
                    "plugin {} does not serve this project",
                    reach.link.name()
                )));
            }
            let request = MethodRequest {
                method,
                params,
                project: call.project.map(|project| project.0),
                person: call.person.as_deref(),
            };
            let params = serde_json::to_value(request)
                .map_err(|error| MethodError::Failed(error.to_string()))?;
            reach
                .link
                .call(METHOD_CALL, params)
                .await
                .map_err(|error| match error {
                    CallError::Answered {
                        code: -32602,
                        message,
                    } => MethodError::InvalidParams(message),
                    error => MethodError::Failed(error.to_string()),
                })
        }))
    }
}
