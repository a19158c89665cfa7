//! Termination policy over successive turns (AGENT.md §3.4): a summary completes the loop,
//! a genuine update keeps it going unless it repeats without progress, and turns without
//! either are stalls.

use super::{HaltReason, HealerLimits, Verdict};

/// What one turn signalled, as the progress check needs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct TurnSignals<'a> {
    /// Summary text, explicit or healed.
    pub summary: Option<&'a str>,
    /// Update text, explicit or healed.
    pub update: Option<&'a str>,
    /// The update was synthesised by healing (it counts as a stall).
    pub status_healed: bool,
    /// The turn wrote something.
    pub has_writes: bool,
    /// The turn read something.
    pub has_reads: bool,
}

/// Tracks stalls and repeated updates across the turns of one loop.
#[derive(Debug, Clone, Default)]
pub(crate) struct ProgressTracker {
    limits: HealerLimits,
    stalls: u32,
    last_update: Option<String>,
    update_repeats: u32,
}

impl ProgressTracker {
    /// A tracker with these limits.
    pub(crate) fn new(limits: HealerLimits) -> Self {
        Self {
            limits,
            ..Self::default()
        }
    }

    /// Forgets every turn seen.
    #[cfg(test)]
    pub(crate) fn reset(&mut self) {
        *self = Self::new(self.limits);
    }

    /// Records one turn and decides whether the loop goes on.
    pub(crate) fn assess(&mut self, turn: TurnSignals<'_>) -> Verdict {
        if turn.summary.is_some() {
            self.stalls = 0;
            return Verdict::Complete;
        }
        match turn.update {
            Some(update) if !turn.status_healed => {
                self.stalls = 0;
                let made_progress = turn.has_writes || turn.has_reads;
                if self.last_update.as_deref() == Some(update) && !made_progress {
                    self.update_repeats += 1;
                    if self.update_repeats >= self.limits.max_update_repeats {
                        return Verdict::Halt(HaltReason::RepeatedUpdate {
                            turns: self.update_repeats,
                            text: update.to_owned(),
                        });
                    }
                } else {
                    self.last_update = Some(update.to_owned());
                    self.update_repeats = 1;
                }
                Verdict::Continue
            }
            _ => {
                self.stalls += 1;
                if self.stalls >= self.limits.max_stalls {
                    return Verdict::Halt(HaltReason::Stall { turns: self.stalls });
                }
                Verdict::Continue
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn update(text: &str) -> TurnSignals<'_> {
        TurnSignals {
            update: Some(text),
            ..TurnSignals::default()
        }
    }

    #[test]
    fn healed_updates_stall_and_a_summary_completes() {
        let mut tracker = ProgressTracker::new(HealerLimits::default());
        let healed = TurnSignals {
            update: Some("..."),
            status_healed: true,
            ..TurnSignals::default()
        };
        assert_eq!(tracker.assess(healed), Verdict::Continue);
        assert_eq!(tracker.assess(healed), Verdict::Continue);
        assert_eq!(
            tracker.assess(healed),
            Verdict::Halt(HaltReason::Stall { turns: 3 })
        );
        let summary = TurnSignals {
            summary: Some("done"),
            ..TurnSignals::default()
        };
        assert_eq!(tracker.assess(summary), Verdict::Complete);
        assert_eq!(tracker.assess(healed), Verdict::Continue);
    }

    #[test]
    fn a_different_update_restarts_the_repeat_count() {
        let mut tracker = ProgressTracker::new(HealerLimits::default());
        for text in ["a", "a", "b", "b"] {
            assert_eq!(tracker.assess(update(text)), Verdict::Continue);
        }
        assert!(matches!(tracker.assess(update("b")), Verdict::Halt(_)));
        tracker.reset();
        assert_eq!(tracker.assess(update("b")), Verdict::Continue);
    }
}
