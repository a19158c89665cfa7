//! BudgetGuard: the write gate consulted for every store write during dispatch.
//!
//! A turn starts with the context it assembled (calibrated) and a ceiling of
//! `floor(window × 0.9) − 500`. Every write reports how many entry tokens it adds to (or
//! removes from) what the model sees; the guard scales that by the run's calibration and
//! keeps a running total. The first write that would carry the total over the ceiling is
//! refused with 413 and trips the guard: from then on every tool of the turn fails. Writes
//! the budget must never block are exempt: error results (status ≥ 400, so a failing tool
//! can always report), audit entries (never shown) and archive-fidelity writes (they leave
//! the context). The guard is a plain synchronous value, built per turn and consulted on
//! the DB thread; it never touches the store itself.

use std::fmt;

use crate::db::enums::{EntryStatus, Fidelity};

use super::calibration::{CalibratedMeasure, Calibration};
use super::text;
use super::tokens::{CalibratedTokens, ContextWindow, EntryTokens};

/// One write, as the guard needs to see it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct WriteIntent {
    /// Entry tokens the write adds to what the model sees (negative when it removes some):
    /// the entry's visible tokens after the write minus before.
    pub tokens_delta: i64,
    /// The status the entry is written with.
    pub status: EntryStatus,
    /// The fidelity the entry has after the write.
    pub fidelity: Fidelity,
    /// An audit entry, never shown to the model.
    pub is_audit: bool,
}

impl WriteIntent {
    /// Whether the guard may refuse this write.
    fn is_gated(&self) -> bool {
        !self.is_audit && self.fidelity != Fidelity::Archive && !self.status.is_failure()
    }
}

/// Why a write (or a tool) was refused: the guard tripped. Amounts are in entry tokens,
/// the unit the model sees on its entries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Tripped {
    /// This write would have crossed the ceiling; it tripped the guard.
    Crossed {
        /// What the write adds.
        write_tokens: EntryTokens,
        /// What was left under the ceiling.
        room: EntryTokens,
    },
    /// An earlier write of the turn tripped the guard.
    Skipped,
}

impl Tripped {
    /// The text the model sees as the tool's result.
    pub(crate) fn message(&self) -> String {
        match *self {
            Tripped::Crossed { write_tokens, room } => text::fill(
                text::GUARD_TRIPPED,
                &[
                    ("write_tokens", write_tokens.to_string()),
                    ("room", room.to_string()),
                ],
            ),
            Tripped::Skipped => text::fill(text::GUARD_SKIPPED, &[]),
        }
    }
}

impl fmt::Display for Tripped {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message())
    }
}

impl std::error::Error for Tripped {}

/// The per-turn write gate.
#[derive(Debug, Clone)]
pub(crate) struct BudgetGuard {
    ceiling: CalibratedTokens,
    total: CalibratedTokens,
    calibration: Calibration,
    tripped: bool,
}

impl BudgetGuard {
    /// The write gate of a context measured at `context` in `window`, under
    /// [`ContextWindow::guard_ceiling`]: the one way a turn's commands and the writers outside
    /// a turn (a client's tool calls, the scan) get their gate, so every writer is held to
    /// the same ceiling and arithmetic.
    pub(crate) fn in_window(window: ContextWindow, context: CalibratedMeasure) -> BudgetGuard {
        BudgetGuard::new(
            window.guard_ceiling(),
            context.calibrated,
            context.calibration,
        )
    }

    /// A guard for a turn whose context is `current_tokens`, under `ceiling`; write deltas
    /// are scaled by `calibration`.
    pub(super) fn new(
        ceiling: CalibratedTokens,
        current_tokens: CalibratedTokens,
        calibration: Calibration,
    ) -> BudgetGuard {
        BudgetGuard {
            ceiling,
            total: current_tokens,
            calibration,
            tripped: false,
        }
    }

    /// Admits or refuses one write. An admitted write is counted, so call this right before
    /// performing it. Exempt writes are always admitted; once the guard has tripped, every
    /// other write is refused with [`Tripped::Skipped`].
    pub(crate) fn check(&mut self, intent: &WriteIntent) -> Result<(), Tripped> {
        let delta = self.calibration.scale_delta(intent.tokens_delta);
        if !intent.is_gated() {
            self.count_exempt(intent, delta);
            return Ok(());
        }
        self.ensure_open()?;
        let growth = delta.unsigned_abs();
        if delta <= 0 {
            self.total = self.total.saturating_sub(CalibratedTokens::new(growth));
            return Ok(());
        }
        let would_reach = self.total.saturating_add(CalibratedTokens::new(growth));
        if would_reach > self.ceiling {
            self.tripped = true;
            let room = self.ceiling.saturating_sub(self.total);
            return Err(Tripped::Crossed {
                write_tokens: EntryTokens::new(intent.tokens_delta.unsigned_abs()),
                room: self.calibration.in_entry_tokens(room),
            });
        }
        self.total = would_reach;
        Ok(())
    }

    /// Admits or refuses one write as [`BudgetGuard::check`] does, but a refusal does not
    /// trip the guard: for a writer that falls back to a smaller write instead of stopping
    /// (the scan lists a file it cannot load, and goes on with the next).
    pub(crate) fn check_alone(&mut self, intent: &WriteIntent) -> Result<(), Tripped> {
        let tripped = self.tripped;
        let verdict = self.check(intent);
        self.tripped = tripped;
        verdict
    }

    /// Refuses any tool once the guard has tripped; call it before each tool of the turn,
    /// writing or not.
    pub(crate) fn ensure_open(&self) -> Result<(), Tripped> {
        if self.tripped {
            return Err(Tripped::Skipped);
        }
        Ok(())
    }

    /// Whether a write has tripped the guard this turn.
    #[cfg(test)]
    pub(crate) fn is_tripped(&self) -> bool {
        self.tripped
    }

    /// The context as counted so far (turn start plus admitted writes).
    #[cfg(test)]
    pub(crate) fn total(&self) -> CalibratedTokens {
        self.total
    }

    #[cfg(test)]
    pub(crate) fn ceiling(&self) -> CalibratedTokens {
        self.ceiling
    }

    /// Error results occupy context, so they count; archive writes only ever free space;
    /// audit entries are never seen.
    fn count_exempt(&mut self, intent: &WriteIntent, delta: i64) {
        let magnitude = CalibratedTokens::new(delta.unsigned_abs());
        if intent.is_audit {
            return;
        }
        if delta < 0 {
            self.total = self.total.saturating_sub(magnitude);
        } else if intent.fidelity != Fidelity::Archive {
            self.total = self.total.saturating_add(magnitude);
        }
    }
}

/// Admits or refuses the writes of one command while a reply's commands are dispatched.
pub(crate) trait WriteGate: Send {
    /// `Err` carries the model-facing reason; the command then fails with 413.
    fn admit(&mut self, write: &WriteIntent) -> Result<(), String>;
}

/// The dispatch consults the guard once per command.
impl WriteGate for BudgetGuard {
    fn admit(&mut self, write: &WriteIntent) -> Result<(), String> {
        self.check(write).map_err(|tripped| tripped.message())
    }
}

/// The gate of a panic loop's turns: the context is over the ceiling by definition, so
/// every write that grows it fails on its own (413), and every write that shrinks it passes;
/// nothing trips, so a refused note never blocks the demotions after it.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct PanicGate;

impl WriteGate for PanicGate {
    fn admit(&mut self, intent: &WriteIntent) -> Result<(), String> {
        if !intent.is_gated() || intent.tokens_delta <= 0 {
            return Ok(());
        }
        Err(Tripped::Crossed {
            write_tokens: EntryTokens::new(intent.tokens_delta.unsigned_abs()),
            room: EntryTokens::new(0),
        }
        .message())
    }
}

#[cfg(test)]
mod tests;
