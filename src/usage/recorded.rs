//! What one answered call is recorded as, whatever its provider reported. A prompt or
//! completion count the provider left out (absent, negative, not a number, or 0) is the
//! estimate of its text; each count is at most the call's [`CallBound`] (ten times the
//! model's context, never above [`CallBound::MAX`]); the total is never below prompt plus
//! completion; the cost is at most [`CALL_COST_CEILING`]. So one absurd report cannot spend
//! a cap's month, every count fits PostgreSQL's `INTEGER` columns, and the ledger's sums
//! cannot overflow: an `i64` holds billions of calls at the bounds.

use super::{Micros, Tokens};

/// The most one call may cost: US$ 10 000, far above what any one call costs today.
pub(crate) const CALL_COST_CEILING: Micros = Micros(10_000 * 1_000_000);

/// The most each token count of one call may be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct CallBound(i64);

impl CallBound {
    /// No count is ever above a billion tokens (so a total, prompt plus completion, fits a
    /// 32-bit column), whatever the model.
    pub(crate) const MAX: i64 = 1_000_000_000;
    /// A count may be this many times the model's context: a prompt fills it at most once,
    /// the margin is for providers that count more than the prompt they were sent.
    const CONTEXTS: i64 = 10;

    /// The bound for a model whose context (the catalogue's) is `context` tokens; `None` or
    /// 0: not known, then [`CallBound::MAX`].
    pub(crate) fn of_context(context: Option<i32>) -> CallBound {
        let bound = context
            .filter(|tokens| *tokens > 0)
            .map_or(Self::MAX, |tokens| i64::from(tokens) * Self::CONTEXTS);
        CallBound(bound.min(Self::MAX))
    }

    #[cfg(test)]
    pub(crate) fn tokens(self) -> i64 {
        self.0
    }
}

/// What rummy's own token math makes of a call's texts: its request's messages (the prompt)
/// and its answer's content and reasoning (the completion).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Estimate {
    pub prompt: i64,
    pub completion: i64,
}

/// Where a recorded count is not what the provider reported.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Amended {
    /// The prompt or completion count was left out, and estimated.
    pub estimated: bool,
    /// A count, or the cost, was past its bound, and recorded at it.
    pub clamped: bool,
}

/// The counts `reported` (each 0 or more; 0 where the provider said nothing) as one call
/// records them, within `bound`, with the prompt and completion the provider left out taken
/// from `estimate`.
pub(crate) fn recorded_tokens(
    reported: Tokens,
    estimate: Estimate,
    bound: CallBound,
) -> (Tokens, Amended) {
    let mut amended = Amended::default();
    let mut or_estimate = |count: i64, estimated: i64| {
        if count > 0 {
            return count;
        }
        amended.estimated |= estimated > 0;
        estimated.max(0)
    };
    let prompt = or_estimate(reported.prompt_tokens, estimate.prompt);
    let completion = or_estimate(reported.completion_tokens, estimate.completion);
    let mut within = |count: i64| {
        if count > bound.0 {
            amended.clamped = true;
        }
        count.clamp(0, bound.0)
    };
    let tokens = Tokens {
        prompt_tokens: within(prompt),
        cached_tokens: within(reported.cached_tokens),
        completion_tokens: within(completion),
        reasoning_tokens: within(reported.reasoning_tokens),
        total_tokens: within(reported.total_tokens),
    };
    let total = tokens
        .total_tokens
        .max(tokens.prompt_tokens + tokens.completion_tokens);
    (
        Tokens {
            total_tokens: total,
            ..tokens
        },
        amended,
    )
}

/// `cost`, at most [`CALL_COST_CEILING`]; whether it was above.
pub(crate) fn recorded_cost(cost: Micros) -> (Micros, bool) {
    (cost.min(CALL_COST_CEILING), cost > CALL_COST_CEILING)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reported(prompt: i64, completion: i64, total: i64) -> Tokens {
        Tokens {
            prompt_tokens: prompt,
            completion_tokens: completion,
            total_tokens: total,
            ..Tokens::default()
        }
    }

    const GUESS: Estimate = Estimate {
        prompt: 40,
        completion: 3,
    };

    #[test]
    fn the_bound_is_ten_contexts_at_most_a_billion() {
        assert_eq!(CallBound::of_context(Some(32_768)).tokens(), 327_680);
        assert_eq!(CallBound::of_context(None).tokens(), CallBound::MAX);
        assert_eq!(CallBound::of_context(Some(0)).tokens(), CallBound::MAX);
        assert_eq!(CallBound::of_context(Some(-5)).tokens(), CallBound::MAX);
        assert_eq!(
            CallBound::of_context(Some(i32::MAX)).tokens(),
            CallBound::MAX
        );
        assert!(
            2 * CallBound::MAX < i64::from(i32::MAX),
            "a total fits a 32-bit column"
        );
    }

    #[test]
    fn reported_counts_within_the_bound_are_kept() {
        let bound = CallBound::of_context(Some(1_000));
        let used = Tokens {
            cached_tokens: 5,
            reasoning_tokens: 2,
            ..reported(100, 20, 120)
        };
        assert_eq!(
            recorded_tokens(used, GUESS, bound),
            (used, Amended::default())
        );
    }

    #[test]
    fn an_absurd_count_is_recorded_at_the_bound() {
        let bound = CallBound::of_context(Some(1_000));
        let (tokens, amended) = recorded_tokens(reported(i64::MAX, 20, i64::MAX), GUESS, bound);
        assert_eq!(tokens, reported(10_000, 20, 10_020));
        assert_eq!(
            amended,
            Amended {
                estimated: false,
                clamped: true
            }
        );
    }

    #[test]
    fn counts_left_out_are_estimated_and_the_total_is_never_below_their_sum() {
        let bound = CallBound::of_context(None);
        let (tokens, amended) = recorded_tokens(Tokens::default(), GUESS, bound);
        assert_eq!(tokens, reported(40, 3, 43));
        assert!(amended.estimated && !amended.clamped);
        let (tokens, _) = recorded_tokens(reported(0, 7, 1), GUESS, bound);
        assert_eq!(
            tokens,
            reported(40, 7, 47),
            "a prompt left out, a short total"
        );
        let (tokens, amended) = recorded_tokens(reported(0, 0, 0), Estimate::default(), bound);
        assert_eq!(tokens, Tokens::default(), "no text, nothing to count");
        assert!(!amended.estimated);
    }

    #[test]
    fn no_count_is_negative() {
        let (tokens, _) = recorded_tokens(
            Tokens {
                cached_tokens: -4,
                reasoning_tokens: -1,
                ..reported(-5, -6, -7)
            },
            Estimate::default(),
            CallBound::of_context(None),
        );
        assert_eq!(tokens, reported(0, 0, 0));
        let (tokens, _) = recorded_tokens(reported(-5, -6, -7), GUESS, CallBound::of_context(None));
        assert_eq!(
            tokens,
            reported(40, 3, 43),
            "a negative count is one left out"
        );
    }

    #[test]
    fn a_cost_above_the_ceiling_is_recorded_at_it() {
        assert_eq!(recorded_cost(Micros(5)), (Micros(5), false));
        assert_eq!(recorded_cost(CALL_COST_CEILING), (CALL_COST_CEILING, false));
        assert_eq!(recorded_cost(Micros(i64::MAX)), (CALL_COST_CEILING, true));
    }
}
