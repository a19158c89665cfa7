//! Token math in one place, and the measures it produces kept apart by type.
//!
//! rummy estimates tokens as `ceil(characters / RUMMY_TOKEN_DIVISOR)` (the same formula as
//! the SQL function `countTokens`, [`estimate_tokens`]). Three measures come out of the
//! system and must never be mixed:
//!
//! * [`EntryTokens`]: one entry's estimate, for display (`tokens="…"`, listings);
//! * [`EstimatedTokens`]: this turn's assembled packet, estimated;
//! * [`ActualTokens`]: the provider's count of the input it received, back-filled per turn.
//!
//! Budget decisions use a fourth, derived unit, [`CalibratedTokens`]: an estimate scaled by
//! the last actual/estimate ratio (see `calibration`), i.e. the best prediction of what the
//! provider will count. Limits ([`ContextWindow`] and the ceilings derived from it) are
//! expressed in that unit.

use std::fmt;

use crate::db::functions::estimate_tokens;

macro_rules! token_measure {
    ($($(#[$doc:meta])+ $name:ident),* $(,)?) => {$(
        $(#[$doc])+
        #[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub(crate) struct $name(u64);

        impl $name {
            /// Wraps a count in this measure.
            pub(crate) const fn new(tokens: u64) -> Self {
                Self(tokens)
            }

            pub(crate) const fn get(self) -> u64 {
                self.0
            }

            /// The sum, saturating at `u64::MAX`.
            pub(crate) const fn saturating_add(self, other: Self) -> Self {
                Self(self.0.saturating_add(other.0))
            }

            /// The difference, saturating at zero.
            #[allow(dead_code, reason = "not every measure is subtracted")]
            pub(crate) const fn saturating_sub(self, other: Self) -> Self {
                Self(self.0.saturating_sub(other.0))
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                self.0.fmt(f)
            }
        }

        impl std::iter::Sum for $name {
            fn sum<I: Iterator<Item = Self>>(iter: I) -> Self {
                iter.fold(Self(0), Self::saturating_add)
            }
        }
    )*};
}

token_measure! {
    /// One entry's estimated size: what the model is shown an entry costs. Display only;
    /// never a budget decision.
    EntryTokens,
    /// The estimate of a whole assembled packet (system + user message) for one turn.
    EstimatedTokens,
    /// The provider's count of a turn's input tokens (`usage.prompt_tokens`).
    ActualTokens,
    /// An estimate scaled into provider units by the run's calibration: the unit of every
    /// budget decision and limit.
    CalibratedTokens,
}

/// The token estimator, configured with `RUMMY_TOKEN_DIVISOR`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TokenMath {
    divisor: u32,
}

impl TokenMath {
    /// An estimator with `divisor` characters per token (0 counts as 1).
    pub(crate) const fn new(divisor: u32) -> TokenMath {
        TokenMath {
            divisor: if divisor == 0 { 1 } else { divisor },
        }
    }

    /// The characters-per-token divisor.
    pub(crate) fn divisor(self) -> u32 {
        self.divisor
    }

    /// The display size of one entry body.
    pub(crate) fn entry_tokens(self, body: &str) -> EntryTokens {
        EntryTokens(u64::try_from(self.count(body)).unwrap_or(0))
    }

    /// The estimate of an assembled packet: the sum of each message's estimate.
    pub(crate) fn estimate_packet<'a>(
        self,
        messages: impl IntoIterator<Item = &'a str>,
    ) -> EstimatedTokens {
        messages
            .into_iter()
            .map(|message| EstimatedTokens(u64::try_from(self.count(message)).unwrap_or(0)))
            .sum()
    }

    /// The raw estimate of `text`, for the places that add measures of one kind up
    /// (projected rows, message parts).
    pub(crate) fn count(self, text: &str) -> i64 {
        i64::from(estimate_tokens(text, self.divisor))
    }
}

/// A model's context window in tokens (`contextSize`); 0 means unknown (no limit enforced).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct ContextWindow(u64);

impl ContextWindow {
    /// Tokens kept free below every derived ceiling (seed SPEC §4.5/§4.6 "cushion").
    pub(crate) const CUSHION: u64 = 500;
    /// Percent of the window the write guard's ceiling starts from.
    pub(crate) const GUARD_PERCENT: u64 = 90;
    /// Percent of the window a panic loop must compress the context below (before the
    /// cushion).
    pub(crate) const PANIC_PERCENT: u64 = 75;

    /// A window of `tokens` (0 = unknown).
    pub(crate) const fn new(tokens: u64) -> ContextWindow {
        ContextWindow(tokens)
    }

    #[cfg(test)]
    pub(crate) const fn get(self) -> u64 {
        self.0
    }

    /// Whether the window is unknown, so no ceiling applies.
    pub(crate) const fn is_unknown(self) -> bool {
        self.0 == 0
    }

    /// The whole window as a limit: the pre-LLM ceiling.
    pub(crate) const fn limit(self) -> CalibratedTokens {
        CalibratedTokens(self.0)
    }

    /// The BudgetGuard ceiling, `floor(window × 0.9) − 500`, at least 0.
    pub(crate) fn guard_ceiling(self) -> CalibratedTokens {
        CalibratedTokens(percent_of(self.0, Self::GUARD_PERCENT).saturating_sub(Self::CUSHION))
    }

    /// The size a panic loop must bring the context to so `incoming` fits afterwards:
    /// `min(floor(window × 0.75), window − incoming) − 500`, at least 0.
    pub(crate) fn panic_target(self, incoming: CalibratedTokens) -> CalibratedTokens {
        let room = percent_of(self.0, Self::PANIC_PERCENT).min(self.0.saturating_sub(incoming.0));
        CalibratedTokens(room.saturating_sub(Self::CUSHION))
    }
}

impl fmt::Display for ContextWindow {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// `floor(value × percent / 100)` without overflow.
fn percent_of(value: u64, percent: u64) -> u64 {
    let scaled = u128::from(value) * u128::from(percent) / 100;
    u64::try_from(scaled).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entry_tokens_round_up_per_divisor() {
        let math = TokenMath::new(4);
        assert_eq!(math.entry_tokens(""), EntryTokens::new(0));
        assert_eq!(math.entry_tokens("abcd"), EntryTokens::new(1));
        assert_eq!(math.entry_tokens("abcde"), EntryTokens::new(2));
        assert_eq!(TokenMath::new(2).entry_tokens("abcde"), EntryTokens::new(3));
    }

    #[test]
    fn a_zero_divisor_counts_characters() {
        let math = TokenMath::new(0);
        assert_eq!(math.divisor(), 1);
        assert_eq!(math.entry_tokens("héllo"), EntryTokens::new(5));
    }

    #[test]
    fn a_packet_estimate_sums_its_messages_rounded_each() {
        let math = TokenMath::new(4);
        let estimate = math.estimate_packet(["abcde", "abcde", ""]);
        assert_eq!(estimate, EstimatedTokens::new(4));
        assert_eq!(math.estimate_packet([]), EstimatedTokens::new(0));
    }

    #[test]
    fn the_packet_estimate_agrees_with_the_sql_formula() {
        let body = "<knowns>\n  <known path=\"known://a\">x</known>\n</knowns>";
        let math = TokenMath::new(3);
        let expected = u64::try_from(estimate_tokens(body, 3)).unwrap();
        assert_eq!(math.estimate_packet([body]).get(), expected);
    }

    #[test]
    fn guard_ceiling_is_ninety_percent_minus_the_cushion() {
        assert_eq!(
            ContextWindow::new(10_000).guard_ceiling(),
            CalibratedTokens::new(8_500)
        );
        assert_eq!(
            ContextWindow::new(1_001).guard_ceiling(),
            CalibratedTokens::new(400)
        );
        assert_eq!(
            ContextWindow::new(300).guard_ceiling(),
            CalibratedTokens::new(0)
        );
        let huge = ContextWindow::new(u64::MAX).guard_ceiling().get();
        assert!(huge > u64::MAX / 10 * 8 && huge < u64::MAX / 10 * 9);
    }

    #[test]
    fn panic_target_takes_the_smaller_room_less_the_cushion() {
        let window = ContextWindow::new(10_000);
        assert_eq!(
            window.panic_target(CalibratedTokens::new(1_000)),
            CalibratedTokens::new(7_000)
        );
        assert_eq!(
            window.panic_target(CalibratedTokens::new(4_000)),
            CalibratedTokens::new(5_500)
        );
        assert_eq!(
            window.panic_target(CalibratedTokens::new(9_800)),
            CalibratedTokens::new(0)
        );
        assert_eq!(
            window.panic_target(CalibratedTokens::new(20_000)),
            CalibratedTokens::new(0)
        );
    }

    #[test]
    fn measures_sum_and_saturate() {
        let total: EstimatedTokens = [EstimatedTokens::new(u64::MAX), EstimatedTokens::new(1)]
            .into_iter()
            .sum();
        assert_eq!(total.get(), u64::MAX);
        assert_eq!(
            ActualTokens::new(3)
                .saturating_sub(ActualTokens::new(5))
                .get(),
            0
        );
    }
}
