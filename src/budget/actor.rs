//! The Budget actor: per-run calibration of packet estimates against the provider's counts.
//!
//! Cheap and in memory only: it never touches the database (the turns table is the durable
//! record of usage, and what `getRun` and `run/state` report). A run's calibration starts at
//! identity the first time the run is mentioned; its run actor sends [`ForgetRun`] when it
//! stops (the run has no work left), so the map holds only runs with work under way.

use std::collections::HashMap;

use actix::prelude::*;

use crate::db::ids::RunId;
use crate::llm::Usage;

use super::calibration::{CalibratedMeasure, Calibration};
use super::tokens::{ActualTokens, EstimatedTokens};

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

/// Drop a run's calibration (its next turn starts from identity).
#[derive(Debug, Clone, Copy, Message)]
#[rtype(result = "()")]
pub struct ForgetRun {
    /// The run.
    pub run: RunId,
}

/// Owns the calibration of every run with work under way.
#[derive(Debug, Default)]
pub struct BudgetActor {
    runs: HashMap<RunId, Calibration>,
}

impl Actor for BudgetActor {
    type Context = Context<Self>;
}

impl Handler<RecordUsage> for BudgetActor {
    type Result = MessageResult<RecordUsage>;
    fn handle(&mut self, message: RecordUsage, _: &mut Context<Self>) -> Self::Result {
        let calibration = self.runs.entry(message.run).or_default();
        let actual = Some(ActualTokens::new(message.usage.prompt_tokens));
        calibration.observe(message.estimate, actual);
        MessageResult(*calibration)
    }
}

impl Handler<Calibrated> for BudgetActor {
    type Result = MessageResult<Calibrated>;
    fn handle(&mut self, message: Calibrated, _: &mut Context<Self>) -> Self::Result {
        let calibration = self.runs.get(&message.run).copied().unwrap_or_default();
        MessageResult(CalibratedMeasure {
            calibrated: calibration.apply(message.estimate),
            calibration,
        })
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

    fn usage(prompt_tokens: u64) -> Usage {
        Usage {
            prompt_tokens,
            completion_tokens: 10,
            total_tokens: prompt_tokens + 10,
            ..Usage::default()
        }
    }

    async fn calibrated(budget: &Addr<BudgetActor>, run: RunId, estimate: u64) -> u64 {
        budget
            .send(Calibrated {
                run,
                estimate: EstimatedTokens::new(estimate),
            })
            .await
            .unwrap()
            .calibrated
            .get()
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
                usage: usage(1500),
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
                usage: usage(200),
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
    }

    #[actix::test]
    async fn a_forgotten_run_starts_again_from_identity() {
        let budget = BudgetActor::default().start();
        let (run, other) = (RunId(9), RunId(10));
        for each in [run, other] {
            budget
                .send(RecordUsage {
                    run: each,
                    estimate: EstimatedTokens::new(1000),
                    usage: usage(2000),
                })
                .await
                .unwrap();
        }
        assert_eq!(calibrated(&budget, run, 100).await, 200);
        budget.send(ForgetRun { run }).await.unwrap();
        assert_eq!(calibrated(&budget, run, 100).await, 100, "state is gone");
        assert_eq!(
            calibrated(&budget, other, 100).await,
            200,
            "only that run's"
        );
    }
}
