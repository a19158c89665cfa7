//! Calibration of the packet estimate against the provider's actual counts.
//!
//! The pre-LLM check must measure *this* turn's packet, yet `ceil(chars / divisor)` can be
//! several times off for structured text. So each turn whose provider reports usage
//! contributes the ratio `actual / estimate` of the packet it sent, and the next estimate
//! is scaled by it. A turn without usage leaves the ratio as it was: the measure still
//! follows the fresh estimate every turn, it is never a stale count. The ratio is bounded
//! to [`Calibration::MIN_RATIO`]..=[`Calibration::MAX_RATIO`] so one odd report cannot make
//! the budget absurd. Arithmetic is exact (integer fractions), so results are reproducible.

use std::fmt;

use super::tokens::{ActualTokens, CalibratedTokens, EntryTokens, EstimatedTokens};

/// The ratio of the provider's count to rummy's estimate, as a fraction `actual / estimate`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Calibration {
    actual: u64,
    estimate: u64,
}

impl Default for Calibration {
    fn default() -> Self {
        Calibration::IDENTITY
    }
}

impl Calibration {
    /// No scaling: used until a provider reports usage.
    pub(crate) const IDENTITY: Calibration = Calibration {
        actual: 1,
        estimate: 1,
    };
    /// The smallest ratio accepted (the provider counts a quarter of the estimate).
    pub(crate) const MIN_RATIO: (u64, u64) = (1, 4);
    /// The largest ratio accepted (the provider counts eight times the estimate).
    pub(crate) const MAX_RATIO: (u64, u64) = (8, 1);

    /// The calibration one turn yields: its packet's estimate against the provider's count,
    /// bounded. `None` when either is zero (a provider that reports no usage reports 0).
    pub(crate) fn from_turn(
        estimate: EstimatedTokens,
        actual: ActualTokens,
    ) -> Option<Calibration> {
        if estimate.get() == 0 || actual.get() == 0 {
            return None;
        }
        let (actual, estimate) = (actual.get(), estimate.get());
        let (min_actual, min_estimate) = Self::MIN_RATIO;
        let (max_actual, max_estimate) = Self::MAX_RATIO;
        if u128::from(actual) * u128::from(min_estimate)
            < u128::from(estimate) * u128::from(min_actual)
        {
            return Some(Calibration {
                actual: min_actual,
                estimate: min_estimate,
            });
        }
        if u128::from(actual) * u128::from(max_estimate)
            > u128::from(estimate) * u128::from(max_actual)
        {
            return Some(Calibration {
                actual: max_actual,
                estimate: max_estimate,
            });
        }
        let divisor = gcd(actual, estimate);
        Some(Calibration {
            actual: actual / divisor,
            estimate: estimate / divisor,
        })
    }

    /// Takes in one turn: replaces the ratio when the provider reported usage, keeps it
    /// otherwise.
    pub(crate) fn observe(&mut self, estimate: EstimatedTokens, actual: Option<ActualTokens>) {
        if let Some(turn) = actual.and_then(|actual| Calibration::from_turn(estimate, actual)) {
            *self = turn;
        }
    }

    /// The estimate scaled into provider units, rounded up.
    pub(crate) fn apply(self, estimate: EstimatedTokens) -> CalibratedTokens {
        CalibratedTokens::new(self.scale_up(estimate.get()))
    }

    /// A calibrated amount expressed in the unit the model sees on entries (`tokens="…"`),
    /// rounded up: numbers in model-facing text use this unit, so the model can pick
    /// entries by their sizes.
    pub(crate) fn in_entry_tokens(self, tokens: CalibratedTokens) -> EntryTokens {
        let scaled = (u128::from(tokens.get()) * u128::from(self.estimate))
            .div_ceil(u128::from(self.actual));
        EntryTokens::new(u64::try_from(scaled).unwrap_or(u64::MAX))
    }

    /// A change of entry tokens (new − old) scaled into provider units: growth rounds up,
    /// shrinkage rounds toward zero, so the budget never credits more than was freed.
    pub(crate) fn scale_delta(self, entry_tokens_delta: i64) -> i64 {
        let magnitude = entry_tokens_delta.unsigned_abs();
        if entry_tokens_delta >= 0 {
            return i64::try_from(self.scale_up(magnitude)).unwrap_or(i64::MAX);
        }
        let scaled = u128::from(magnitude) * u128::from(self.actual) / u128::from(self.estimate);
        i64::try_from(scaled).map_or(i64::MIN, |scaled| -scaled)
    }

    fn scale_up(self, tokens: u64) -> u64 {
        let scaled =
            (u128::from(tokens) * u128::from(self.actual)).div_ceil(u128::from(self.estimate));
        u64::try_from(scaled).unwrap_or(u64::MAX)
    }
}

impl fmt::Display for Calibration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.actual, self.estimate)
    }
}

/// A packet measured in provider units, with the calibration that scaled it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct CalibratedMeasure {
    /// The packet in provider units.
    pub calibrated: CalibratedTokens,
    pub calibration: Calibration,
}

impl CalibratedMeasure {
    /// A measure taken without calibration (estimate = provider units).
    #[cfg(test)]
    pub(crate) fn uncalibrated(tokens: u64) -> CalibratedMeasure {
        CalibratedMeasure {
            calibrated: CalibratedTokens::new(tokens),
            calibration: Calibration::IDENTITY,
        }
    }
}

fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a.max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn estimate(tokens: u64) -> EstimatedTokens {
        EstimatedTokens::new(tokens)
    }

    #[test]
    fn identity_leaves_the_estimate_as_it_is() {
        let calibration = Calibration::default();
        assert_eq!(calibration.apply(estimate(1234)).get(), 1234);
        assert_eq!(calibration.scale_delta(-17), -17);
    }

    #[test]
    fn the_last_reported_ratio_scales_the_next_estimate() {
        let mut calibration = Calibration::default();
        calibration.observe(estimate(1000), Some(ActualTokens::new(1500)));
        assert_eq!(calibration.apply(estimate(2000)).get(), 3000);
        assert_eq!(calibration.apply(estimate(3)).get(), 5, "4.5 rounds up");
        calibration.observe(estimate(1000), Some(ActualTokens::new(500)));
        assert_eq!(
            calibration.apply(estimate(2000)).get(),
            1000,
            "the newest ratio wins"
        );
    }

    #[test]
    fn a_turn_without_usage_keeps_the_ratio_and_the_measure_follows_the_packet() {
        let mut calibration = Calibration::default();
        calibration.observe(estimate(100), Some(ActualTokens::new(200)));
        calibration.observe(estimate(400), None);
        calibration.observe(estimate(400), Some(ActualTokens::new(0)));
        assert_eq!(calibration.apply(estimate(400)).get(), 800);
        assert_eq!(calibration.apply(estimate(900)).get(), 1800);
    }

    #[test]
    fn an_empty_estimate_teaches_nothing() {
        assert_eq!(
            Calibration::from_turn(estimate(0), ActualTokens::new(50)),
            None
        );
        let mut calibration = Calibration::default();
        calibration.observe(estimate(0), Some(ActualTokens::new(50)));
        assert_eq!(calibration, Calibration::IDENTITY);
    }

    #[test]
    fn the_ratio_is_bounded() {
        let low = Calibration::from_turn(estimate(10_000), ActualTokens::new(1)).unwrap();
        assert_eq!(low.apply(estimate(400)).get(), 100);
        let high = Calibration::from_turn(estimate(1), ActualTokens::new(10_000)).unwrap();
        assert_eq!(high.apply(estimate(400)).get(), 3200);
        let edge = Calibration::from_turn(estimate(100), ActualTokens::new(800)).unwrap();
        assert_eq!(edge.apply(estimate(10)).get(), 80);
    }

    #[test]
    fn model_facing_amounts_convert_back_to_entry_units() {
        let calibration = Calibration::from_turn(estimate(2), ActualTokens::new(3)).unwrap();
        let shown = calibration.in_entry_tokens(CalibratedTokens::new(300));
        assert_eq!(shown, EntryTokens::new(200));
        assert_eq!(
            calibration.in_entry_tokens(CalibratedTokens::new(4)).get(),
            3,
            "8/3 rounds up"
        );
        let huge = Calibration::from_turn(estimate(4), ActualTokens::new(1)).unwrap();
        assert_eq!(
            huge.in_entry_tokens(CalibratedTokens::new(u64::MAX)).get(),
            u64::MAX
        );
    }

    #[test]
    fn deltas_round_against_the_budget() {
        let calibration = Calibration::from_turn(estimate(2), ActualTokens::new(3)).unwrap();
        assert_eq!(calibration.scale_delta(3), 5);
        assert_eq!(calibration.scale_delta(-3), -4);
        assert_eq!(calibration.scale_delta(0), 0);
        assert_eq!(calibration.scale_delta(i64::MIN), i64::MIN);
    }

    #[test]
    fn huge_counts_saturate_instead_of_overflowing() {
        let high = Calibration::from_turn(estimate(1), ActualTokens::new(8)).unwrap();
        assert_eq!(high.apply(estimate(u64::MAX)).get(), u64::MAX);
        assert_eq!(high.scale_delta(i64::MAX), i64::MAX);
        let reduced =
            Calibration::from_turn(estimate(u64::MAX), ActualTokens::new(u64::MAX)).unwrap();
        assert_eq!(reduced, Calibration::IDENTITY);
    }
}
