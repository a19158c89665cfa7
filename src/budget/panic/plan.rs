//! The decision taken when a normal loop's packet overflows: panic, or fail outright.

use serde_json::{Map, Value};

use crate::budget::calibration::Calibration;
use crate::budget::ceiling::Overflow;
use crate::budget::text;
#[cfg(test)]
use crate::budget::tokens::ContextWindow;
use crate::budget::tokens::{CalibratedTokens, TokenMath};
use crate::db::enums::{LoopMode, LoopPriority};
use crate::db::models::run::{LoopEnqueue, LoopRow};

#[cfg(test)]
use super::tracker::PanicTracker;
use super::{
    PanicFailure, CONFIG_NO_REPO, CONFIG_PANIC_ATTEMPTED, CONFIG_PANIC_FOR, CONFIG_PANIC_TARGET,
};

/// What the driver knows when a loop's pre-LLM check overflows.
#[derive(Debug, Clone, Copy)]
pub(crate) struct OverflowFacts<'a> {
    /// The loop whose turn overflowed.
    pub original: &'a LoopRow,
    /// The verdict of the ceiling check (packet and window).
    pub overflow: Overflow,
    /// The calibrated size of the prompt driving the loop, as it sits in the packet.
    pub incoming_prompt: CalibratedTokens,
    /// How to name that prompt to people (e.g. its entry path `prompt://12`).
    pub prompt_label: &'a str,
    /// The estimator, to measure the panic prompt.
    pub math: TokenMath,
    pub calibration: Calibration,
}

/// What an overflow of a loop's pre-LLM check leads to.
#[derive(Debug, Clone)]
pub(crate) enum OverflowDecision {
    /// Complete the original loop with 413 and enqueue both loops of the plan.
    EnterPanic(Box<PanicPlan>),
    /// Complete the loop with 413 and fail the run with this message.
    HardFail(PanicFailure),
}

/// A panic about to start.
#[derive(Debug, Clone)]
pub(crate) struct PanicPlan {
    /// The packet size the panic loop must reach (at or under).
    pub target: CalibratedTokens,
    /// The predicted packet of the panic loop's first turn (context + panic prompt).
    #[cfg(test)]
    pub predicted: CalibratedTokens,
    /// What the model is asked to free: `predicted − target`.
    pub to_free: CalibratedTokens,
    /// The panic loop (priority [`LoopPriority::Panic`], mode `panic`, the panic prompt).
    pub panic_loop: LoopEnqueue,
    /// The original loop again (priority [`LoopPriority::Retry`], flagged
    /// `panicAttempted`).
    pub retry_loop: LoopEnqueue,
    #[cfg(test)]
    prompt_label: String,
    #[cfg(test)]
    window: ContextWindow,
}

impl PanicPlan {
    /// The tracker that judges the panic loop's turns.
    #[cfg(test)]
    pub(crate) fn tracker(&self) -> PanicTracker {
        PanicTracker::new(self.target, self.window, self.prompt_label.clone())
    }
}

/// Decides what an overflow of a loop's pre-LLM check leads to.
pub(crate) fn plan_overflow(facts: &OverflowFacts<'_>) -> OverflowDecision {
    let Overflow {
        measured,
        window,
        overflow,
    } = facts.overflow;
    let prompt = facts.prompt_label.to_owned();
    let original_config = facts.original.config.0.clone();
    if facts.original.mode == LoopMode::Panic {
        return OverflowDecision::HardFail(PanicFailure::RecoveryOverflowed {
            prompt,
            measured,
            window,
        });
    }
    if original_config.get(CONFIG_PANIC_ATTEMPTED) == Some(&Value::Bool(true)) {
        return OverflowDecision::HardFail(PanicFailure::RetryStillOver {
            prompt,
            measured,
            window,
            overflow,
        });
    }
    let target = window.panic_target(facts.incoming_prompt);
    if target.get() == 0 {
        return OverflowDecision::HardFail(PanicFailure::PromptTooLarge {
            prompt,
            prompt_tokens: facts.incoming_prompt,
            window,
        });
    }
    let context = measured.saturating_sub(facts.incoming_prompt);
    let (panic_prompt, panic_prompt_tokens) = render_panic_prompt(facts, context, target);
    let predicted = context.saturating_add(panic_prompt_tokens);
    if predicted > window.limit() {
        return OverflowDecision::HardFail(PanicFailure::ContextTooLarge {
            prompt,
            context,
            panic_prompt: panic_prompt_tokens,
            window,
        });
    }
    let mut panic_config = Map::new();
    panic_config.insert(CONFIG_NO_REPO.to_owned(), Value::Bool(true));
    panic_config.insert(CONFIG_PANIC_TARGET.to_owned(), Value::from(target.get()));
    panic_config.insert(CONFIG_PANIC_FOR.to_owned(), Value::String(prompt.clone()));
    if let Some(temperature) = original_config.get("temperature") {
        panic_config.insert("temperature".to_owned(), temperature.clone());
    }
    let mut retry_config = original_config;
    retry_config.insert(CONFIG_PANIC_ATTEMPTED.to_owned(), Value::Bool(true));
    let original = facts.original;
    OverflowDecision::EnterPanic(Box::new(PanicPlan {
        target,
        #[cfg(test)]
        predicted,
        to_free: predicted.saturating_sub(target),
        panic_loop: LoopEnqueue {
            run_id: original.run_id,
            mode: LoopMode::Panic,
            model: original.model.clone(),
            prompt: panic_prompt,
            priority: LoopPriority::Panic,
            config: Value::Object(panic_config),
            requested_by: original.requested_by.clone(),
            requested_on: original.requested_on,
        },
        retry_loop: LoopEnqueue {
            run_id: original.run_id,
            mode: original.mode,
            model: original.model.clone(),
            prompt: original.prompt.clone(),
            priority: LoopPriority::Retry,
            config: Value::Object(retry_config),
            requested_by: original.requested_by.clone(),
            requested_on: original.requested_on,
        },
        #[cfg(test)]
        prompt_label: prompt,
        #[cfg(test)]
        window,
    }))
}

/// The panic prompt for a context of `context` tokens without it, and its calibrated size.
/// The prompt quotes the packet it will be part of, so it is measured once with the
/// context alone and rendered again with the sum (the digits differ by a token at most).
fn render_panic_prompt(
    facts: &OverflowFacts<'_>,
    context: CalibratedTokens,
    target: CalibratedTokens,
) -> (String, CalibratedTokens) {
    let measure = |prompt: &str| {
        facts
            .calibration
            .apply(facts.math.estimate_packet([prompt]))
    };
    let draft = panic_prompt(facts, context, target);
    let current = context.saturating_add(measure(&draft));
    let prompt = panic_prompt(facts, current, target);
    let size = measure(&prompt).max(current.saturating_sub(context));
    (prompt, size)
}

/// The text of a panic loop's first turn, sizes in entry tokens as the model sees them.
fn panic_prompt(
    facts: &OverflowFacts<'_>,
    current: CalibratedTokens,
    target: CalibratedTokens,
) -> String {
    let shown = |tokens: CalibratedTokens| facts.calibration.in_entry_tokens(tokens).to_string();
    text::fill(
        text::PANIC,
        &[
            ("incoming", shown(facts.incoming_prompt)),
            ("current", shown(current)),
            ("target", shown(target)),
            ("to_free", shown(current.saturating_sub(target))),
        ],
    )
}
