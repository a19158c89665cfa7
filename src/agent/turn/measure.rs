//! The first stage of a turn: the loop's tools for this window, the packet assembled from
//! the store, and its size against the window. A packet that does not fit ends the turn
//! before any model call (413: a panic loop frees room); in a panic loop, the panic's own
//! progress decides whether the turn goes on.

use crate::agent::error::LoopError;
use crate::agent::AgentContext;
use crate::budget::{
    check_ceiling, CalibratedMeasure, CeilingVerdict, ContextWindow, EstimatedTokens, PanicStep,
};
use crate::context::{Packet, TokenMath};
use crate::db::ids::ProjectId;
use crate::db::models::run::TurnRow;
use crate::llm::RunCaps;
use crate::plugins::filters::{BudgetEnforce, Measuring};
use crate::plugins::policy::ToolPolicy;

use super::prepare::{estimate_of, prepare_packet, PreparedPacket, PromptWrite};
use super::{TurnEnd, TurnInput};

/// A turn whose packet fits: what the later stages need of it.
pub(super) struct MeasuredTurn {
    pub row: TurnRow,
    pub packet: Packet,
    /// The packet's calibrated size.
    pub measure: CalibratedMeasure,
    /// The packet's estimate, which the provider's usage calibrates.
    pub estimate: EstimatedTokens,
    pub window: ContextWindow,
    pub policy: ToolPolicy,
    /// The run's name, for notifications.
    pub alias: String,
    pub project: ProjectId,
    /// What the run's row says of its own caps, for the call's admission.
    pub caps: RunCaps,
}

/// Whether the turn goes on to the model.
pub(super) enum Measured {
    Fits(MeasuredTurn),
    Ends(TurnEnd),
}

/// `window` after the `budget.enforce` filters, which may only lower it (an unknown window
/// is no limit until a filter gives one; a window is at least 1 token).
async fn enforced(
    agent: &AgentContext,
    window: ContextWindow,
    measuring: Measuring,
) -> ContextWindow {
    if !agent.plugins.has_filters::<BudgetEnforce>() {
        return window;
    }
    let given = if window.is_unknown() {
        u64::MAX
    } else {
        window.limit().get()
    };
    let mut limit = given;
    agent
        .plugins
        .filter::<BudgetEnforce>(&mut limit, &measuring)
        .await;
    match limit.clamp(1, given) {
        u64::MAX => window,
        lowered => ContextWindow::new(lowered),
    }
}

/// Assembles the turn's packet and measures it against the window.
pub(super) async fn measure(
    agent: &AgentContext,
    input: &mut TurnInput<'_>,
) -> Result<Measured, LoopError> {
    let lp = input.loop_row;
    let policy = agent.loop_policy(input.run_id, input.project_name, input.config, lp.mode);
    let policy = agent
        .plugins
        .fitted(policy, u64::try_from(input.context_size).unwrap_or(0));
    let paused_turn = input.paused_turn.take();
    let prompt = (input.iteration == 1 && !lp.prompt.is_empty() && paused_turn.is_none())
        .then(|| lp.prompt.clone());
    let first_prompt = prompt.clone().map(PromptWrite::New);
    let PreparedPacket {
        turn: row,
        mut packet,
        measure,
        alias,
        project,
        caps,
    } = prepare_packet(agent, input, paused_turn, first_prompt, policy).await?;
    let turn = row.sequence;
    tracing::Span::current().record("turn.seq", turn);
    let mut estimate = estimate_of(&packet);
    let window = ContextWindow::new(u64::try_from(input.context_size).unwrap_or(0));
    let measuring = Measuring {
        project,
        run: input.run_id,
        turn,
        measured: measure.calibrated.get(),
    };
    let window = enforced(agent, window, measuring).await;
    let tokens = TokenMath::new(agent.settings.tokens.divisor);
    let iteration = input.iteration;
    match input.panic.as_deref_mut() {
        Some(panic) => {
            let context = CalibratedMeasure {
                calibrated: measure.calibrated.saturating_sub(
                    measure
                        .calibration
                        .apply(tokens.estimate_packet([panic.prompt.as_str()])),
                ),
                calibration: measure.calibration,
            };
            match panic.tracker.observe(context) {
                PanicStep::Freed { .. } => return Ok(Measured::Ends(TurnEnd::Freed)),
                PanicStep::GiveUp(failure) => return Ok(Measured::Ends(TurnEnd::GaveUp(failure))),
                PanicStep::Continue { continuation, .. } if iteration > 1 => {
                    panic.prompt = continuation.clone();
                    let rewrite = Some(PromptWrite::Replace(continuation));
                    packet = prepare_packet(agent, input, Some(row.clone()), rewrite, policy)
                        .await?
                        .packet;
                    estimate = estimate_of(&packet);
                }
                PanicStep::Continue { .. } => {}
            }
        }
        None => {
            if let CeilingVerdict::Overflow(overflow) = check_ceiling(measure.calibrated, window) {
                let incoming = tokens.estimate_packet([lp.prompt.as_str()]);
                return Ok(Measured::Ends(TurnEnd::Overflow {
                    overflow,
                    incoming_prompt: measure.calibration.apply(incoming),
                    prompt_path: prompt.map(|_| format!("prompt://{turn}")),
                    calibration: measure.calibration,
                }));
            }
        }
    }
    Ok(Measured::Fits(MeasuredTurn {
        row,
        packet,
        measure,
        estimate,
        window,
        policy,
        alias,
        project,
        caps,
    }))
}
