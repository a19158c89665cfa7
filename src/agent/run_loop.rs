//! One loop: turns until the model finishes, stalls, cycles, refuses, proposes, overflows,
//! fails, is aborted, reaches the turn limit, or pauses at a spend cap (402, `agent::paused`;
//! a paused loop claimed again takes up the turn the cap refused). Every run status change
//! of a loop happens here.

use std::path::PathBuf;
use std::sync::Arc;

use tracing::Instrument;

use crate::agent::allow::{self, apply::LoopPlace, Allowed};
use crate::agent::current::CurrentLoop;
use crate::agent::error::LoopError;
use crate::agent::loop_config::LoopConfig;
use crate::agent::machine::{self, Transition};
use crate::agent::outcome::{Ending, LoopOutcome, ProposedRow};
use crate::agent::paused::{self, PausedPlace, Pausing};
use crate::agent::reflect::Reflector;
use crate::agent::run_budget::RunBudget;
use crate::agent::scan;
use crate::agent::state::{self, carried::CarriedSlot};
use crate::agent::turn::{execute_turn, LatestWritten, PanicState, TurnEnd, TurnInput, TurnReport};
use crate::agent::AgentContext;
use crate::budget::{
    plan_overflow, ContextWindow, OverflowDecision, OverflowFacts, PanicTracker, TokenMath,
};
use crate::db::enums::{EntryStatus, RunStatus};
use crate::db::enums::{Fidelity, LoopPriority};
use crate::db::ids::{ProjectId, RunId};
use crate::db::models::entry::EntryUpsertForm;
use crate::db::models::entry::Selector;
use crate::db::models::run::{LoopEnqueue, LoopRow, RunRow, TurnRow};
use crate::db::models::ModelRow;
use crate::db::queries::loops;
use crate::db::queries::{demotions, entries, models, projects, runs, turns};
use crate::db::{Conn, DbError};
use crate::hub;
use crate::hub::notifications::{Notification, Telemetry, UsageTotals};
use crate::llm::CancellationToken as LlmCancel;
use crate::llm::LlmError;
use crate::parser::healer::{HealerLimits, ProgressTracker, RepetitionTracker, Verdict};
use crate::plugins::events::Event;
use crate::plugins::reflection::Moment;

/// Runs one claimed loop to its end and sets the run's status accordingly. A loop cancelled
/// by `run/abort` ends 499 whatever it was doing, and the recovery loops it queued for an
/// overflow are dropped with it. Besides the outcome, the reflector the loop's end is still
/// to be reflected with (`None` for a panic, an aborted loop, or when no plugin reflects):
/// the caller hands the outcome over first, then awaits `Reflector::loop_ended` before
/// the run's next loop, so whoever waits for the loop does not wait for its reflections.
pub(crate) async fn execute_loop(
    agent: &AgentContext,
    lp: LoopRow,
    current: &CurrentLoop,
    latest: &Arc<LatestWritten>,
) -> (LoopOutcome, Option<Reflector>) {
    let cancel = current.cancel.clone();
    let new_span = || tracing::info_span!("loop", run.id = %lp.run_id, loop.id = %lp.id, mode = lp.mode.as_str());
    let span = match crate::telemetry::links::asker(lp.id) {
        Some(asker) => asker.in_scope(new_span),
        None => new_span(),
    };
    let run_id = lp.run_id;
    let mut end = LoopEnd::default();
    let result = run_turns(agent, &lp, current, latest, &mut end)
        .instrument(span)
        .await;
    let LoopEnd {
        reflector,
        run,
        iteration,
        model,
    } = end;
    let mut pausing = None;
    let outcome = match result {
        Ok(outcome) => outcome,
        Err(_) if cancel.is_cancelled() => LoopOutcome::Ended(Ending::Aborted),
        Err(LoopError::Llm(LlmError::CapReached(cap))) => {
            let error = cap.describe();
            tracing::info!(run.id = %run_id, %error, "loop stopped by a spend cap");
            if LoopConfig::of(&lp.config).delegation_depth > 0 {
                record_error(agent, &lp, &error, EntryStatus::CapReached).await;
                LoopOutcome::Ended(Ending::CapReached)
            } else {
                let paused = Pausing {
                    run: run_id,
                    loop_id: lp.id,
                    turn: 0,
                    iteration,
                    cap: *cap,
                    told: None,
                };
                let outcome = paused.outcome();
                pausing = Some((paused, model));
                outcome
            }
        }
        Err(error) => {
            tracing::warn!(run.id = %run_id, %error, "loop failed");
            record_error(agent, &lp, &error.to_string(), EntryStatus::Failed).await;
            LoopOutcome::Ended(Ending::Failed)
        }
    };
    let outcome = match pausing {
        Some((paused, model)) => pause(agent, paused, model, current, run).await,
        None => store_outcome(agent, &lp, outcome, current, run).await,
    };
    agent.plugins.emit(Event::LoopEnded {
        run: run_id,
        loop_id: lp.id,
        status: outcome.status(),
    });
    let reflects = !matches!(
        outcome,
        LoopOutcome::Panicked { .. } | LoopOutcome::Ended(Ending::Aborted)
    );
    (outcome, reflector.filter(|_| reflects))
}

/// Stores the run's status and the loop's record for `outcome`, deciding in the same unit of
/// work (on the writer, where an abort's unit cancels it) whether an abort came first: then
/// the run is 499 and the outcome is aborted. A message injected into a loop that ends
/// without taking another turn is taken in by a loop queued in that unit, like the loop that
/// continues a run after a resolution.
async fn store_outcome(
    agent: &AgentContext,
    lp: &LoopRow,
    outcome: LoopOutcome,
    current: &CurrentLoop,
    run: Option<(ProjectId, String)>,
) -> LoopOutcome {
    let bounds = agent.db.event_bounds();
    let current = current.clone();
    let run_id = lp.run_id;
    let loop_id = lp.id;
    let panicked = matches!(outcome, LoopOutcome::Panicked { .. });
    let takes_injection = matches!(outcome, LoopOutcome::Ended(ending) if ending.completes());
    let continuation = takes_injection.then(|| continuation_of(lp));
    let status = outcome.status();
    let aborted = LoopOutcome::Ended(Ending::Aborted);
    let record = serde_json::to_value(outcome.to_record()).unwrap_or_default();
    let told_outcome = outcome.clone();
    let aborted_record = serde_json::to_value(aborted.to_record()).unwrap_or_default();
    let stored = agent
        .db
        .call(move |conn| {
            let joined = current.settle();
            let settle = |conn: &mut Conn, status| {
                machine::take(conn, run_id, RunStatus::Running, Transition::Settle(status))
                    .map_err(|error| DbError::Invalid(error.to_string()))
            };
            let told = |conn: &mut Conn, outcome: &LoopOutcome| match &run {
                Some((project, alias)) => {
                    let ended = Notification::Outcome(outcome.told(alias));
                    hub::append(conn, &bounds, *project, run_id, &ended)
                }
                None => Ok(()),
            };
            if current.cancel.is_cancelled() {
                if panicked {
                    loops::drop_recovery_loops(conn, run_id)?;
                }
                settle(conn, RunStatus::Aborted)?;
                loops::finish_loop(conn, loop_id, RunStatus::Aborted, Some(&aborted_record))?;
                told(conn, &LoopOutcome::Ended(Ending::Aborted))?;
                return Ok(true);
            }
            if !panicked {
                settle(conn, status)?;
                told(conn, &told_outcome)?;
            }
            loops::finish_loop(conn, loop_id, status, Some(&record))?;
            if let Some(continuation) = continuation.filter(|_| joined) {
                loops::enqueue_loop(conn, &continuation)?;
            }
            Ok(false)
        })
        .await;
    match stored {
        Ok(true) => aborted,
        Ok(false) => outcome,
        Err(error) => {
            tracing::error!(run.id = %run_id, %error, "cannot store the loop's outcome");
            outcome
        }
    }
}

/// Pauses the loop `pausing` at its spend cap (`agent::paused::pause`), deciding in the
/// same unit of work whether an abort came first (then it is aborted, as in
/// [`store_outcome`]); the run's clients told its state at 402, from the loop's `model`.
async fn pause(
    agent: &AgentContext,
    mut pausing: Pausing,
    model: Option<LoopModel>,
    current: &CurrentLoop,
    run: Option<(ProjectId, String)>,
) -> LoopOutcome {
    let bounds = agent.db.event_bounds();
    let current = current.clone();
    let run_id = pausing.run;
    let loop_id = pausing.loop_id;
    let aborted = LoopOutcome::Ended(Ending::Aborted);
    let aborted_record = serde_json::to_value(aborted.to_record()).unwrap_or_default();
    let outcome = pausing.outcome();
    let stored = agent
        .db
        .call(move |conn| {
            current.settle();
            let latest = turns::latest_turn(conn, run_id)?;
            pausing.turn = latest.as_ref().map_or(0, |turn| turn.sequence);
            if current.cancel.is_cancelled() {
                machine::take(
                    conn,
                    run_id,
                    RunStatus::Running,
                    Transition::Settle(RunStatus::Aborted),
                )
                .map_err(|error| DbError::Invalid(error.to_string()))?;
                loops::finish_loop(conn, loop_id, RunStatus::Aborted, Some(&aborted_record))?;
                if let Some((project, alias)) = &run {
                    let ended =
                        Notification::Outcome(LoopOutcome::Ended(Ending::Aborted).told(alias));
                    hub::append(conn, &bounds, *project, run_id, &ended)?;
                }
                return Ok(true);
            }
            if let Some((project, alias)) = run {
                let telemetry = model.unwrap_or_default().telemetry();
                let state = state::paused_state(conn, run_id, &alias, pausing.turn, telemetry)?;
                pausing.told = Some((project, alias, Box::new(state)));
            }
            paused::pause(conn, &bounds, &pausing)?;
            Ok(false)
        })
        .await;
    match stored {
        Ok(true) => aborted,
        Ok(false) => {
            agent.paused.poke();
            outcome
        }
        Err(error) => {
            tracing::error!(run.id = %run_id, %error, "cannot store the loop's pause");
            outcome
        }
    }
}

/// What a loop's end needs of its start: the reflector its end is reflected with, set once
/// the loop's model is known, the run's project and alias, set once it is read, the
/// iteration under way and the model the loop calls (for a pause).
#[derive(Default)]
struct LoopEnd {
    reflector: Option<Reflector>,
    run: Option<(ProjectId, String)>,
    iteration: u32,
    model: Option<LoopModel>,
}

/// The model a loop calls, as its clients' `run/state` shows it.
#[derive(Default)]
struct LoopModel {
    alias: String,
    temperature: Option<f64>,
    context_size: i64,
}

impl LoopModel {
    /// The telemetry of a state told outside a turn (no packet of its own).
    fn telemetry(self) -> Telemetry {
        Telemetry {
            model: self.alias.clone(),
            model_alias: self.alias,
            temperature: self.temperature,
            context_size: self.context_size,
            context_tokens: 0,
            usage: UsageTotals::of(&[]),
            context_distribution: Vec::new(),
        }
    }
}

/// Runs the loop's turns, setting `end` as it learns it.
async fn run_turns(
    agent: &AgentContext,
    lp: &LoopRow,
    current: &CurrentLoop,
    latest: &Arc<LatestWritten>,
    end: &mut LoopEnd,
) -> Result<LoopOutcome, LoopError> {
    let cancel = &current.cancel;
    let mut opened = open_loop(agent, lp, cancel, latest, end).await?;
    end.model = Some(LoopModel {
        alias: opened.model_alias.clone(),
        temperature: opened.temperature,
        context_size: opened.context_size,
    });
    let limits = healer_limits(&agent.settings.agent);
    let mut progress = ProgressTracker::new(limits);
    let mut repetition = RepetitionTracker::new(limits);
    let window = ContextWindow::new(u64::try_from(opened.context_size).unwrap_or(0));
    let mut panic = PanicTracker::from_loop(lp, window)
        .map(|tracker| PanicState::new(tracker, lp.prompt.clone()));
    let first = opened
        .paused
        .as_ref()
        .map_or(1, |(iteration, _)| (*iteration).max(1));
    for iteration in first..=opened.max_turns {
        if cancel.is_cancelled() {
            return Ok(LoopOutcome::Ended(Ending::Aborted));
        }
        end.iteration = iteration;
        let reflector = &mut end.reflector;
        let paused_turn = opened.paused.take().map(|(_, turn)| turn);
        let mut input = opened.turn_input(lp, iteration, panic.as_mut());
        input.paused_turn = paused_turn;
        let report = match execute_turn(agent, input, cancel).await? {
            TurnEnd::Overflow {
                overflow,
                incoming_prompt,
                prompt_path,
                calibration,
            } => {
                let decision = plan_overflow(&OverflowFacts {
                    original: lp,
                    overflow,
                    incoming_prompt,
                    prompt_label: prompt_path.as_deref().unwrap_or("of this loop"),
                    math: TokenMath::new(agent.settings.tokens.divisor),
                    calibration,
                });
                return enter_panic(agent, reflector, decision, prompt_path).await;
            }
            TurnEnd::Freed => return end_panic(agent, lp).await,
            TurnEnd::GaveUp(failure) => return give_up_panic(agent, lp, failure.to_string()).await,
            TurnEnd::Completed(report) => report,
        };
        current.completed_turn(report.turn);
        let (report, allowed) = opened.allow(agent, lp, cancel, report).await?;
        let wrote = report.has_writes;
        if let Some(reflector) = reflector.as_mut() {
            reflector.turn_ended(report.turn, wrote);
        }
        if let Some(outcome) = judge(report, panic.is_some(), &mut progress, &mut repetition) {
            return Ok(marked(outcome, &allowed));
        }
        if panic.is_some() {
            continue;
        }
        if let Some(reflector) = reflector.as_mut() {
            reflector.reflect(agent, Moment::TurnEnded { wrote }).await;
        }
    }
    if panic.is_some() {
        let error = format!(
            "context recovery did not free enough room in {} turns; \
             the prompt does not fit the model's {}-token context window",
            opened.max_turns, opened.context_size
        );
        return give_up_panic(agent, lp, error).await;
    }
    Ok(LoopOutcome::Ended(Ending::TurnLimit))
}

/// What every turn of a loop shares, settled before its first turn.
struct OpenLoop {
    config: LoopConfig,
    alias: String,
    project: ProjectId,
    /// The project's people have command rules (`agent::allow`), as the loop opened.
    command_rules: bool,
    project_name: String,
    project_root: PathBuf,
    model_alias: String,
    /// The provider's model id.
    model_actual: String,
    /// The effective context size in tokens.
    context_size: i64,
    /// The temperature requests are sent with (`None`: the provider's default).
    temperature: Option<f64>,
    /// The loop's own limit, capped by the configured one; at least 1.
    max_turns: u32,
    /// A loop paused at a spend cap: the iteration it takes up again, and the turn numbered
    /// for the call the cap refused, taken up first.
    paused: Option<(u32, TurnRow)>,
    /// What the run's actor knows of the run's latest `system://` copy and snapshot.
    latest: Arc<LatestWritten>,
    /// The run's state as the loop's latest turn told it.
    carried: CarriedSlot,
}

impl OpenLoop {
    /// The turn's proposals once the rules of the loop's person are applied to its
    /// commands (none looked up in a project without rules), and the commands a rule
    /// allows that its clients are to run.
    async fn allow(
        &self,
        agent: &AgentContext,
        lp: &LoopRow,
        cancel: &LlmCancel,
        mut report: TurnReport,
    ) -> Result<(TurnReport, Vec<(String, Allowed)>), LoopError> {
        if !self.command_rules || report.proposed.is_empty() {
            return Ok((report, Vec::new()));
        }
        let place = LoopPlace {
            lp,
            alias: &self.alias,
            project: self.project,
            project_name: &self.project_name,
            root: &self.project_root,
            cancel,
        };
        let proposed = std::mem::take(&mut report.proposed);
        let applied = allow::apply::apply(agent, &place, proposed).await?;
        report.proposed = applied.proposed;
        Ok((report, applied.allowed))
    }

    fn turn_input<'a>(
        &'a self,
        lp: &'a LoopRow,
        iteration: u32,
        panic: Option<&'a mut PanicState>,
    ) -> TurnInput<'a> {
        TurnInput {
            run_id: lp.run_id,
            loop_row: lp,
            iteration,
            config: &self.config,
            model_alias: &self.model_alias,
            model_actual: &self.model_actual,
            context_size: self.context_size,
            temperature: self.temperature,
            project_root: &self.project_root,
            project_name: &self.project_name,
            panic,
            paused_turn: None,
            latest: &self.latest,
            carried: &self.carried,
        }
    }
}

/// Opens the loop before its first turn: the run marked running, `LoopStarted` emitted, the
/// run's starter's connections to the personal MCP servers its project uses opened, the
/// model resolved (and `reflector` set for it), the project's files synced unless the loop
/// says `no_repo`, and a loop with a new prompt reflected on as it starts.
async fn open_loop(
    agent: &AgentContext,
    lp: &LoopRow,
    cancel: &LlmCancel,
    latest: &Arc<LatestWritten>,
    end: &mut LoopEnd,
) -> Result<OpenLoop, LoopError> {
    let LoopStart {
        run,
        command_rules,
        project_name,
        project_root,
        model_alias,
        model,
        latest_turn,
        paused,
    } = start_loop(agent, lp).await?;
    end.run = Some((run.project_id, run.alias.clone()));
    let reflector = &mut end.reflector;
    agent.plugins.emit(Event::LoopStarted {
        run: lp.run_id,
        alias: &run.alias,
        project: run.project_id,
        project_name: &project_name,
        project_root: &project_root,
        loop_id: lp.id,
        mode: lp.mode,
        prompt: &lp.prompt,
    });
    agent.mcp.open_personal(lp.run_id, &project_name).await;
    let config = LoopConfig::of(&lp.config);
    let model = model.ok_or_else(|| LoopError::UnknownModel(model_alias.clone()))?;
    let (model_actual, context_size) = resolve_model(agent, &run, model, cancel).await?;
    *reflector = Reflector::new(
        agent,
        lp,
        run.project_id,
        &model_actual,
        latest_turn,
        cancel,
    );
    if !config.no_repo {
        let policy = config.policy(lp.mode, agent.settings.search_available());
        let budget = RunBudget::with_window(agent, &run, policy, context_size).await;
        scan::sync_project_files(agent, &run, &project_root, lp.id, budget).await?;
    }
    if !lp.prompt.is_empty() && paused.is_none() {
        if let Some(reflector) = reflector.as_mut() {
            reflector.reflect(agent, Moment::LoopStarting).await;
        }
    }
    let rules = &agent.settings.agent;
    let temperature = config.effective_temperature(run.temperature, rules.temperature);
    let max_turns = config
        .max_turns
        .map_or(rules.max_turns, |turns| turns.min(rules.max_turns))
        .max(1);
    Ok(OpenLoop {
        config,
        alias: run.alias.clone(),
        project: run.project_id,
        command_rules,
        project_name,
        project_root,
        model_alias,
        model_actual,
        context_size,
        temperature,
        max_turns,
        paused,
        latest: Arc::clone(latest),
        carried: CarriedSlot::default(),
    })
}

/// In one unit of work: the loop's run, project and model, and the run made ready for it
/// (status 102, the previous loop's logging demoted when this one has a new prompt, the
/// prompts a summary stood for restored); a loop paused at a spend cap finds the turn it
/// takes up again.
async fn start_loop(agent: &AgentContext, lp: &LoopRow) -> Result<LoopStart, LoopError> {
    let (run_id, loop_id) = (lp.run_id, lp.id);
    let place = PausedPlace::of(lp.result.as_ref().map(|result| &result.0));
    let new_prompt = !lp.prompt.is_empty() && place.is_none();
    let loop_model = lp.model.clone();
    Ok(agent
        .db
        .call(move |conn| {
            let run = runs::get_run(conn, run_id)?
                .ok_or_else(|| DbError::NotFound(format!("run {run_id}")))?;
            let project = projects::get_project(conn, run.project_id)?
                .ok_or_else(|| DbError::NotFound(format!("project {}", run.project_id)))?;
            machine::take(conn, run_id, run.status, Transition::Open)
                .map_err(|error| DbError::Invalid(error.to_string()))?;
            if new_prompt {
                demotions::demote_previous_loop_logging(conn, run_id, loop_id)?;
            }
            demotions::restore_summarized_prompts(conn, run_id)?;
            let model_alias = loop_model.or_else(|| run.model.clone()).unwrap_or_default();
            let model = models::find_model(conn, &model_alias)?;
            let latest = turns::latest_turn(conn, run_id)?;
            let latest_turn = latest.as_ref().map_or(0, |turn| turn.sequence);
            let paused = place.and_then(|place| {
                let turn =
                    latest.filter(|turn| turn.loop_id == loop_id && turn.sequence == place.turn)?;
                Some((place.iteration, turn))
            });
            Ok(LoopStart {
                run,
                command_rules: project.command_rules > 0,
                project_name: project.name,
                project_root: project.project_root.map(PathBuf::from).unwrap_or_default(),
                model_alias,
                model,
                latest_turn,
                paused,
            })
        })
        .await?)
}

/// `outcome` with each proposal a rule allows saying so.
fn marked(mut outcome: LoopOutcome, allowed: &[(String, Allowed)]) -> LoopOutcome {
    if let LoopOutcome::Proposed { proposed, .. } = &mut outcome {
        for row in proposed.iter_mut() {
            row.allowed = allowed
                .iter()
                .find(|(path, _)| *path == row.path)
                .map(|(_, rule)| rule.clone());
        }
    }
    outcome
}

/// The loop's termination rules, as configured.
fn healer_limits(rules: &crate::config::AgentSettings) -> HealerLimits {
    HealerLimits {
        max_stalls: rules.max_stalls,
        min_cycles: usize::try_from(rules.min_cycles).unwrap_or(usize::MAX),
        max_cycle_period: usize::try_from(rules.max_cycle_period).unwrap_or(usize::MAX),
        max_update_repeats: rules.max_update_repeats,
    }
}

/// How a completed turn ends the loop, if it does: proposals wait for the client; outside
/// a panic loop, a refusal, a repetition or a halt for want of progress stops it and a
/// summary completes it.
fn judge(
    report: TurnReport,
    panicking: bool,
    progress: &mut ProgressTracker,
    repetition: &mut RepetitionTracker,
) -> Option<LoopOutcome> {
    if !report.proposed.is_empty() {
        return Some(LoopOutcome::Proposed {
            turn: report.turn,
            summarized: report.summary.is_some() && !report.status_healed,
            proposed: report.proposed.into_iter().map(ProposedRow::from).collect(),
        });
    }
    if panicking {
        return None;
    }
    if report.refused {
        tracing::info!("loop stopped: the model refused");
        return Some(LoopOutcome::Ended(Ending::Refused));
    }
    if let Verdict::Halt(reason) = repetition.assess(&report.action_calls, &report.write_calls) {
        tracing::info!(reason = reason.code(), "loop stopped: repetition");
        return Some(LoopOutcome::Ended(Ending::Stalled));
    }
    match progress.assess(report.signals()) {
        Verdict::Continue => None,
        Verdict::Complete => Some(LoopOutcome::Ended(Ending::Done)),
        Verdict::Halt(reason) => {
            tracing::info!(reason = reason.code(), "loop stopped: no progress");
            Some(LoopOutcome::Ended(Ending::Stalled))
        }
    }
}

/// Carries out an overflow decision once the reflectors had their say before the panic:
/// queue the panic loop and the retry (archiving the prompt that did not fit meanwhile), or
/// fail with what does not fit.
async fn enter_panic(
    agent: &AgentContext,
    reflector: &mut Option<Reflector>,
    decision: OverflowDecision,
    prompt_path: Option<String>,
) -> Result<LoopOutcome, LoopError> {
    if let Some(reflector) = reflector.as_mut() {
        reflector.reflect(agent, Moment::BeforePanic).await;
    }
    let plan = match decision {
        OverflowDecision::HardFail(failure) => {
            return Ok(LoopOutcome::Overflow {
                error: failure.to_string(),
            })
        }
        OverflowDecision::EnterPanic(plan) => plan,
    };
    tracing::info!(
        target_tokens = plan.target.get(),
        to_free = plan.to_free.get(),
        "context overflow: entering panic mode"
    );
    let retry = agent
        .db
        .call(move |conn| {
            if let Some(path) = prompt_path {
                entries::set_fidelity(
                    conn,
                    plan.panic_loop.run_id,
                    &Selector::Path(path),
                    Fidelity::Archive,
                )?;
            }
            loops::enqueue_loop(conn, &plan.panic_loop)?;
            loops::enqueue_loop(conn, &plan.retry_loop)
        })
        .await?;
    Ok(LoopOutcome::Panicked { retry: retry.id })
}

/// A panic loop reached its target: its own prompt leaves the context; the retry runs next.
async fn end_panic(agent: &AgentContext, lp: &LoopRow) -> Result<LoopOutcome, LoopError> {
    archive_loop_prompts(agent, lp).await?;
    Ok(LoopOutcome::Ended(Ending::Done))
}

/// A panic loop gave up: the pending retry is dropped with the same error.
async fn give_up_panic(
    agent: &AgentContext,
    lp: &LoopRow,
    error: String,
) -> Result<LoopOutcome, LoopError> {
    archive_loop_prompts(agent, lp).await?;
    let run_id = lp.run_id;
    let record = serde_json::json!({"status": RunStatus::TooLarge, "error": error});
    let retry = agent
        .db
        .call(move |conn| {
            let retry = loops::pending_loops(conn, run_id)?
                .into_iter()
                .find(|pending| pending.priority == LoopPriority::Retry);
            if let Some(retry) = &retry {
                loops::drop_loop(conn, retry.id, Some(&record))?;
            }
            Ok(retry.map(|retry| retry.id))
        })
        .await?;
    Ok(LoopOutcome::RecoveryFailed { error, retry })
}

/// Archives the prompt entries a loop wrote (a panic loop's instructions).
async fn archive_loop_prompts(agent: &AgentContext, lp: &LoopRow) -> Result<(), LoopError> {
    let run_id = lp.run_id;
    let loop_id = lp.id;
    agent
        .db
        .call(move |conn| entries::archive_loop_prompts(conn, run_id, loop_id))
        .await?;
    Ok(())
}

/// What a loop starts from, read as it marks the run running.
struct LoopStart {
    run: RunRow,
    /// The project's people have command rules.
    command_rules: bool,
    project_name: String,
    project_root: PathBuf,
    model_alias: String,
    /// The catalogue's row for `model_alias`, if there is one.
    model: Option<ModelRow>,
    /// The run-wide number of the run's latest turn (0 before its first).
    latest_turn: i32,
    /// A paused loop's iteration and the turn it takes up again.
    paused: Option<(u32, TurnRow)>,
}

/// The provider model id and the effective context size: the catalogue's length (or one
/// discovered now and stored), capped by the run's limit.
async fn resolve_model(
    agent: &AgentContext,
    run: &RunRow,
    model: ModelRow,
    cancel: &LlmCancel,
) -> Result<(String, i64), LoopError> {
    let context = match model.context_length {
        Some(length) => i64::from(length),
        None => {
            let discovered = agent.llm.discover_context(&model.actual, cancel).await?;
            let stored = i32::try_from(discovered).unwrap_or(i32::MAX);
            let alias = model.alias.clone();
            agent
                .db
                .call(move |conn| models::set_context_length(conn, &alias, stored))
                .await?;
            i64::from(discovered)
        }
    };
    let context = match run.context_limit {
        Some(limit) => context.min(i64::from(limit)),
        None => context,
    };
    Ok((model.actual, context))
}

/// The loop that takes in a message injected into `lp` as it ended: like `lp`, with no
/// prompt of its own (the message is the run's latest prompt), queued by nobody's request
/// but the injection's, which was answered at once.
fn continuation_of(lp: &LoopRow) -> LoopEnqueue {
    LoopEnqueue {
        run_id: lp.run_id,
        mode: lp.mode,
        model: lp.model.clone(),
        prompt: String::new(),
        priority: LoopPriority::Normal,
        config: LoopConfig::of(&lp.config).to_json(),
        requested_by: lp.requested_by.clone(),
        requested_on: lp.requested_on,
    }
}

/// Stores `error://<loop sequence>` with `status` so the client (and the model, in the
/// run's next loop) can read why the loop failed or stopped.
async fn record_error(agent: &AgentContext, lp: &LoopRow, message: &str, status: EntryStatus) {
    let path = format!("error://{}", lp.sequence);
    let upsert = EntryUpsertForm {
        status,
        ..EntryUpsertForm::new(lp.run_id, Some(lp.id), 0, path, message)
    };
    let run_id: RunId = lp.run_id;
    if let Err(error) = agent
        .db
        .call(move |conn| entries::write_entry(conn, &upsert))
        .await
    {
        tracing::error!(run.id = %run_id, %error, "cannot record the loop's error");
    }
}
