//! The context economy: token math, the budget checks and panic mode.
//!
//! Everything here is pure except [`BudgetActor`], which only holds per-run numbers. The
//! turn executor asks the actor to calibrate this turn's packet estimate and runs
//! [`check_ceiling`] before calling the LLM; an overflow goes to [`plan_overflow`], and a
//! panic loop's turns are judged by a [`PanicTracker`] instead. Dispatch consults a
//! [`BudgetGuard`] for every store write — built by [`BudgetGuard::in_window`] alone, for a
//! turn's commands and for the writers outside a turn (a client's tool calls, the scan)
//! alike, so there is one write gate —; progress shows [`advisory`]. All model-facing text
//! lives in `budget/text/*.md`.
//!
//! Invariant: no budget decision uses entry tokens ([`EntryTokens`] are display only); every
//! limit and comparison is in [`CalibratedTokens`].

mod actor;
mod advisory;
mod calibration;
mod ceiling;
mod guard;
mod panic;
mod size_gate;
mod text;
mod tokens;

pub use actor::{BudgetActor, Calibrated, CalibrationOf, RecordUsage, RunIdle, IDLE_RUNS};
pub use advisory::{advisory, ADVISORY_HALF_PERCENT, ADVISORY_THREE_QUARTERS_PERCENT};
pub use calibration::{CalibratedMeasure, Calibration};
pub use ceiling::{check_ceiling, CeilingVerdict, Overflow};
pub use guard::{BudgetGuard, PanicGate, Tripped, WriteGate, WriteIntent};
pub use panic::{
    plan_overflow, OverflowDecision, OverflowFacts, PanicFailure, PanicPlan, PanicStep,
    PanicTracker, CONFIG_NO_REPO, CONFIG_PANIC_ATTEMPTED, CONFIG_PANIC_FOR, CONFIG_PANIC_TARGET,
};
pub use size_gate::{check_entry_size, EntryTooLarge, DEFAULT_MAX_ENTRY_TOKENS};
pub use tokens::{
    ActualTokens, CalibratedTokens, ContextWindow, EntryTokens, EstimatedTokens, TokenMath,
};

/// Every way the budget refuses something; each is a 413 whose text is meant for its reader
/// (the model for [`Tripped`] and [`EntryTooLarge`], the client for [`PanicFailure`]).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BudgetError {
    /// A write crossed the guard's ceiling, or came after one that did.
    #[error(transparent)]
    Tripped(#[from] Tripped),
    /// A known entry over the size gate.
    #[error(transparent)]
    EntryTooLarge(#[from] EntryTooLarge),
    /// Budget recovery impossible or failed.
    #[error(transparent)]
    Panic(#[from] PanicFailure),
}
