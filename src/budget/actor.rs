//! The Budget actor: per-run calibration of packet estimates against the provider's counts.
//!
//! Cheap and in memory only: it never touches the database (the provider records each call's
//! usage, `llm::Ledger`; the turns table holds what `getRun` and `run/state` report of
//! turns), so a restart starts every run
//! from identity. A run's calibration starts at identity the first time the run is mentioned
//! and lasts the run's life, across its loops: a run has no last loop (an `ask` with `run`,
//! a resolution or an injection can always queue another), so its life here ends when it
//! has been idle longest. A run actor sends [`RunIdle`] when it stops; the
//! [`IDLE_RUNS`] runs idle most recently keep their calibration, and the oldest beyond them
//! is freed. Runs with a live actor are never freed.

use std::collections::{HashMap, VecDeque};

use actix::prelude::*;

use crate::db::ids::RunId;
use crate::llm::Usage;

use super::calibration::{CalibratedMeasure, Calibration};
use super::tokens::{ActualTokens, EstimatedTokens};

/// How many idle runs keep their calibration (16 bytes each, and their id).
pub(crate) const IDLE_RUNS: usize = 1024;

/// A turn's usage: the estimate of the packet it sent and what the provider reported.
#[derive(Debug, Clone, Copy, Message)]
#[rtype(result = "Calibration")]
pub(crate) struct RecordUsage {
    pub run: RunId,
    /// The assembled estimate of the packet sent.
    pub estimate: EstimatedTokens,
    /// The provider's usage (`prompt_tokens` 0 = not reported).
    pub usage: Usage,
}

/// Scale a packet estimate by the run's calibration.
#[derive(Debug, Clone, Copy, Message)]
#[rtype(result = "CalibratedMeasure")]
pub(crate) struct Calibrated {
    pub run: RunId,
    /// This turn's assembled estimate.
    pub estimate: EstimatedTokens,
}

/// The run's calibration as it stands, for a writer outside a turn: reading it revives no
/// idle run, so a client's calls on idle runs leave the idle runs as they were.
#[derive(Debug, Clone, Copy, Message)]
#[rtype(result = "Calibration")]
pub(crate) struct CalibrationOf {
    pub run: RunId,
}

/// The run's actor stopped (no loop is pending): its calibration joins the idle runs, where
/// the next loop finds it unless [`IDLE_RUNS`] runs have gone idle since.
#[derive(Debug, Clone, Copy, Message)]
#[rtype(result = "()")]
pub(crate) struct RunIdle {
    pub run: RunId,
}

/// Owns the calibration of every run with a live actor, and of the runs idle most recently.
#[derive(Debug)]
pub(crate) struct BudgetActor {
    live: HashMap<RunId, Calibration>,
    /// Least recently idle first.
    idle: VecDeque<(RunId, Calibration)>,
    idle_capacity: usize,
}

impl Default for BudgetActor {
    fn default() -> Self {
        BudgetActor::keeping_idle(IDLE_RUNS)
    }
}

impl BudgetActor {
    /// An actor keeping the calibration of the `idle_capacity` runs idle most recently.
    pub(crate) fn keeping_idle(idle_capacity: usize) -> BudgetActor {
        BudgetActor {
            live: HashMap::new(),
            idle: VecDeque::new(),
            idle_capacity,
        }
    }

    /// Brings the run's calibration back from the idle runs, if it is there.
    fn revive(&mut self, run: RunId) {
        if self.live.contains_key(&run) {
            return;
        }
        let Some(position) = self.idle.iter().position(|(idle, _)| *idle == run) else {
            return;
        };
        if let Some((_, calibration)) = self.idle.remove(position) {
            self.live.insert(run, calibration);
        }
    }

    fn record(&mut self, run: RunId, estimate: EstimatedTokens, usage: Usage) -> Calibration {
        self.revive(run);
        let calibration = self.live.entry(run).or_default();
        calibration.observe(estimate, Some(ActualTokens::new(usage.prompt_tokens)));
        *calibration
    }

    fn calibration(&mut self, run: RunId) -> Calibration {
        self.revive(run);
        self.live.get(&run).copied().unwrap_or_default()
    }

    fn peek(&self, run: RunId) -> Calibration {
        self.live
            .get(&run)
            .or_else(|| {
                self.idle
                    .iter()
                    .find(|(idle, _)| *idle == run)
                    .map(|(_, calibration)| calibration)
            })
            .copied()
            .unwrap_or_default()
    }

    fn park(&mut self, run: RunId) {
        let Some(calibration) = self.live.remove(&run) else {
            return;
        };
        self.idle.push_back((run, calibration));
        while self.idle.len() > self.idle_capacity {
            self.idle.pop_front();
        }
    }
}

impl Actor for BudgetActor {
    type Context = Context<Self>;
}

impl Handler<RecordUsage> for BudgetActor {
    type Result = MessageResult<RecordUsage>;
    fn handle(&mut self, message: RecordUsage, _: &mut Context<Self>) -> Self::Result {
        MessageResult(self.record(message.run, message.estimate, message.usage))
    }
}

impl Handler<Calibrated> for BudgetActor {
    type Result = MessageResult<Calibrated>;
    fn handle(&mut self, message: Calibrated, _: &mut Context<Self>) -> Self::Result {
        let calibration = self.calibration(message.run);
        MessageResult(CalibratedMeasure {
            calibrated: calibration.apply(message.estimate),
            calibration,
        })
    }
}

impl Handler<CalibrationOf> for BudgetActor {
    type Result = MessageResult<CalibrationOf>;
    fn handle(&mut self, message: CalibrationOf, _: &mut Context<Self>) -> Self::Result {
        MessageResult(self.peek(message.run))
    }
}

impl Handler<RunIdle> for BudgetActor {
    type Result = ();
    fn handle(&mut self, message: RunIdle, _: &mut Context<Self>) {
        self.park(message.run);
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

    async fn record(budget: &Addr<BudgetActor>, run: RunId, estimate: u64, actual: u64) {
        budget
            .send(RecordUsage {
                run,
                estimate: EstimatedTokens::new(estimate),
                usage: usage(actual),
            })
            .await
            .unwrap();
    }

    #[actix::test]
    async fn an_idle_run_keeps_its_calibration_for_its_next_loop() {
        let budget = BudgetActor::default().start();
        let (run, other) = (RunId(9), RunId(10));
        record(&budget, run, 1000, 2000).await;
        record(&budget, other, 1000, 3000).await;
        budget.send(RunIdle { run }).await.unwrap();
        assert_eq!(calibrated(&budget, run, 100).await, 200, "the next loop");
        assert_eq!(calibrated(&budget, other, 100).await, 300, "a live run");
        budget.send(RunIdle { run }).await.unwrap();
        record(&budget, run, 100, 400).await;
        assert_eq!(
            calibrated(&budget, run, 100).await,
            400,
            "a revived run calibrates as before"
        );
    }

    #[actix::test]
    async fn a_peek_at_an_idle_runs_calibration_leaves_it_idle() {
        let mut budget = BudgetActor::keeping_idle(1);
        budget.record(RunId(1), EstimatedTokens::new(100), usage(300));
        budget.park(RunId(1));
        let peeked = budget.peek(RunId(1)).apply(EstimatedTokens::new(100));
        assert_eq!(peeked.get(), 300);
        assert_eq!((budget.live.len(), budget.idle.len()), (0, 1));
        assert_eq!(budget.peek(RunId(2)), Calibration::default());
        let addr = budget.start();
        let calibration = addr.send(CalibrationOf { run: RunId(1) }).await.unwrap();
        assert_eq!(calibration.apply(EstimatedTokens::new(10)).get(), 30);
    }

    #[test]
    fn the_runs_idle_longest_are_freed_and_live_ones_never() {
        let mut budget = BudgetActor::keeping_idle(2);
        let runs = [RunId(1), RunId(2), RunId(3), RunId(4)];
        for (ratio, run) in (2..).zip(runs) {
            budget.record(run, EstimatedTokens::new(100), usage(100 * ratio));
        }
        for run in &runs[..3] {
            budget.park(*run);
        }
        assert_eq!((budget.live.len(), budget.idle.len()), (1, 2));
        let scaled = |budget: &mut BudgetActor, run| {
            budget
                .calibration(run)
                .apply(EstimatedTokens::new(100))
                .get()
        };
        assert_eq!(scaled(&mut budget, runs[0]), 100, "idle longest: freed");
        assert_eq!(scaled(&mut budget, runs[1]), 300);
        assert_eq!(scaled(&mut budget, runs[2]), 400);
        assert_eq!(scaled(&mut budget, runs[3]), 500, "live: kept");
        assert_eq!((budget.live.len(), budget.idle.len()), (3, 0));
        for run in runs {
            budget.park(run);
        }
        assert_eq!((budget.live.len(), budget.idle.len()), (0, 2));
    }
}
