//! `resolve` (`run/resolve`): a person's accept, reject or error of one pending proposal,
//! then what the run does once none is pending (seed SPEC §5.3, PROTOCOL Part A.6): a
//! rejection stops it, an acceptance after the model summarized completes it, otherwise a
//! loop continues it with the proposing loop's mode and flags.
//!
//! Stages: *commands* (where an accepted command runs: on the server when the project says so,
//! and nothing of the run is resolved while one of its commands runs there), *find* (the
//! proposal, pending: else the clear answer why not; an accepted command's `always` read
//! into the pattern of the rule it makes, `agent::allow`), *claim* (an acceptance whose tool
//! works outside the store — a command on the server, an MCP or plugin call — claims the
//! proposal in the store first, under the run's lease, so that no other request carries it
//! out again), *gather* (that work), *record* (one unit of work, [`record`]: the resolution,
//! who made it, and the run's next move on the state machine, its continuation queued
//! there), *announce* (every client told, `hub`) and *proceed* (the continuation's outcome
//! awaited, or the run's answer).

mod record;
mod standing;

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::agent::allow::{Always, RuleError};
use crate::agent::outcome::{Ending, LoopOutcome, ProposedRow};
use crate::agent::verbs::{queue, Answer, VerbError};
use crate::agent::AgentContext;
use crate::config::{ApplyEdits, RunCommands};
use crate::db::ids::RunId;
use crate::db::models::entry::EntryRow;
use crate::db::models::run::RunRow;
use crate::db::queries::{instances, proposals};
use crate::db::Conn;
use crate::db::DbError;
use crate::plugins::bundled::tools::command_proposal::RanOnServer;
use crate::plugins::engine::resolve::{acceptance, gathered, Resolution};
use crate::plugins::gather::{Accepting, RunPlace};
use crate::sandbox::policy::{CommandPolicy, ProjectChoice};
use crate::sandbox::runner::CommandPlace;

use record::{Decision, Recording};
use standing::{not_pending, proposal_state};

/// One resolution: the proposal at `path`, what the client did, and its output (the
/// command's, the person's answer, a reason).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Resolving {
    pub path: String,
    pub action: Resolution,
    pub output: Option<String>,
    /// An accepted command allowed always from now on (`agent::allow`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub always: Option<Always>,
}

/// `person`'s `resolving` of a proposal of `run`, which is at `place`, sent on `connection`
/// (`Instance::connection_key`).
pub(crate) async fn resolve(
    agent: &AgentContext,
    run: RunRow,
    resolving: Resolving,
    person: Option<String>,
    connection: Option<i64>,
    place: &RunPlace,
) -> Result<Answer, VerbError> {
    let root = place.root.as_path();
    let policy = command_policy(agent, &run, &resolving).await?;
    let proposal = find(agent, &run, &resolving.path).await?;
    let always = match &resolving.always {
        Some(always) => always_pattern(agent, &proposal, resolving.action, always)?,
        None => None,
    };
    let commands = policy.as_ref().map(|policy| CommandPlace {
        commands: &agent.commands,
        run: run.id,
        alias: &run.alias,
        project: run.project_id,
        root,
        policy,
    });
    let accepting = Accepting {
        proposal: &proposal,
        place,
        commands,
    };
    let half = match resolving.action {
        Resolution::Accept => acceptance(&agent.plugins, &accepting),
        Resolution::Reject | Resolution::Error => None,
    };
    let claimed = half.is_some();
    if claimed {
        claim(agent, &run, &proposal.path, person.as_deref()).await?;
    }
    let gathered = gathered(half).await;
    if let Some(Err(error)) = gathered.any::<RanOnServer>() {
        let refused = VerbError::Refused(error.to_string());
        let run_id = run.id;
        let (path, instance) = (proposal.path.clone(), instance_of(agent));
        agent
            .db
            .call(move |conn| let_go(conn, run_id, &path, &instance))
            .await?;
        return Err(refused);
    }
    let applies_edits = agent.settings.agent.apply_edits == ApplyEdits::Server || policy.is_some();
    let recording = Recording {
        run: run.clone(),
        path: resolving.path,
        action: resolving.action,
        output: resolving.output,
        always,
        person,
        connection,
        claimed,
        instance: instance_of(agent),
        bounds: agent.db.event_bounds(),
        // A project whose commands run here has its edits applied here too: its clients
        // may have no copy of its files.
        disk_root: applies_edits.then(|| root.to_path_buf()),
        gathered,
        plugins: Arc::clone(&agent.plugins),
    };
    let decision = agent.db.call(move |conn| recording.record(conn)).await??;
    proceed(agent, &run, decision).await
}

/// The project's command policy when its accepted commands run on the server (`None`: its
/// clients run them); refused while a command of the run runs here and `resolving` is not
/// for it.
async fn command_policy(
    agent: &AgentContext,
    run: &RunRow,
    resolving: &Resolving,
) -> Result<Option<CommandPolicy>, VerbError> {
    let policy = ProjectChoice::load(&agent.db, run.project_id)
        .await?
        .policy(&agent.settings.commands);
    if policy.commands != RunCommands::Server {
        return Ok(None);
    }
    match agent.commands.running(run.id) {
        Some(running) if running != resolving.path => Err(VerbError::CommandRunning { running }),
        _ => Ok(Some(policy)),
    }
}

/// The pending proposal at `path` of `run` that no other request is carrying out, or why
/// it is not one.
async fn find(agent: &AgentContext, run: &RunRow, path: &str) -> Result<EntryRow, VerbError> {
    let (run_id, owned) = (run.id, path.to_owned());
    let entry = agent
        .db
        .read(move |conn| proposals::pending(conn, run_id, &owned, false))
        .await?;
    match entry {
        Some(entry) => Ok(entry),
        None => {
            let (run_id, owned) = (run.id, path.to_owned());
            let state = agent
                .db
                .read(move |conn| proposal_state(conn, run_id, &owned))
                .await?;
            Err(not_pending(run, path, state))
        }
    }
}

/// The pattern of the rule `always` makes as `proposal` is resolved so: only a command the
/// person allowed makes one (accepted, or reported failed when it ran and failed).
fn always_pattern(
    agent: &AgentContext,
    proposal: &EntryRow,
    action: Resolution,
    always: &Always,
) -> Result<Option<String>, VerbError> {
    if *always == Always::Default(false) {
        return Ok(None);
    }
    if action == Resolution::Reject {
        return Err(RuleError::NotAccepted(action.as_str().to_owned()).into());
    }
    let command = proposal
        .scheme
        .as_deref()
        .and_then(|scheme| agent.plugins.get(scheme))
        .and_then(|tool| tool.command_line(&proposal.body, &proposal.attributes));
    match command {
        Some(command) => Ok(always.pattern(&command)?),
        None => Err(RuleError::NotACommand(proposal.path.clone()).into()),
    }
}

/// Claims the proposal at `path` for `person`'s acceptance, and the run's lease while it is
/// carried out (so that calls for the run another instance receives come here).
async fn claim(
    agent: &AgentContext,
    run: &RunRow,
    path: &str,
    person: Option<&str>,
) -> Result<(), VerbError> {
    let (run_id, instance) = (run.id, instance_of(agent));
    let (owned, person) = (path.to_owned(), person.map(str::to_owned));
    let claimed = agent
        .db
        .call(move |conn| {
            if !proposals::claim(conn, run_id, &owned, &instance, person.as_deref())? {
                return proposal_state(conn, run_id, &owned).map(Some);
            }
            instances::hold(conn, run_id, &instance)?;
            Ok(None)
        })
        .await?;
    match claimed {
        None => Ok(()),
        Some(state) => Err(not_pending(run, path, state)),
    }
}

/// Gives back a claim that came to nothing, and the run's lease.
fn let_go(conn: &mut Conn, run: RunId, path: &str, instance: &str) -> Result<(), DbError> {
    proposals::release(conn, run, path)?;
    instances::let_go(conn, run, instance)
}

/// What the run does now.
async fn proceed(
    agent: &AgentContext,
    run: &RunRow,
    decision: Decision,
) -> Result<Answer, VerbError> {
    let alias = run.alias.clone();
    match decision {
        Decision::StillPending(proposed) => Ok(Answer::Blocked {
            alias,
            proposed: proposed.into_iter().map(ProposedRow::from).collect(),
        }),
        Decision::Completed(ending) => Ok(Answer::Ended {
            alias,
            outcome: LoopOutcome::Ended(ending),
        }),
        Decision::Aborted => Ok(Answer::Ended {
            alias,
            outcome: LoopOutcome::Ended(Ending::Aborted),
        }),
        Decision::Resumed(continuation) => queue::outcome(agent, run.id, continuation).await,
    }
}

fn instance_of(agent: &AgentContext) -> String {
    agent.runs.instance().id().to_owned()
}
