//! The Budget actor: per-run token accounting (calibration and cumulative usage).
//!
//! Cheap and in memory only: it never touches the database (the turns table remains the
//! durable record of usage). A run's state starts empty (identity calibration, zero totals)
//! the first time it is mentioned; [`ForgetRun`] drops it when the run is done.

use std::collections::HashMap;

use actix::prelude::*;

use crate::db::ids::RunId;
use crate::llm::Usage;

use super::calibration::{CalibratedMeasure, Calibration};
use super::tokens::{ActualTokens, EstimatedTokens};

/// Usage summed over the turns of a run.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct UsageTotals {
    /// Prompt tokens billed (cumulative: not a context size).
    pub prompt_tokens: u64,
    /// Prompt tokens served from cache.
    pub cached_tokens: u64,
    /// Tokens generated.
    pub completion_tokens: u64,
    /// Generated tokens spent on reasoning.
    pub reasoning_tokens: u64,
    /// Prompt plus completion.
    pub total_tokens: u64,
    /// Cost in US dollars.
    pub cost: f64,
    /// Turns recorded.
    pub turns: u64,
}

impl UsageTotals {
    fn add(&mut self, usage: &Usage) {
        self.prompt_tokens = self.prompt_tokens.saturating_add(usage.prompt_tokens);
        self.cached_tokens = self.cached_tokens.saturating_add(usage.cached_tokens);
        self.completion_tokens = self
            .completion_tokens
            .saturating_add(usage.completion_tokens);
        self.reasoning_tokens = self.reasoning_tokens.saturating_add(usage.reasoning_tokens);
        self.total_tokens = self.total_tokens.saturating_add(usage.total_tokens);
        if usage.cost.is_finite() && usage.cost > 0.0 {
            self.cost += usage.cost;
        }
        self.turns = self.turns.saturating_add(1);
    }
}

/// A turn's usage: the estimate of the packet it sent and what the provider reported.
#[derive(Debug, Clone, Copy, Message)]
#[rtype(result = "Calibration")]
pub struct RecordUsage {
    /// The run.
    pub run: RunId,
    /// The assembled estimate of the packet sent.
    pub estimate: EstimatedTokens,
    /// The provider's usage (`prompt_tokens` 0 = not reported).
    pub usage: Usage,
}

/// Scale a packet estimate by the run's calibration.
#[derive(Debug, Clone, Copy, Message)]
#[rtype(result = "CalibratedMeasure")]
pub struct Calibrated {
    /// The run.
    pub run: RunId,
    /// This turn's assembled estimate.
    pub estimate: EstimatedTokens,
}

/// The run's cumulative usage.
#[derive(Debug, Clone, Copy, Message)]
#[rtype(result = "UsageTotals")]
pub struct Totals {
    /// The run.
    pub run: RunId,
}

/// Drop a run's accounting.
#[derive(Debug, Clone, Copy, Message)]
#[rtype(result = "()")]
pub struct ForgetRun {
    /// The run.
    pub run: RunId,
}

#[derive(Debug, Default)]
struct RunAccount {
    calibration: Calibration,
    totals: UsageTotals,
}

/// Owns token accounting for every run.
#[derive(Debug, Default)]
pub struct BudgetActor {
    runs: HashMap<RunId, RunAccount>,
}

impl Actor for BudgetActor {
    type Context = Context<Self>;
}

impl Handler<RecordUsage> for BudgetActor {
    type Result = MessageResult<RecordUsage>;
    fn handle(&mut self, message: RecordUsage, _: &mut Context<Self>) -> Self::Result {
        let account = self.runs.entry(message.run).or_default();
        let actual = Some(ActualTokens::new(message.usage.prompt_tokens));
        account.calibration.observe(message.estimate, actual);
        account.totals.add(&message.usage);
        MessageResult(account.calibration)
    }
}

impl Handler<Calibrated> for BudgetActor {
    type Result = MessageResult<Calibrated>;
    fn handle(&mut self, message: Calibrated, _: &mut Context<Self>) -> Self::Result {
        let calibration = self
            .runs
            .get(&message.run)
            .map(|account| account.calibration)
            .unwrap_or_default();
        MessageResult(CalibratedMeasure {
            calibrated: calibration.apply(message.estimate),
            calibration,
        })
    }
}

impl Handler<Totals> for BudgetActor {
    type Result = MessageResult<Totals>;
    fn handle(&mut self, message: Totals, _: &mut Context<Self>) -> Self::Result {
        MessageResult(
            self.runs
                .get(&message.run)
                .map(|account| account.totals)
                .unwrap_or_default(),
        )
    }
}

impl Handler<ForgetRun> for BudgetActor {
    type Result = ();
    fn handle(&mut self, message: ForgetRun, _: &mut Context<Self>) {
        self.runs.remove(&message.run);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn usage(prompt_tokens: u64, completion_tokens: u64, cost: f64) -> Usage {
        Usage {
            prompt_tokens,
            cached_tokens: prompt_tokens / 2,
            completion_tokens,
            reasoning_tokens: completion_tokens / 4,
            total_tokens: prompt_tokens + completion_tokens,
            cost,
        }
    }

    #[actix::test]
    async fn usage_calibrates_the_next_estimate_of_that_run_only() {
        let budget = BudgetActor::default().start();
        let (run, other) = (RunId(1), RunId(2));
        let fresh = budget
            .send(Calibrated {
                run,
                estimate: EstimatedTokens::new(1000),
            })
            .await
            .unwrap();
        assert_eq!(fresh.calibrated.get(), 1000, "identity before any usage");

        let calibration = budget
            .send(RecordUsage {
                run,
                estimate: EstimatedTokens::new(1000),
                usage: usage(1500, 10, 0.0),
            })
            .await
            .unwrap();
        let measure = budget
            .send(Calibrated {
                run,
                estimate: EstimatedTokens::new(2000),
            })
            .await
            .unwrap();
        assert_eq!(measure.calibrated.get(), 3000);
        assert_eq!(measure.calibration, calibration);
        let untouched = budget
            .send(Calibrated {
                run: other,
                estimate: EstimatedTokens::new(2000),
            })
            .await
            .unwrap();
        assert_eq!(untouched.calibrated.get(), 2000);
    }

    #[actix::test]
    async fn a_turn_without_usage_keeps_the_calibration_and_still_counts() {
        let budget = BudgetActor::default().start();
        let run = RunId(5);
        budget
            .send(RecordUsage {
                run,
                estimate: EstimatedTokens::new(100),
                usage: usage(200, 0, 0.0),
            })
            .await
            .unwrap();
        budget
            .send(RecordUsage {
                run,
                estimate: EstimatedTokens::new(900),
                usage: Usage::default(),
            })
            .await
            .unwrap();
        let measure = budget
            .send(Calibrated {
                run,
                estimate: EstimatedTokens::new(900),
            })
            .await
            .unwrap();
        assert_eq!(
            measure.calibrated.get(),
            1800,
            "fresh estimate, last known ratio"
        );
        let totals = budget.send(Totals { run }).await.unwrap();
        assert_eq!(totals.turns, 2);
        assert_eq!(totals.prompt_tokens, 200);
    }

    #[actix::test]
    async fn totals_accumulate_every_counter_and_forget_clears_them() {
        let budget = BudgetActor::default().start();
        let run = RunId(9);
        for (prompt, completion, cost) in [(1000, 100, 0.25), (2000, 40, 0.5), (10, 8, f64::NAN)] {
            budget
                .send(RecordUsage {
                    run,
                    estimate: EstimatedTokens::new(prompt),
                    usage: usage(prompt, completion, cost),
                })
                .await
                .unwrap();
        }
        let totals = budget.send(Totals { run }).await.unwrap();
        assert_eq!(
            totals,
            UsageTotals {
                prompt_tokens: 3010,
                cached_tokens: 1505,
                completion_tokens: 148,
                reasoning_tokens: 37,
                total_tokens: 3158,
                cost: 0.75,
                turns: 3,
            }
        );
        budget.send(ForgetRun { run }).await.unwrap();
        assert_eq!(
            budget.send(Totals { run }).await.unwrap(),
            UsageTotals::default()
        );
    }
}
