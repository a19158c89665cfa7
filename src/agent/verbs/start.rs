//! `start` (`ask`, `act`): a person's prompt for a new run, a fork, or a run they continue.
//! Stages: *cap* (refused when a spend cap it would count against is reached), *admit*
//! (under the bounds on active loops: it may wait its turn), *choose* (one unit of work:
//! the run forked, created or found — blocked by pending proposals, then nothing is queued
//! — and the loop inserted), *unpause* (a run paused at a spend cap whose caps the prompt
//! replaced: its loop taken up again first, unless a cap still stands — then this prompt is
//! answered paused and waits queued behind it), *announce* (`RunCreated` to the plugins)
//! and *proceed* (the loop's outcome awaited, its place among the active loops held until it
//! ends).

use crate::agent::admission::Asking;
use crate::agent::loop_config::LoopConfig;
use crate::agent::outcome::ProposedRow;
use crate::agent::paused;
use crate::agent::verbs::announce::{acted, announce};
use crate::agent::verbs::{queue, Answer, VerbError};
use crate::agent::AgentContext;
use crate::db::enums::{LoopMode, LoopPriority};
use crate::db::ids::{LoopId, ProjectId, RunId};
use crate::db::models::run::{LoopEnqueue, RunConfigUpdateForm, RunCreateForm, RunRow};
use crate::db::queries::run_events::EventBounds;
use crate::db::queries::{entries, runs, usage};
use crate::db::{Conn, DbError};
use crate::hub::notifications::{Act, RunActed};
use crate::llm::{spender, Spender};
use crate::plugins::events::Event;
use crate::usage::Limits;

/// A prompt, its settings checked.
pub(crate) struct Start {
    pub project: ProjectId,
    /// The project's name, as a refusal shows it.
    pub project_name: String,
    /// Whom the per-person bound on loops counts it against.
    pub limit_key: String,
    /// Who asks (`None`: the operator).
    pub person: Option<String>,
    /// The connection the prompt came on (`Instance::connection_key`).
    pub connection: Option<i64>,
    pub mode: LoopMode,
    pub model: String,
    pub prompt: String,
    /// The run it continues or forks (`None`: a new run).
    pub existing: Option<RunRow>,
    pub fork: bool,
    /// The settings a fork or a new run gets.
    pub settings: RunConfigUpdateForm,
    /// The run's own caps, checked against the caller's (`None`: unchanged).
    pub caps: Option<Limits>,
    /// The same caps as the run keeps them (JSON, `CapLimits`).
    pub stored_caps: Option<String>,
    /// The loop's flags.
    pub config: LoopConfig,
    /// Told the run once the loop is queued on it (the asker's presence in it).
    pub queued: Box<dyn FnOnce(RunId) + Send>,
}

/// Runs `start`'s prompt.
pub(crate) async fn start(agent: &AgentContext, start: Start) -> Result<Answer, VerbError> {
    let continued = start
        .existing
        .as_ref()
        .filter(|_| !start.fork)
        .map(|run| run.id);
    refuse_at_cap(agent, &start, continued).await?;
    // New caps of a run paused at one may free its paused loop, which runs before this one.
    let recapped = continued
        .filter(|_| start.caps.is_some())
        .map(|_| start.person.clone());
    let admitted = agent
        .admission
        .admit(Asking {
            project: start.project,
            project_name: &start.project_name,
            limit_key: &start.limit_key,
            person: start.person.as_deref(),
        })
        .await?;
    let instance = agent.runs.instance().id().to_owned();
    let (project, mode) = (start.project, start.mode);
    let (choice, queued_on) = RunChoice::of(start, agent.db.event_bounds());
    let chosen = agent
        .db
        .call(move |conn| choice.choose(conn, &instance))
        .await?;
    let (run, queued) = match chosen {
        Chosen::Queued {
            run,
            loop_id,
            created,
        } => {
            if let Some(created) = created {
                agent.plugins.emit(Event::RunCreated {
                    run,
                    alias: &created.alias,
                    project,
                    forked_from: created.forked_from.as_deref(),
                });
            }
            queued_on(run);
            (run, loop_id)
        }
        Chosen::Blocked { alias, proposed } => return Ok(Answer::Blocked { alias, proposed }),
    };
    if let Some(person) = recapped {
        paused::resume_run(agent, run, person).await?;
    }
    let outcome = agent.runs.await_loop(agent, run, queued).await;
    let answer = queue::answer(agent, run, admitted.until(outcome)).await?;
    if let Answer::Ended { alias, outcome } = &answer {
        agent.plugins.emit(Event::AskCompleted {
            mode,
            project,
            run: alias,
            status: outcome.status(),
        });
    }
    Ok(answer)
}

/// Refuses a prompt when a cap it would count against is reached: those of the run it
/// continues (`continued`, its caps replaced by the prompt's when given) and of the run's
/// person, or of the caller for a new run or a fork, and of the project and the server.
async fn refuse_at_cap(
    agent: &AgentContext,
    start: &Start,
    continued: Option<RunId>,
) -> Result<(), VerbError> {
    let spending = agent.llm.spending().clone();
    let now = spending.clock().now();
    let caller = Spender {
        run: None,
        person: start.person.clone(),
        project: (start.project, start.project_name.clone()),
    };
    let caps = start.caps.clone();
    let reached = agent
        .db
        .read(move |conn| {
            let mut counted = match continued {
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
        Some(cap) => Err(VerbError::CapReached(Box::new(cap))),
        None => Ok(()),
    }
}

/// Which run a prompt goes to — a fork of the run it names, that run, or a new one — and
/// its loop.
struct RunChoice {
    existing: Option<RunRow>,
    fork: bool,
    settings: RunConfigUpdateForm,
    create: RunCreateForm,
    person: Option<String>,
    connection: Option<i64>,
    caps: Option<String>,
    /// What the event log keeps, for the `run/action` of a run prompted again.
    bounds: EventBounds,
    /// The loop's mode, model, flags and prompt.
    mode: LoopMode,
    model: String,
    config: LoopConfig,
    prompt: String,
}

/// What the choose stage's unit of work did.
enum Chosen {
    /// The loop is queued on the run.
    Queued {
        run: RunId,
        loop_id: LoopId,
        /// Set when the run is new (or a fork).
        created: Option<NewRun>,
    },
    /// The run has pending proposals: nothing is queued.
    Blocked {
        alias: String,
        proposed: Vec<ProposedRow>,
    },
}

/// A run a prompt created.
struct NewRun {
    alias: String,
    /// The alias of the run it forks.
    forked_from: Option<String>,
}

impl RunChoice {
    /// The choice of `start`'s run, and what is told the run its loop is queued on.
    fn of(start: Start, bounds: EventBounds) -> (RunChoice, Box<dyn FnOnce(RunId) + Send>) {
        let create = RunCreateForm {
            project_id: start.project,
            model: start.model.clone(),
            temperature: start.settings.temperature,
            persona: start.settings.persona.clone(),
            context_limit: start.settings.context_limit,
            created_by: start.person.clone(),
        };
        let choice = RunChoice {
            existing: start.existing,
            fork: start.fork,
            settings: start.settings,
            create,
            person: start.person,
            connection: start.connection,
            caps: start.stored_caps,
            bounds,
            mode: start.mode,
            model: start.model,
            config: start.config,
            prompt: start.prompt,
        };
        (choice, start.queued)
    }

    /// The choose stage's unit of work: the run forked, created or found blocked, its own
    /// caps set, and the loop inserted for `instance` to wait for.
    fn choose(mut self, conn: &mut Conn, instance: &str) -> Result<Chosen, DbError> {
        let caps = self.caps.take();
        let (mode, model, prompt) = (
            self.mode,
            self.model.clone(),
            std::mem::take(&mut self.prompt),
        );
        let (config, requested_by) = (self.config.to_json(), self.person.clone());
        let requested_on = self.connection;
        let bounds = self.bounds;
        let (run, created, continued) = match self.run(conn)? {
            Ok(chosen) => chosen,
            Err(blocked) => return Ok(blocked),
        };
        if let Some(caps) = caps {
            usage::set_run_caps(conn, run, &caps)?;
        }
        let enqueue = LoopEnqueue {
            run_id: run,
            mode,
            model: Some(model),
            config,
            prompt,
            priority: LoopPriority::Normal,
            requested_by,
            requested_on,
        };
        if let Some(continued) = continued {
            let told = RunActed {
                message: Some(enqueue.prompt.clone()),
                ..acted(&continued, Act::Prompt, enqueue.requested_by.clone())
            };
            announce(conn, &bounds, &continued, told)?;
        }
        let loop_id = queue::insert(conn, &enqueue, instance)?;
        Ok(Chosen::Queued {
            run,
            loop_id,
            created,
        })
    }

    /// The run the loop goes to — new, or the one it continues —, or the blocked answer.
    #[allow(clippy::type_complexity)]
    fn run(
        self,
        conn: &mut Conn,
    ) -> Result<Result<(RunId, Option<NewRun>, Option<RunRow>), Chosen>, DbError> {
        let now = runs::now_ms();
        let run = match self.existing {
            Some(parent) if self.fork => {
                let fork = runs::fork_run(conn, parent.id, self.person, now)?;
                let fork = runs::update_run_config(conn, fork.id, &self.settings)?;
                let created = NewRun {
                    alias: fork.alias,
                    forked_from: Some(parent.alias),
                };
                return Ok(Ok((fork.id, Some(created), None)));
            }
            Some(run) => run,
            None => {
                let run = runs::create_run(conn, &self.create, now)?;
                let created = NewRun {
                    alias: run.alias,
                    forked_from: None,
                };
                return Ok(Ok((run.id, Some(created), None)));
            }
        };
        let proposed = entries::unresolved(conn, run.id)?;
        if !proposed.is_empty() {
            return Ok(Err(Chosen::Blocked {
                alias: run.alias,
                proposed: proposed.into_iter().map(ProposedRow::from).collect(),
            }));
        }
        Ok(Ok((run.id, None, Some(run))))
    }
}
