//! The response healer: what a turn without `<summarize>`/`<update>` means, and when a run
//! must stop (stalls, repeated updates, cyclic tool calls).
//!
//! Everything here is a pure function or a small state machine over plain data; the agent
//! loop owns one [`ProgressTracker`] and one [`RepetitionTracker`] per loop.

mod progress;
mod repetition;

use std::fmt;

pub(crate) use progress::{ProgressTracker, TurnSignals};
pub(crate) use repetition::{RepetitionTracker, ToolCall};

/// The update text a healed turn gets: it counts as a stall.
pub(crate) const HEALED_UPDATE: &str = "...";

/// The summary a turn of only action tools gets when it has no text.
pub(crate) const DEFAULT_SUMMARY: &str = "Done.";

/// Longest healed summary, in characters.
pub(crate) const MAX_SUMMARY_CHARS: usize = 500;

/// Markers of a native tool call the parser could not turn into a command.
const NATIVE_CALL_MARKERS: [&str; 2] = ["<|tool_call>", "<tool_call|>"];

/// Limits of the termination policy (upstream defaults: 3, 3, 4, 3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct HealerLimits {
    /// Turns without a status before the run stops.
    pub max_stalls: u32,
    /// Repetitions of a cycle before the run stops.
    pub min_cycles: usize,
    /// Longest cycle period checked.
    pub max_cycle_period: usize,
    /// Identical updates without reads or writes before the run stops.
    pub max_update_repeats: u32,
}

impl Default for HealerLimits {
    fn default() -> Self {
        Self {
            max_stalls: 3,
            min_cycles: 3,
            max_cycle_period: 4,
            max_update_repeats: 3,
        }
    }
}

/// The status a turn is given when the model emitted neither summarize nor update.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum HealedStatus {
    /// The turn is the final answer.
    Summary(String),
    /// The turn counts as still working (a stall).
    Update(String),
}

/// Heals the status of a turn from its raw content and the names of its commands;
/// `investigates` says which tools find things out (the tool registry knows).
///
/// Plain text is the answer; a turn of only action tools is done; anything that
/// investigates, and a broken native tool-call fragment, is a stall.
pub(crate) fn heal_status<'a>(
    content: &str,
    command_names: impl IntoIterator<Item = &'a str>,
    investigates: impl Fn(&str) -> bool,
) -> HealedStatus {
    let text = super::trim(content);
    let mut names = command_names.into_iter().peekable();
    let has_commands = names.peek().is_some();
    let broken_native_call = NATIVE_CALL_MARKERS
        .iter()
        .any(|marker| text.contains(marker));
    if broken_native_call {
        return HealedStatus::Update(HEALED_UPDATE.to_owned());
    }
    if !has_commands {
        if text.is_empty() {
            return HealedStatus::Update(HEALED_UPDATE.to_owned());
        }
        return HealedStatus::Summary(text.chars().take(MAX_SUMMARY_CHARS).collect());
    }
    if names.any(investigates) {
        return HealedStatus::Update(HEALED_UPDATE.to_owned());
    }
    if text.is_empty() {
        return HealedStatus::Summary(DEFAULT_SUMMARY.to_owned());
    }
    HealedStatus::Summary(text.chars().take(MAX_SUMMARY_CHARS).collect())
}

/// What the loop does after a turn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Run another turn.
    Continue,
    /// The model summarized: the loop is complete.
    Complete,
    /// Stop the loop for this reason.
    Halt(HaltReason),
}

/// Why the healer stopped a loop.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum HaltReason {
    /// Too many turns with no update or summary.
    Stall {
        /// Consecutive turns without a status.
        turns: u32,
    },
    /// The same update repeated with no reads or writes.
    RepeatedUpdate {
        /// Consecutive identical updates.
        turns: u32,
        /// The repeated update text.
        text: String,
    },
    /// The same tool calls repeating in a cycle.
    Cycle {
        /// Turns per cycle.
        period: usize,
        /// Repetitions seen.
        repetitions: usize,
    },
}

impl HaltReason {
    /// A stable machine-readable code: `stall`, `repeated_update` or `cycle`.
    pub(crate) fn code(&self) -> &'static str {
        match self {
            HaltReason::Stall { .. } => "stall",
            HaltReason::RepeatedUpdate { .. } => "repeated_update",
            HaltReason::Cycle { .. } => "cycle",
        }
    }
}

impl fmt::Display for HaltReason {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HaltReason::Stall { turns } => {
                write!(formatter, "{turns} turns with no <update/> or <summarize/>")
            }
            HaltReason::RepeatedUpdate { turns, text } => {
                let preview: String = text.chars().take(60).collect();
                write!(
                    formatter,
                    "Same <update/> repeated {turns} turns: \"{preview}\""
                )
            }
            HaltReason::Cycle {
                period,
                repetitions,
            } => write!(
                formatter,
                "Cyclic tool pattern (period {period}, {repetitions} repetitions)"
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `search` is the one tool that investigates here.
    fn searches(name: &str) -> bool {
        name == "search"
    }

    #[test]
    fn plain_text_is_the_summary_cut_to_500_chars() {
        let long = "é".repeat(600);
        let HealedStatus::Summary(summary) = heal_status(&format!("  {long} "), [], searches)
        else {
            panic!("expected a summary");
        };
        assert_eq!(summary.chars().count(), MAX_SUMMARY_CHARS);
    }

    #[test]
    fn broken_native_call_is_a_stall() {
        assert_eq!(
            heal_status("<|tool_call>call:get{path:", [], searches),
            HealedStatus::Update(HEALED_UPDATE.into())
        );
    }

    #[test]
    fn think_only_turn_is_done() {
        assert_eq!(
            heal_status("", ["think"], searches),
            HealedStatus::Summary(DEFAULT_SUMMARY.into())
        );
        assert_eq!(
            heal_status("x", ["think", "search"], searches),
            HealedStatus::Update(HEALED_UPDATE.into())
        );
    }

    #[test]
    fn reasons_read_as_upstream() {
        let reason = HaltReason::RepeatedUpdate {
            turns: 3,
            text: "x".repeat(70),
        };
        assert_eq!(
            reason.to_string(),
            format!("Same <update/> repeated 3 turns: \"{}\"", "x".repeat(60))
        );
        assert_eq!(reason.code(), "repeated_update");
    }
}
