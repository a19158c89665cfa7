//! One turn, in stages: measure (`measure`: the packet assembled from the store, written
//! prompt and all, against the window), call (`call`: the model, its reply parsed), gather
//! (`gather`, here: what the commands need: the tools' gather halves, body searches and
//! edits), apply (`apply`: one unit of work: the audit copies (`audit`), the commands
//! recorded and run, the status healed) and publish (`agent::state`: the clients told the
//! run's state).

use std::time::Instant;

use tracing::Instrument;

use crate::agent::error::LoopError;
use crate::agent::state;
use crate::agent::{AgentContext, Replying};
use crate::budget::{
    BudgetGuard, CalibratedTokens, Calibration, Overflow, PanicFailure, PanicGate, WriteGate,
};
use crate::db::models::entry::UnresolvedRow;
use crate::hedberg::WorkLimit;
use crate::llm::CancellationToken;
use crate::parser::healer::{ToolCall, TurnSignals};
use crate::parser::Command;
use crate::plugins::engine::dispatch::{recordables, PreparedWork};
use crate::plugins::events::Event;
use crate::plugins::filters::Recording;
use crate::plugins::policy::ToolPolicy;
use crate::plugins::tool::ToolError;
use crate::telemetry::TRACE;
use apply::{apply, Prepared};
use audit::TurnAudit;
use call::{call_model, Reply};
use measure::{measure, Measured, MeasuredTurn};
use state::TurnFacts;

mod apply;
mod audit;
mod call;
pub(crate) mod input;
mod latest;
mod measure;
mod prepare;

pub(crate) use audit::LatestSystemCopy;
pub(crate) use input::{PanicState, TurnInput};
pub(crate) use latest::LatestWritten;
pub(crate) use prepare::prompt_attributes;

/// What the loop needs to decide whether to go on.
#[derive(Debug, Default)]
pub(crate) struct TurnReport {
    /// The run-wide turn number.
    pub turn: i32,
    /// Proposals pending after this turn.
    pub proposed: Vec<UnresolvedRow>,
    /// Actions of this turn, for cycle detection.
    pub action_calls: Vec<ToolCall>,
    /// Writes of this turn, for cycle detection.
    pub write_calls: Vec<ToolCall>,
    /// Summary text (explicit or healed).
    pub summary: Option<String>,
    /// Update text (explicit or healed).
    pub update: Option<String>,
    /// The status was healed from plain text.
    pub status_healed: bool,
    /// The turn wrote something.
    pub has_writes: bool,
    /// The turn read something.
    pub has_reads: bool,
    /// The model refused (the provider said so): the loop ends.
    pub refused: bool,
}

impl TurnReport {
    /// The progress check's view of this turn.
    pub(crate) fn signals(&self) -> TurnSignals<'_> {
        TurnSignals {
            summary: self.summary.as_deref(),
            update: self.update.as_deref(),
            status_healed: self.status_healed,
            has_writes: self.has_writes,
            has_reads: self.has_reads,
        }
    }
}

/// How a turn ended.
#[derive(Debug)]
pub(crate) enum TurnEnd {
    /// The packet does not fit the window; the LLM was not called.
    Overflow {
        overflow: Overflow,
        /// The calibrated size of the loop's prompt.
        incoming_prompt: CalibratedTokens,
        /// The prompt entry this turn wrote, to archive while a panic loop frees room.
        prompt_path: Option<String>,
        /// The calibration of the measure.
        calibration: Calibration,
    },
    /// A panic loop reached its target; the LLM was not called.
    Freed,
    /// A panic loop gave up.
    GaveUp(PanicFailure),
    /// The model answered and its commands ran.
    Completed(TurnReport),
}

pub(crate) async fn execute_turn(
    agent: &AgentContext,
    input: TurnInput<'_>,
    cancel: &CancellationToken,
) -> Result<TurnEnd, LoopError> {
    let span =
        tracing::info_span!("turn", run.id = %input.run_id, turn.seq = tracing::field::Empty);
    execute_numbered_turn(agent, input, cancel)
        .instrument(span)
        .await
}

async fn execute_numbered_turn(
    agent: &AgentContext,
    mut input: TurnInput<'_>,
    cancel: &CancellationToken,
) -> Result<TurnEnd, LoopError> {
    let started = Instant::now();
    let measured = match measure(agent, &mut input)
        .instrument(tracing::info_span!(target: TRACE, "measure"))
        .await?
    {
        Measured::Fits(measured) => measured,
        Measured::Ends(end) => return Ok(end),
    };
    let preparation_ms = started.elapsed().as_millis() as u64;
    let Reply {
        response,
        parsed,
        llm_ms,
    } = call_model(agent, &input, &measured, cancel)
        .instrument(tracing::info_span!(target: TRACE, "call"))
        .await?;
    let MeasuredTurn {
        row,
        packet,
        measure,
        window,
        policy,
        alias,
        project,
        ..
    } = measured;
    let turn = row.sequence;
    let audit = TurnAudit::of(
        &row,
        &packet,
        &response,
        &parsed.unparsed,
        &input.latest.system,
    );
    let dispatch_started = Instant::now();
    let gate: Box<dyn WriteGate> = if input.panic.is_some() {
        Box::new(PanicGate)
    } else {
        Box::new(BudgetGuard::in_window(window, measure))
    };
    let recording = Recording {
        run: input.run_id,
        turn: Some(turn),
    };
    let commands = recordables(&agent.plugins, parsed.commands, recording).await;
    let runnable: Vec<Command> = commands
        .iter()
        .filter(|recordable| recordable.refusal.is_none())
        .map(|recordable| recordable.command.clone())
        .collect();
    let work = gather(agent, &input, &policy, &runnable, cancel)
        .instrument(tracing::info_span!(target: TRACE, "gather"))
        .await?;
    let context_tokens = audit.context_tokens();
    let prepared = Prepared {
        commands,
        work,
        audit,
    };
    let telling = state::Telling::new(
        agent,
        TurnFacts {
            run: input.run_id,
            project,
            alias: &alias,
            turn,
        },
        &input,
        &response,
        &packet,
        context_tokens,
    );
    let (mut report, mut told) = apply(
        agent,
        &input,
        turn,
        policy,
        &response.content,
        prepared,
        gate,
        telling,
    )
    .instrument(tracing::info_span!(target: TRACE, "apply"))
    .await?;
    input.latest.system.note(turn, &packet.system);
    input.carried.keep(told.carried());
    let dispatch_ms = dispatch_started.elapsed().as_millis() as u64;
    report.refused = response.refusal.is_some();
    told.publish(agent)
        .instrument(tracing::info_span!(target: TRACE, "publish"))
        .await;
    agent.plugins.emit(Event::TurnCompleted {
        run: input.run_id,
        turn,
        proposed: report.proposed.len(),
    });
    tracing::info!(
        preparation_ms,
        llm_ms,
        dispatch_ms,
        prompt_tokens = response.usage.prompt_tokens,
        completion_tokens = response.usage.completion_tokens,
        "turn done"
    );
    Ok(TurnEnd::Completed(report))
}

/// What the reply's commands need, obtained before the unit of work that records them:
/// the body searches and edits, and what the tools' gather halves obtain from outside the
/// store. An abort drops them and ends the turn.
async fn gather(
    agent: &AgentContext,
    input: &TurnInput<'_>,
    policy: &ToolPolicy,
    commands: &[Command],
    cancel: &CancellationToken,
) -> Result<PreparedWork, LoopError> {
    let replying = Replying {
        run: input.run_id,
        loop_row: Some(input.loop_row),
        policy,
        cancel,
    };
    let work = agent.prepare_work(replying, commands).await;
    if cancel.is_cancelled() {
        return Err(LoopError::Tool(ToolError::WorkLimit(WorkLimit::Cancelled)));
    }
    Ok(work)
}
