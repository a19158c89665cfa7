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
mod text;
mod tokens;

pub(crate) use actor::{BudgetActor, Calibrated, CalibrationOf, RecordUsage, RunIdle};
pub(crate) use advisory::advisory;
pub(crate) use calibration::{CalibratedMeasure, Calibration};
pub(crate) use ceiling::{check_ceiling, CeilingVerdict, Overflow};
pub(crate) use guard::{BudgetGuard, PanicGate, WriteGate, WriteIntent};
pub(crate) use panic::{
    plan_overflow, OverflowDecision, OverflowFacts, PanicFailure, PanicStep, PanicTracker,
};
#[cfg(test)]
pub(crate) use tokens::ActualTokens;
pub(crate) use tokens::{CalibratedTokens, ContextWindow, EstimatedTokens, TokenMath};
