//! `ask`, `act`, `run/resolve`, `run/inject`: the long-running methods that drive loops.

use std::path::Path;
use std::sync::Arc;

use serde::Deserialize;
use tokio::sync::oneshot;

use crate::agent::admission::Asking;
use crate::agent::loop_config::LoopConfig;
use crate::agent::outcome::{blocked_result, Ending, LoopOutcome, ProposedRow};
use crate::agent::resume;
use crate::agent::AgentContext;
use crate::config::{ApplyEdits, RunCommands};
use crate::db::enums::{LoopMode, LoopPriority, RunStatus};
use crate::db::ids::{ProjectId, RunId};
use crate::db::models::entry::EntryUpsertForm;
use crate::db::models::run::{LoopEnqueue, RunConfigUpdateForm, RunCreateForm, RunRow};
use crate::db::queries::{entries, instances, loops, models, runs, usage};
use crate::db::{Conn, DbError};
use crate::error::AppError;
use crate::llm::{spender, Spender};
use crate::plugins::bundled::tools::command_proposal::RanOnServer;
use crate::plugins::engine::resolve::{gather_acceptance, Resolution as Decision, ResolveInput};
use crate::plugins::events::Event;
use crate::plugins::filters::RunRequest;
use crate::plugins::gather::Gathered;
use crate::rpc::call::{CallContext, Reply};
use crate::rpc::handlers::run_settings;
use crate::rpc::handlers::runs::{find_run, now_ms, validate_settings};
use crate::rpc::held_calls;
use crate::rpc::held_calls::{HeldMethod, ResolveCall};
use crate::rpc::params::{truthy, Required};
use crate::sandbox::policy::ProjectChoice;
use crate::sandbox::runner::CommandPlace;
use crate::usage::{Amount, CapLimits, Limits};

/// `ask` / `act` params.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct AskParams {
    model: Required,
    #[serde(default)]
    prompt: Option<String>,
    #[serde(default)]
    run: Option<String>,
    #[serde(default, deserialize_with = "truthy")]
    fork: bool,
    #[serde(default)]
    temperature: Option<f64>,
    #[serde(default)]
    persona: Option<String>,
    #[serde(default)]
    context_limit: Option<i64>,
    #[serde(default, deserialize_with = "truthy")]
    no_repo: bool,
    #[serde(default, deserialize_with = "truthy")]
    no_interaction: bool,
    #[serde(default, deserialize_with = "truthy")]
    no_web: bool,
    #[serde(default, deserialize_with = "truthy")]
    no_proposals: bool,
    /// The run's own spend caps (replacing those it had), never above the caller's.
    #[serde(default)]
    caps: Option<CapLimits>,
}

/// `ask`: a loop that may not change files.
pub(crate) async fn ask(context: CallContext, params: AskParams) -> Result<Reply, AppError> {
    ask_or_act(context, LoopMode::Ask, params).await
}

/// `act`: a loop that may propose file changes.
pub(crate) async fn act(context: CallContext, params: AskParams) -> Result<Reply, AppError> {
    ask_or_act(context, LoopMode::Act, params).await
}

/// `ask` / `act`: start or continue (or fork) a run, queue the loop once the bounds on
/// active loops admit it, reply when it ends.
async fn ask_or_act(
    context: CallContext,
    mode: LoopMode,
    params: AskParams,
) -> Result<Reply, AppError> {
    let binding = context.project()?;
    let project = binding.id;
    let (mode, params) = configured(&context, mode, params).await?;
    let context_limit = validate_settings(params.temperature, params.context_limit)?;
    let model = params.model.0.clone();
    require_known_model(&context.agent, &model).await?;
    context.agent.plugins.emit(Event::AskStarted {
        mode,
        project,
        model: &model,
        prompt: params.prompt.as_deref().unwrap_or_default(),
        run: params.run.as_deref(),
    });
    let existing = match &params.run {
        Some(alias) if !alias.is_empty() => Some(find_run(&context, alias).await?),
        _ => None,
    };
    let caps = run_caps(&context, params.caps.as_ref())?;
    let continued = existing.as_ref().filter(|_| !params.fork).map(|run| run.id);
    refuse_at_cap(&context, continued, caps).await?;
    let admitted = context
        .agent
        .admission
        .admit(Asking {
            project,
            project_name: &binding.name,
            limit_key: &context.limit_key(),
            person: context.caller.person(),
        })
        .await?;
    let choice = params.run_choice(project, existing, context_limit, context.person());
    let start = context
        .agent
        .db
        .call(move |conn| choice.start(conn))
        .await?;
    let run = match start {
        LoopStart::Ready { run, created } => {
            if let Some(created) = created {
                context.agent.plugins.emit(Event::RunCreated {
                    run,
                    alias: &created.alias,
                    project,
                    forked_from: created.forked_from.as_deref(),
                });
            }
            run
        }
        LoopStart::Blocked { alias, proposed } => {
            return Reply::of(blocked_result(&alias, &proposed))
        }
    };
    let enqueue = LoopEnqueue {
        run_id: run,
        mode,
        model: Some(model),
        config: params.loop_config().to_json(),
        prompt: params.prompt.unwrap_or_default(),
        priority: LoopPriority::Normal,
        requested_by: context.person(),
    };
    let outcome = context.agent.runs.enqueue(&context.agent, enqueue).await?;
    let (outcome, alias) = loop_outcome(&context.agent, run, admitted.until(outcome)).await?;
    context.agent.plugins.emit(Event::AskCompleted {
        mode,
        project,
        run: &alias,
        status: outcome.status(),
    });
    Reply::of(outcome.to_result(&alias))
}

/// The run's own caps an `ask`/`act` gives, checked: none above the caller's own caps
/// (refused, naming the first, rather than lowered without a word).
fn run_caps(context: &CallContext, given: Option<&CapLimits>) -> Result<Option<Limits>, AppError> {
    let Some(given) = given else {
        return Ok(None);
    };
    let limits = given
        .checked()
        .map_err(|error| AppError::InvalidParam(format!("caps.{error}")))?;
    let Some(person) = context.person() else {
        return Ok(Some(limits));
    };
    let own = context.agent.llm.spending().book().person(&person);
    match limits.above(&own) {
        Some((limit, allowed)) => Err(AppError::InvalidParam(format!(
            "caps.{}_{}: a run's cap may not be above its starter's own ({} per {})",
            limit.period.as_str(),
            limit.unit.as_str(),
            Amount::of(limit.unit, allowed),
            limit.period.as_str()
        ))),
        None => Ok(Some(limits)),
    }
}

/// Refuses an `ask`/`act` when a cap it would count against is reached: those of the run it
/// continues (`run`, its caps replaced by `caps` when given) and of the run's person, or
/// of the caller for a new run or a fork, and of the project and the server.
async fn refuse_at_cap(
    context: &CallContext,
    run: Option<RunId>,
    caps: Option<Limits>,
) -> Result<(), AppError> {
    let binding = context.project()?;
    let spending = context.agent.llm.spending().clone();
    let now = spending.clock().now();
    let caller = Spender {
        run: None,
        person: context.person(),
        project: (binding.id, binding.name.clone()),
    };
    let reached = context
        .agent
        .db
        .read(move |conn| {
            let mut counted = match run {
                Some(run) => spender(conn, run)?,
                None => caller,
            };
            if let (Some((_, _, limits)), Some(caps)) = (counted.run.as_mut(), caps) {
                *limits = caps;
            }
            spending.reached(conn, &counted, now)
        })
        .await?;
    match reached {
        Some(cap) => Err(AppError::CapReached(Box::new(cap))),
        None => Ok(()),
    }
}

/// `mode` and `params` after the `run.config` filters: clamped, or refused.
async fn configured(
    context: &CallContext,
    mode: LoopMode,
    params: AskParams,
) -> Result<(LoopMode, AskParams), AppError> {
    let request = RunRequest {
        mode: Some(mode),
        model: params.model.0.clone(),
        temperature: params.temperature,
        context_limit: params.context_limit,
        persona: params.persona.clone(),
        no_repo: params.no_repo,
        no_interaction: params.no_interaction,
        no_web: params.no_web,
        no_proposals: params.no_proposals,
        refusal: None,
    };
    let request = run_settings::filtered(context, mode.as_str(), request).await?;
    let mode = match request.mode {
        Some(LoopMode::Ask) => LoopMode::Ask,
        _ => mode,
    };
    let params = AskParams {
        model: Required(request.model),
        temperature: request.temperature,
        context_limit: request.context_limit,
        persona: request.persona,
        no_repo: request.no_repo,
        no_interaction: request.no_interaction,
        no_web: request.no_web,
        no_proposals: request.no_proposals,
        ..params
    };
    Ok((mode, params))
}

/// An unknown model alias is refused before anything is admitted or written.
async fn require_known_model(agent: &AgentContext, model: &str) -> Result<(), AppError> {
    let alias = model.to_owned();
    let known = agent
        .db
        .read(move |conn| models::find_model(conn, &alias))
        .await?;
    match known {
        Some(_) => Ok(()),
        None => Err(AppError::UnknownModel(model.to_owned())),
    }
}

impl AskParams {
    /// The flags of the loop the call queues.
    fn loop_config(&self) -> LoopConfig {
        LoopConfig {
            no_repo: self.no_repo,
            no_interaction: self.no_interaction,
            no_web: self.no_web,
            no_proposals: self.no_proposals,
            temperature: self.temperature,
            panic_attempted: false,
            max_turns: None,
            delegation_depth: 0,
        }
    }

    /// Which run the call goes to, with the settings it gives a fork or a new run; `person`
    /// forks or creates it.
    fn run_choice(
        &self,
        project: ProjectId,
        existing: Option<RunRow>,
        context_limit: Option<i32>,
        person: Option<String>,
    ) -> RunChoice {
        let model = self.model.0.clone();
        RunChoice {
            existing,
            fork: self.fork,
            settings: RunConfigUpdateForm {
                temperature: self.temperature,
                persona: self.persona.clone(),
                context_limit,
                model: Some(model.clone()),
            },
            create: RunCreateForm {
                project_id: project,
                model,
                temperature: self.temperature,
                persona: self.persona.clone(),
                context_limit,
                created_by: person.clone(),
            },
            person,
            caps: self
                .caps
                .as_ref()
                .and_then(|caps| serde_json::to_string(caps).ok()),
        }
    }
}

/// Which run an `ask`/`act` goes to: a fork of the run it names, that run, or a new one.
struct RunChoice {
    existing: Option<RunRow>,
    fork: bool,
    /// The call's settings, given to a fork.
    settings: RunConfigUpdateForm,
    /// The run created when the call names none.
    create: RunCreateForm,
    /// Who forks.
    person: Option<String>,
    /// The run's own caps the call gives the run it goes to (JSON, `CapLimits`).
    caps: Option<String>,
}

impl RunChoice {
    /// In one unit of work: forks or creates the run, or finds the named one blocked by
    /// pending proposals.
    fn start(self, conn: &mut Conn) -> Result<LoopStart, DbError> {
        let caps = self.caps.clone();
        let started = self.start_run(conn)?;
        if let (LoopStart::Ready { run, .. }, Some(caps)) = (&started, caps) {
            usage::set_run_caps(conn, *run, &caps)?;
        }
        Ok(started)
    }

    fn start_run(self, conn: &mut Conn) -> Result<LoopStart, DbError> {
        let run = match self.existing {
            Some(parent) if self.fork => {
                let fork = runs::fork_run(conn, parent.id, self.person, now_ms())?;
                let fork = runs::update_run_config(conn, fork.id, &self.settings)?;
                return Ok(LoopStart::Ready {
                    run: fork.id,
                    created: Some(NewRun {
                        alias: fork.alias,
                        forked_from: Some(parent.alias),
                    }),
                });
            }
            Some(run) => run,
            None => {
                let run = runs::create_run(conn, &self.create, now_ms())?;
                return Ok(LoopStart::Ready {
                    run: run.id,
                    created: Some(NewRun {
                        alias: run.alias,
                        forked_from: None,
                    }),
                });
            }
        };
        let proposed = entries::unresolved(conn, run.id)?;
        if !proposed.is_empty() {
            return Ok(LoopStart::Blocked {
                alias: run.alias,
                proposed: proposed.into_iter().map(ProposedRow::from).collect(),
            });
        }
        Ok(LoopStart::Ready {
            run: run.id,
            created: None,
        })
    }
}

/// What the unit of work that finds, forks or creates the run of an `ask`/`act` found.
enum LoopStart {
    /// The run the loop goes to.
    Ready {
        run: RunId,
        /// Set when the run is new (or a fork).
        created: Option<NewRun>,
    },
    /// The run has pending proposals: nothing is queued.
    Blocked {
        alias: String,
        proposed: Vec<ProposedRow>,
    },
}

/// A run an `ask`/`act` created.
struct NewRun {
    alias: String,
    /// The alias of the run it forks.
    forked_from: Option<String>,
}

/// Queues a loop through the run's actor and waits for that loop's outcome.
async fn run_loop(
    agent: &AgentContext,
    run: RunId,
    enqueue: LoopEnqueue,
) -> Result<Reply, AppError> {
    let outcome = agent.runs.enqueue(agent, enqueue).await?;
    let (outcome, alias) = loop_outcome(agent, run, outcome).await?;
    Reply::of(outcome.to_result(&alias))
}

/// A queued loop's outcome, and the run's alias then.
async fn loop_outcome(
    agent: &AgentContext,
    run: RunId,
    outcome: oneshot::Receiver<LoopOutcome>,
) -> Result<(LoopOutcome, String), AppError> {
    let outcome = outcome
        .await
        .map_err(|_| AppError::Internal("the run stopped before its loop ended".into()))?;
    Ok((outcome, current_alias(agent, run).await?))
}

async fn current_alias(agent: &AgentContext, run: RunId) -> Result<String, AppError> {
    let row = agent.db.read(move |conn| runs::get_run(conn, run)).await?;
    row.map(|run| run.alias)
        .ok_or_else(|| AppError::Internal("the run disappeared".into()))
}

async fn pending_proposals(agent: &AgentContext, run: RunId) -> Result<Vec<ProposedRow>, AppError> {
    let rows = agent
        .db
        .call(move |conn| entries::unresolved(conn, run))
        .await?;
    Ok(rows.into_iter().map(ProposedRow::from).collect())
}

/// `run/resolve` params.
#[derive(Debug, Deserialize)]
pub(crate) struct ResolveParams {
    run: Required,
    #[serde(default)]
    resolution: Option<ResolutionParams>,
}

/// One resolution: which proposal, what the client did, and its output.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct ResolutionParams {
    path: Required,
    action: Required,
    #[serde(default)]
    output: Option<String>,
}

/// `run/resolve`: its params checked and its run found here, executed by the instance
/// holding the run's lease ([`resolve_run`]).
pub(crate) async fn resolve(
    context: CallContext,
    params: ResolveParams,
) -> Result<Reply, AppError> {
    let resolution = params
        .resolution
        .ok_or_else(|| AppError::MissingParam("resolution".into()))?;
    let action = Decision::parse(&resolution.action).map_err(|_| {
        AppError::InvalidParam(format!(
            "Invalid resolution action: {}. Use 'accept' or 'reject'.",
            &*resolution.action
        ))
    })?;
    let run = find_run(&context, &params.run).await?;
    let call = ResolveCall {
        path: resolution.path.0,
        action,
        output: resolution.output,
    };
    let held = HeldMethod::Resolve(call.clone());
    if let Some(answer) = held_calls::ask(&context, run.id, held).await {
        return answer;
    }
    let root = context.project()?.root.clone();
    resolve_run(&context.agent, run, call, context.person(), &root).await
}

/// Applies one resolution of `person` to `run` (of the project rooted at `root`); when none
/// is left pending, ends or resumes the run per the seed SPEC's table (reject stops; accept
/// after summarize completes; else resume).
pub(crate) async fn resolve_run(
    agent: &AgentContext,
    run: RunRow,
    call: ResolveCall,
    person: Option<String>,
    root: &Path,
) -> Result<Reply, AppError> {
    let action = call.action;
    let policy = ProjectChoice::load(&agent.db, run.project_id)
        .await?
        .policy(&agent.settings.commands);
    let on_server = policy.commands == RunCommands::Server;
    if let Some(running) = agent.commands.running(run.id).filter(|_| on_server) {
        return Err(AppError::InvalidParam(format!(
            "{running} is running on the server; abort the run to stop it"
        )));
    }
    let place = on_server.then_some(CommandPlace {
        commands: &agent.commands,
        run: run.id,
        alias: &run.alias,
        project: run.project_id,
        root,
        policy: &policy,
    });
    // What accepting needs from outside the store (an MCP server's answer, a command run
    // here) is obtained before the unit of work.
    let mut gathered = match action {
        Decision::Accept => accepted(agent, &run, &call.path, place).await?,
        Decision::Reject | Decision::Error => Gathered::default(),
    };
    let ran = gathered.any::<RanOnServer>();
    if let Some(Err(error)) = ran {
        return Err(AppError::InvalidParam(error.to_string()));
    }
    let aborted = matches!(ran, Some(Ok(outcome)) if outcome.aborted);
    let input = ResolveInput {
        run_id: run.id,
        path: call.path,
        resolution: action,
        output: call.output,
    };
    let resolved_run = run.clone();
    let plugins = Arc::clone(&agent.plugins);
    // A project whose commands run here has its edits applied here too: its clients may
    // have no copy of its files.
    let applies_edits = agent.settings.agent.apply_edits == ApplyEdits::Server || on_server;
    let disk_root = applies_edits.then(|| root.to_path_buf());
    let decision = agent
        .db
        .call(move |conn| {
            resume::resolve(
                conn,
                &plugins,
                &resolved_run,
                input,
                person,
                disk_root.as_deref(),
                &mut gathered,
            )
        })
        .await?;
    if aborted {
        return stopped_by_abort(agent, &run).await;
    }
    match decision {
        resume::Decision::StillPending(proposed) => {
            let proposed: Vec<ProposedRow> = proposed.into_iter().map(ProposedRow::from).collect();
            Reply::of(blocked_result(&run.alias, &proposed))
        }
        resume::Decision::Completed(ending) => {
            Reply::of(LoopOutcome::Ended(ending).to_result(&run.alias))
        }
        resume::Decision::Resume(enqueue) => run_loop(agent, run.id, *enqueue).await,
        resume::Decision::Refused(reason) => Err(AppError::InvalidParam(reason)),
    }
}

/// The reply to a resolution whose command was aborted while it ran: the run stops (499),
/// whatever else is pending.
async fn stopped_by_abort(agent: &AgentContext, run: &RunRow) -> Result<Reply, AppError> {
    let run_id = run.id;
    agent
        .db
        .call(move |conn| runs::abort_if_idle(conn, run_id))
        .await?;
    Reply::of(LoopOutcome::Ended(Ending::Aborted).to_result(&run.alias))
}

/// What accepting the proposal at `path` of `run` needs from outside the store; with a
/// `place` (its project runs commands here) the run's lease is held meanwhile, so calls for
/// the run other instances receive (an abort) come here.
async fn accepted(
    agent: &AgentContext,
    run: &RunRow,
    path: &str,
    place: Option<CommandPlace<'_>>,
) -> Result<Gathered, AppError> {
    if place.is_none() {
        return Ok(gather_acceptance(&agent.plugins, &agent.db, run.id, path, place).await?);
    }
    let (run_id, instance) = (run.id, agent.runs.instance().id().to_owned());
    let holder = instance.clone();
    agent
        .db
        .call(move |conn| instances::hold(conn, run_id, &holder))
        .await?;
    let gathered = gather_acceptance(&agent.plugins, &agent.db, run_id, path, place).await;
    agent
        .db
        .call(move |conn| instances::let_go(conn, run_id, &instance))
        .await?;
    Ok(gathered?)
}

/// `run/inject` params.
#[derive(Debug, Deserialize)]
pub(crate) struct InjectParams {
    run: Required,
    message: Required,
}

/// `run/inject`: its run found here, executed by the instance holding the run's lease
/// ([`inject_run`]).
pub(crate) async fn inject(context: CallContext, params: InjectParams) -> Result<Reply, AppError> {
    let run = find_run(&context, &params.run).await?;
    let message = params.message.0;
    let held = HeldMethod::Inject {
        message: message.clone(),
    };
    if let Some(answer) = held_calls::ask(&context, run.id, held).await {
        return answer;
    }
    inject_run(&context.agent, run, context.person(), message).await
}

/// `person`'s `message` for `run`: the running loop sees it as its prompt next turn; an
/// idle run runs it as a new loop with the mode and flags of its latest loop (ask for a new
/// run).
pub(crate) async fn inject_run(
    agent: &AgentContext,
    run: RunRow,
    person: Option<String>,
    message: String,
) -> Result<Reply, AppError> {
    if let Some(current) = agent.runs.current(run.id) {
        let run_id = run.id;
        agent
            .db
            .call(move |conn| {
                let fresh = runs::get_run(conn, run_id)?;
                let turn = fresh.map(|run| run.next_turn).unwrap_or(1);
                let mode = loops::get_loop(conn, current.id)?
                    .map(|lp| lp.mode)
                    .unwrap_or(LoopMode::Ask);
                entries::upsert_entry(
                    conn,
                    &EntryUpsertForm {
                        attributes: Some(serde_json::json!({"mode": mode.as_str()})),
                        ..EntryUpsertForm::new(
                            run_id,
                            Some(current.id),
                            turn,
                            format!("prompt://{turn}"),
                            message,
                        )
                    },
                )
            })
            .await?;
        return Reply::of(serde_json::json!({
            "run": run.alias,
            "status": RunStatus::Running,
            "injected": "next_turn",
        }));
    }
    let proposed = pending_proposals(agent, run.id).await?;
    if !proposed.is_empty() {
        return Reply::of(blocked_result(&run.alias, &proposed));
    }
    let enqueue = inject_loop(agent, &run, person, message).await?;
    run_loop(agent, run.id, enqueue).await
}

async fn inject_loop(
    agent: &AgentContext,
    run: &RunRow,
    person: Option<String>,
    message: String,
) -> Result<LoopEnqueue, AppError> {
    let run_id = run.id;
    let model = run.model.clone();
    let latest = agent
        .db
        .call(move |conn| loops::latest_loop(conn, run_id))
        .await?;
    // The injected loop continues the latest one with its mode and flags; a panic loop
    // (context recovery) is never continued as such, and a new prompt may panic again.
    let (mode, config) = match latest {
        Some(lp) if lp.mode != LoopMode::Panic => (
            lp.mode,
            LoopConfig {
                panic_attempted: false,
                ..LoopConfig::of(&lp.config)
            },
        ),
        _ => (LoopMode::Ask, LoopConfig::default()),
    };
    Ok(LoopEnqueue {
        run_id,
        mode,
        model,
        prompt: message,
        priority: LoopPriority::Normal,
        config: config.to_json(),
        requested_by: person,
    })
}
