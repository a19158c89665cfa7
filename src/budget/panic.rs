//! Panic mode (seed SPEC §4.6), as pure decisions the loop driver executes.
//!
//! When the pre-LLM check of a normal loop overflows, [`plan_overflow`] decides:
//!
//! * **Enter panic** ([`PanicPlan`]): complete the overflowing loop with 413, enqueue a panic
//!   loop (mode `panic`, `noRepo`, the tools that offer themselves in panic mode, the panic
//!   prompt, the target in its config) and re-enqueue the original loop once, flagged
//!   `panicAttempted`. The overflowing prompt entry MUST leave the context (archive it)
//!   before the panic loop runs: the panic prompt replaces it, and the retry writes it anew.
//! * **Hard fail** ([`PanicFailure`]): the loop ends 413 and the client gets a message
//!   naming what does not fit: a prompt that cannot fit the window whatever is freed, a
//!   context that leaves no room even for the panic prompt, or a retry that still overflows
//!   (one panic per prompt).
//!
//! A panic loop's turns never go through the ceiling check. Before each of its turns the
//! driver measures the packet and asks the loop's [`PanicTracker`]: at or under the target
//! → the panic loop completes 200 and the retry runs on the compressed context; otherwise
//! the turn runs, and a turn that did not shrink the context is a strike (3 in a row → hard
//! fail, and the pending retry is dropped). This is how the invariant "the first turn of a
//! panic loop never 413s" holds: the plan only enters panic when the context without the
//! prompt, plus the panic prompt, fits the window, and the tracker's first observation can
//! only succeed or continue. Only the tracker ends a panic loop with success: the panic
//! prompt tells the model not to `<summarize>` early, and the driver should not end the loop
//! on one (a retry that still overflows hard-fails, so an early end costs the prompt).

mod plan;
#[cfg(test)]
mod tests;
mod tracker;

#[cfg(test)]
use plan::PanicPlan;
pub(crate) use plan::{plan_overflow, OverflowDecision, OverflowFacts};
pub(crate) use tracker::{PanicStep, PanicTracker};

use super::tokens::{CalibratedTokens, ContextWindow};

/// Loop config key: the loop is a retry after a panic (no second panic).
pub(crate) const CONFIG_PANIC_ATTEMPTED: &str = "panicAttempted";
/// Loop config key: the panic loop's target in calibrated tokens.
pub(crate) const CONFIG_PANIC_TARGET: &str = "panicTarget";
/// Loop config key: what the panic loop makes room for (the prompt's label).
pub(crate) const CONFIG_PANIC_FOR: &str = "panicFor";
/// Loop config key: skip the project file scan.
pub(crate) const CONFIG_NO_REPO: &str = "noRepo";

/// Why budget recovery is impossible or gave up. The text is for the client (the run's
/// error); it names what does not fit.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum PanicFailure {
    /// The prompt alone leaves no room in the window, whatever is freed.
    #[error(
        "the prompt {prompt} is ~{prompt_tokens} tokens and cannot fit in the model's \
         {window}-token context window with the {cushion} tokens it needs around it, however \
         much of the context is freed; split the prompt or use a model with a larger window",
        cushion = ContextWindow::CUSHION
    )]
    PromptTooLarge {
        /// The prompt's label.
        prompt: String,
        prompt_tokens: CalibratedTokens,
        window: ContextWindow,
    },
    /// The context without the prompt leaves no room even for the panic prompt.
    #[error(
        "the context is ~{context} tokens without the prompt {prompt}, and with the \
         ~{panic_prompt}-token recovery prompt it exceeds the model's {window}-token context \
         window, so it cannot be compressed"
    )]
    ContextTooLarge {
        /// The prompt's label.
        prompt: String,
        /// The context without the prompt.
        context: CalibratedTokens,
        /// The panic prompt's size.
        panic_prompt: CalibratedTokens,
        window: ContextWindow,
    },
    /// The retry after a panic overflowed again.
    #[error(
        "the prompt {prompt} still does not fit after freeing space: the context is \
         ~{measured} tokens, {overflow} over the model's {window}-token context window"
    )]
    RetryStillOver {
        /// The prompt's label.
        prompt: String,
        /// The retry's packet.
        measured: CalibratedTokens,
        window: ContextWindow,
        /// Tokens over the window.
        overflow: u64,
    },
    /// The panic loop made no progress for too many turns.
    #[error(
        "the context could not be compressed for the prompt {prompt}: {strikes} turns in a \
         row freed nothing; it is ~{measured} tokens and must be {target} or fewer"
    )]
    NoProgress {
        /// The prompt's label.
        prompt: String,
        /// Consecutive turns without progress.
        strikes: u32,
        /// The packet at the last turn.
        measured: CalibratedTokens,
        target: CalibratedTokens,
    },
    /// A panic loop itself outgrew the window.
    #[error(
        "budget recovery for the prompt {prompt} outgrew the model's {window}-token context \
         window (~{measured} tokens)"
    )]
    RecoveryOverflowed {
        /// The prompt's label.
        prompt: String,
        /// The packet measured.
        measured: CalibratedTokens,
        window: ContextWindow,
    },
}
