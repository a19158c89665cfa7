//! The write gate of the writers outside a turn: a client's tool calls and the project scan
//! (with its constraint promotions). They pass the same [`BudgetGuard`] a turn's commands
//! do, under the run's window, started from the run's packet as it stands: its fixed part
//! (instructions, tool docs, empty sections) assembled now, plus what the run's visible
//! entries cost, calibrated as the run's turns are. A run whose window is not known yet
//! (no turn has discovered it and the run sets no limit) is not gated.

use crate::agent::AgentContext;
use crate::budget::{
    BudgetGuard, CalibratedMeasure, Calibration, CalibrationOf, ContextWindow, EstimatedTokens,
    TokenMath,
};
use crate::context::packet::Packet;
use crate::db::ids::RunId;
use crate::db::models::run::RunRow;
use crate::db::queries::{context, models};
use crate::db::{Conn, DbError};
use crate::plugins::assembly::{AssemblyInput, BudgetFigures};
use crate::plugins::policy::ToolPolicy;

/// What a unit of work needs to build a run's guard: the window, the fixed part of the
/// run's packet and the run's calibration.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RunBudget {
    run: RunId,
    window: ContextWindow,
    fixed: EstimatedTokens,
    calibration: Calibration,
}

impl RunBudget {
    /// The budget of `run` for writers under `policy`, with the window the run's model and
    /// limit give.
    pub(crate) async fn of(
        agent: &AgentContext,
        run: &RunRow,
        policy: ToolPolicy,
    ) -> Result<RunBudget, DbError> {
        let alias = run.model.clone().unwrap_or_default();
        let length = agent
            .db
            .read(move |conn| Ok(models::find_model(conn, &alias)?.and_then(|m| m.context_length)))
            .await?;
        let window = match (length, run.context_limit) {
            (Some(length), Some(limit)) => length.min(limit),
            (Some(size), None) | (None, Some(size)) => size,
            (None, None) => 0,
        };
        Ok(RunBudget::with_window(agent, run, policy, i64::from(window)).await)
    }

    /// The budget of `run` for writers under `policy` in a window of `context_size` tokens
    /// (0: unknown), as a loop resolved it.
    pub(crate) async fn with_window(
        agent: &AgentContext,
        run: &RunRow,
        policy: ToolPolicy,
        context_size: i64,
    ) -> RunBudget {
        let tokens = TokenMath::new(agent.settings.tokens.divisor);
        let empty: Packet = agent.plugins.assembly().assemble(
            AssemblyInput {
                run: run.id,
                rows: &[],
                turn: run.next_turn,
                policy,
                tools: agent.plugins.as_ref(),
                persona: run.persona.as_deref(),
                budget: Some(BudgetFigures {
                    context_size,
                    used_tokens: 0,
                }),
            },
            tokens,
        );
        let fixed = EstimatedTokens::new(u64::try_from(empty.assembled_tokens).unwrap_or(0));
        let calibration = agent
            .budget
            .send(CalibrationOf { run: run.id })
            .await
            .unwrap_or(Calibration::IDENTITY);
        RunBudget {
            run: run.id,
            window: ContextWindow::new(u64::try_from(context_size).unwrap_or(0)),
            fixed,
            calibration,
        }
    }

    /// The guard of the run's writes in this unit of work, from the entries visible now;
    /// `None` when the window is unknown.
    pub(crate) fn guard(&self, conn: &mut Conn) -> Result<Option<BudgetGuard>, DbError> {
        if self.window.is_unknown() {
            return Ok(None);
        }
        let visible = u64::try_from(context::visible_tokens(conn, self.run)?).unwrap_or(0);
        let packet = EstimatedTokens::new(self.fixed.get().saturating_add(visible));
        let context = CalibratedMeasure {
            calibrated: self.calibration.apply(packet),
            calibration: self.calibration,
        };
        Ok(Some(BudgetGuard::in_window(self.window, context)))
    }
}
