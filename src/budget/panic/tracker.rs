//! The panic loop's state machine: judged before each of its turns, in place of the
//! ceiling check.

use serde_json::Value;

use crate::budget::calibration::CalibratedMeasure;
use crate::budget::text;
use crate::budget::tokens::{CalibratedTokens, ContextWindow};
use crate::db::enums::LoopMode;
use crate::db::models::run::LoopRow;

use super::{PanicFailure, CONFIG_PANIC_FOR, CONFIG_PANIC_TARGET};

/// What to do before a panic turn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum PanicStep {
    /// The context is at or under the target: complete the panic loop with 200 without
    /// calling the LLM; the retry loop runs next.
    Freed {
        /// The packet measured.
        measured: CalibratedTokens,
    },
    /// Run the turn. On turns after the first, `continuation` is the prompt text.
    Continue {
        /// The packet measured.
        measured: CalibratedTokens,
        /// Tokens still to free.
        to_free: CalibratedTokens,
        /// Consecutive turns without progress so far.
        strikes: u32,
        /// The continuation prompt for this turn (numbers and, after a strike, a warning).
        continuation: String,
    },
    /// Recovery failed: complete the panic loop with 413, drop the pending retry loop, and
    /// fail the run with this message.
    GiveUp(PanicFailure),
}

/// The judge of one panic loop.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PanicTracker {
    target: CalibratedTokens,
    window: ContextWindow,
    prompt_label: String,
    last: Option<CalibratedTokens>,
    strikes: u32,
}

impl PanicTracker {
    /// Consecutive turns without progress that end recovery.
    pub(crate) const MAX_STRIKES: u32 = 3;
    /// Tokens by which the measure of one context may differ from turn to turn although
    /// nothing was freed: the measure is the packet's less its panic prompt, each counted
    /// on its own and rounded up, and the prompt's text changes from turn to turn.
    pub(crate) const MEASURE_SLACK: u64 = 2;

    /// A tracker for a panic loop with `target`, making room for the prompt `prompt_label`.
    pub(crate) fn new(
        target: CalibratedTokens,
        window: ContextWindow,
        prompt_label: String,
    ) -> Self {
        PanicTracker {
            target,
            window,
            prompt_label,
            last: None,
            strikes: 0,
        }
    }

    /// The tracker of a claimed panic loop, from the target its config carries; `None` for
    /// any other loop.
    pub(crate) fn from_loop(panic_loop: &LoopRow, window: ContextWindow) -> Option<PanicTracker> {
        if panic_loop.mode != LoopMode::Panic {
            return None;
        }
        let config = &panic_loop.config;
        let target = config.get(CONFIG_PANIC_TARGET).and_then(Value::as_u64)?;
        let prompt_label = config
            .get(CONFIG_PANIC_FOR)
            .and_then(Value::as_str)
            .unwrap_or("of this run")
            .to_owned();
        Some(PanicTracker::new(
            CalibratedTokens::new(target),
            window,
            prompt_label,
        ))
    }

    /// Consecutive turns without progress so far.
    #[cfg(test)]
    pub(crate) fn strikes(&self) -> u32 {
        self.strikes
    }

    /// Judges the packet measured before a panic turn. A turn whose context did not shrink
    /// since the previous one (by more than [`Self::MEASURE_SLACK`]) is a strike; any
    /// shrinkage clears the strikes. The first
    /// observation never gives up: the plan already made sure that packet fits.
    pub(crate) fn observe(&mut self, measure: CalibratedMeasure) -> PanicStep {
        let measured = measure.calibrated;
        if measured <= self.target {
            return PanicStep::Freed { measured };
        }
        let previous = self.last.replace(measured);
        let Some(previous) = previous else {
            return self.proceed(measure);
        };
        self.strikes = if measured.get() + Self::MEASURE_SLACK >= previous.get() {
            self.strikes.saturating_add(1)
        } else {
            0
        };
        if self.strikes >= Self::MAX_STRIKES {
            return PanicStep::GiveUp(PanicFailure::NoProgress {
                prompt: self.prompt_label.clone(),
                strikes: self.strikes,
                measured,
                target: self.target,
            });
        }
        if !self.window.is_unknown() && measured > self.window.limit() {
            return PanicStep::GiveUp(PanicFailure::RecoveryOverflowed {
                prompt: self.prompt_label.clone(),
                measured,
                window: self.window,
            });
        }
        self.proceed(measure)
    }

    /// Runs the turn; the continuation quotes sizes in entry tokens, as the model sees them.
    fn proceed(&self, measure: CalibratedMeasure) -> PanicStep {
        let CalibratedMeasure {
            calibrated: measured,
            calibration,
        } = measure;
        let to_free = measured.saturating_sub(self.target);
        let mut continuation = text::fill(
            text::PANIC_CONTINUE,
            &[
                ("current", calibration.in_entry_tokens(measured).to_string()),
                (
                    "target",
                    calibration.in_entry_tokens(self.target).to_string(),
                ),
                ("to_free", calibration.in_entry_tokens(to_free).to_string()),
            ],
        );
        if self.strikes > 0 {
            continuation.push('\n');
            continuation.push_str(&text::fill(
                text::PANIC_STRIKE,
                &[
                    ("strikes", self.strikes.to_string()),
                    ("max_strikes", Self::MAX_STRIKES.to_string()),
                ],
            ));
        }
        PanicStep::Continue {
            measured,
            to_free,
            strikes: self.strikes,
            continuation,
        }
    }
}
