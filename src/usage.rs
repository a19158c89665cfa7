//! What model calls use and cost, as pure values: the token counts of a call or of a sum of
//! calls ([`Tokens`]), money ([`Micros`]: every amount rummy stores, sums or compares is an
//! integer count of micro-dollars, so sums and caps are exact), a model's [`Price`] and the
//! cost of one call under it ([`Price::cost`]); what one answered call is recorded as,
//! within sane bounds whatever its provider reported (`recorded`); the caps on spending
//! (`caps`) and the clock their periods are cut from (`clock`). The record of calls is
//! `llm::ledger`; the reports are `db::queries::usage`.

mod caps;
mod clock;
mod recorded;

pub use caps::CapLimits;
pub(crate) use caps::{Amount, Limits, Scope, Spent, Standing, StandingView};
#[cfg(test)]
pub(crate) use caps::{Limit, Period, Unit};
pub(crate) use clock::{Clock, UtcTime};
pub(crate) use recorded::{recorded_cost, recorded_tokens, Amended, CallBound, Estimate};

use diesel::sql_types::BigInt;
use diesel::QueryableByName;
use serde::{Deserialize, Serialize};

/// An amount of money in micro-dollars: 1 US dollar is 1 000 000.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct Micros(pub i64);

impl Micros {
    const PER_DOLLAR: f64 = 1_000_000.0;

    /// `dollars` to the nearest micro-dollar; `None` when it is negative, not a number, or
    /// past what an `i64` of micro-dollars holds.
    pub(crate) fn from_dollars(dollars: f64) -> Option<Micros> {
        let micros = (dollars * Self::PER_DOLLAR).round();
        // `i64::MAX as f64` rounds up to 2^63, itself out of range: hence `<`.
        (micros.is_finite() && micros >= 0.0 && micros < i64::MAX as f64)
            .then_some(Micros(micros as i64))
    }

    /// In US dollars, for the wire's `cost` fields (the integer is the exact amount).
    pub(crate) fn dollars(self) -> f64 {
        self.0 as f64 / Self::PER_DOLLAR
    }
}

impl std::iter::Sum for Micros {
    fn sum<I: Iterator<Item = Micros>>(iter: I) -> Micros {
        Micros(iter.map(|micros| micros.0).fold(0, i64::saturating_add))
    }
}

/// A model's price: micro-dollars per million tokens of prompt not served from the
/// provider's cache, of cached prompt, and of completion (reasoning included). All zero:
/// the model costs nothing, or its price is unknown.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Price {
    pub input: Micros,
    pub cached_input: Micros,
    pub output: Micros,
}

/// Why a price cannot be taken.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{field} must be a number of US dollars per million tokens, 0 or more (got {value})")]
pub(crate) struct PriceError {
    /// Which of the three: `input`, `cached_input` or `output`.
    pub field: &'static str,
    pub value: f64,
}

impl Price {
    /// A price given in US dollars per million tokens; a missing cached-input price is the
    /// input price.
    pub(crate) fn from_dollars(
        input: f64,
        cached_input: Option<f64>,
        output: f64,
    ) -> Result<Price, PriceError> {
        let micros = |field: &'static str, value: f64| {
            Micros::from_dollars(value).ok_or(PriceError { field, value })
        };
        let input_price = micros("input", input)?;
        Ok(Price {
            input: input_price,
            cached_input: match cached_input {
                Some(cached) => micros("cached_input", cached)?,
                None => input_price,
            },
            output: micros("output", output)?,
        })
    }

    /// What a call with these counts costs, to the nearest micro-dollar (half up); the
    /// cached tokens are part of the prompt's, as providers count them.
    pub(crate) fn cost(&self, used: &Tokens) -> Micros {
        let uncached = i128::from(used.prompt_tokens.saturating_sub(used.cached_tokens).max(0));
        let cached = i128::from(used.cached_tokens.max(0));
        let completion = i128::from(used.completion_tokens.max(0));
        let per_million = uncached * i128::from(self.input.0)
            + cached * i128::from(self.cached_input.0)
            + completion * i128::from(self.output.0);
        let micros = (per_million + 500_000) / 1_000_000;
        Micros(i64::try_from(micros).unwrap_or(i64::MAX))
    }
}

/// Token counts of one call, or summed over calls; a count past `i64` saturates.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, QueryableByName)]
pub struct Tokens {
    /// Tokens of the prompt, cached ones included.
    #[diesel(sql_type = BigInt)]
    pub prompt_tokens: i64,
    /// Prompt tokens served from the provider's cache.
    #[diesel(sql_type = BigInt)]
    pub cached_tokens: i64,
    /// Generated tokens, reasoning included.
    #[diesel(sql_type = BigInt)]
    pub completion_tokens: i64,
    /// Generated tokens spent on reasoning.
    #[diesel(sql_type = BigInt)]
    pub reasoning_tokens: i64,
    /// Prompt plus completion, as the provider reported it.
    #[diesel(sql_type = BigInt)]
    pub total_tokens: i64,
}

impl std::ops::Add for Tokens {
    type Output = Tokens;

    fn add(self, other: Tokens) -> Tokens {
        Tokens {
            prompt_tokens: self.prompt_tokens.saturating_add(other.prompt_tokens),
            cached_tokens: self.cached_tokens.saturating_add(other.cached_tokens),
            completion_tokens: self
                .completion_tokens
                .saturating_add(other.completion_tokens),
            reasoning_tokens: self.reasoning_tokens.saturating_add(other.reasoning_tokens),
            total_tokens: self.total_tokens.saturating_add(other.total_tokens),
        }
    }
}

impl std::iter::Sum for Tokens {
    fn sum<I: Iterator<Item = Tokens>>(iter: I) -> Tokens {
        iter.fold(Tokens::default(), |sum, tokens| sum + tokens)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn used(prompt: i64, cached: i64, completion: i64) -> Tokens {
        Tokens {
            prompt_tokens: prompt,
            cached_tokens: cached,
            completion_tokens: completion,
            ..Tokens::default()
        }
    }

    #[test]
    fn a_call_costs_its_uncached_cached_and_completion_tokens_at_their_prices() {
        let price = Price::from_dollars(3.0, Some(0.3), 15.0).unwrap();
        assert_eq!(price.input, Micros(3_000_000));
        // 1000 uncached × 3 + 1000 cached × 0.3 + 100 × 15 micro-dollars.
        assert_eq!(price.cost(&used(2000, 1000, 100)), Micros(4_800));
        assert_eq!(price.cost(&used(0, 0, 0)), Micros(0));
        assert_eq!(Price::default().cost(&used(5000, 0, 500)), Micros(0));
    }

    #[test]
    fn a_cost_rounds_to_the_nearest_micro_dollar_half_up() {
        let price = Price::from_dollars(0.5, None, 0.0).unwrap();
        assert_eq!(price.cost(&used(1, 0, 0)), Micros(1), "0.5 rounds up");
        let price = Price::from_dollars(0.4, None, 0.0).unwrap();
        assert_eq!(price.cost(&used(1, 0, 0)), Micros(0), "0.4 rounds down");
        assert_eq!(price.cost(&used(3, 0, 0)), Micros(1), "1.2 rounds down");
    }

    #[test]
    fn the_cached_price_defaults_to_the_input_price() {
        let price = Price::from_dollars(2.0, None, 1.0).unwrap();
        assert_eq!(price.cached_input, Micros(2_000_000));
        assert_eq!(price.output, Micros(1_000_000));
    }

    #[test]
    fn a_negative_or_unbounded_price_is_refused_naming_its_field() {
        assert_eq!(
            Price::from_dollars(-1.0, None, 1.0).unwrap_err().field,
            "input"
        );
        assert_eq!(
            Price::from_dollars(1.0, Some(f64::NAN), 1.0)
                .unwrap_err()
                .field,
            "cached_input"
        );
        assert_eq!(
            Price::from_dollars(1.0, None, f64::INFINITY)
                .unwrap_err()
                .field,
            "output"
        );
        assert_eq!(
            Micros::from_dollars(1e12),
            Some(Micros(1_000_000_000_000_000_000))
        );
        assert_eq!(Micros::from_dollars(1e13), None);
        let two_to_63_micros = 2f64.powi(63) / 1e6;
        assert_eq!(
            Micros::from_dollars(two_to_63_micros),
            None,
            "past i64::MAX"
        );
    }

    #[test]
    fn money_converts_to_dollars_and_sums_saturating() {
        assert_eq!(Micros::from_dollars(0.0025), Some(Micros(2_500)));
        assert!((Micros(2_500).dollars() - 0.0025).abs() < 1e-12);
        assert_eq!(
            [Micros(i64::MAX), Micros(1)].into_iter().sum::<Micros>(),
            Micros(i64::MAX)
        );
        let sum: Tokens = [used(1, 0, 2), used(10, 5, 20)].into_iter().sum();
        assert_eq!(sum, used(11, 5, 22));
    }
}
