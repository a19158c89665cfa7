//! What a load run measured: latencies per operation, outcomes by code, connection failures.
//!
//! Each worker fills its own [`Tally`]; the tallies are merged once at the end, so
//! recording never takes a lock.

use std::collections::BTreeMap;
use std::time::Duration;

/// Latencies of one operation, in microseconds, unsorted until summarized.
#[derive(Debug, Default, Clone)]
pub(crate) struct Latencies {
    micros: Vec<u64>,
}

impl Latencies {
    pub(crate) fn record(&mut self, latency: Duration) {
        self.micros
            .push(u64::try_from(latency.as_micros()).unwrap_or(u64::MAX));
    }

    /// How many were recorded.
    pub(crate) fn count(&self) -> usize {
        self.micros.len()
    }

    /// Adds another set of samples.
    pub(crate) fn merge(&mut self, other: Latencies) {
        self.micros.extend(other.micros);
    }

    /// The percentiles of what was recorded, or `None` when nothing was.
    pub(crate) fn summary(&self) -> Option<Percentiles> {
        let mut sorted = self.micros.clone();
        sorted.sort_unstable();
        let max = *sorted.last()?;
        Some(Percentiles {
            p50: nearest_rank(&sorted, 50),
            p95: nearest_rank(&sorted, 95),
            p99: nearest_rank(&sorted, 99),
            max,
        })
    }
}

/// The nearest-rank percentile of sorted, non-empty samples.
fn nearest_rank(sorted: &[u64], percent: usize) -> u64 {
    let rank = (sorted.len() * percent).div_ceil(100).max(1);
    sorted
        .get(rank - 1)
        .or(sorted.last())
        .copied()
        .unwrap_or_default()
}

/// Latency percentiles in microseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Percentiles {
    pub p50: u64,
    pub p95: u64,
    pub p99: u64,
    pub max: u64,
}

/// How one request ended, for counting.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Outcome {
    /// A `result` came back.
    Ok,
    /// A JSON-RPC `error` with this code came back.
    RpcError(i64),
    /// No reply within the request timeout.
    Timeout,
    /// The connection closed or broke before the reply.
    Transport,
}

impl Outcome {
    /// The label used in the report's error table.
    pub(crate) fn label(&self) -> String {
        match self {
            Outcome::Ok => "ok".into(),
            Outcome::RpcError(code) => code.to_string(),
            Outcome::Timeout => "timeout".into(),
            Outcome::Transport => "transport".into(),
        }
    }
}

/// Everything one operation label measured.
#[derive(Debug, Default, Clone)]
pub(crate) struct OperationTally {
    /// Latencies of every request that got an answer (result or error).
    pub latencies: Latencies,
    /// Requests by outcome.
    pub outcomes: BTreeMap<Outcome, u64>,
}

impl OperationTally {
    /// Requests that did not end in [`Outcome::Ok`].
    pub(crate) fn failures(&self) -> u64 {
        self.outcomes
            .iter()
            .filter(|(outcome, _)| **outcome != Outcome::Ok)
            .map(|(_, count)| count)
            .sum()
    }
}

/// What one worker (or, merged, the whole run) measured.
#[derive(Debug, Default, Clone)]
pub(crate) struct Tally {
    /// Per operation label.
    pub operations: BTreeMap<String, OperationTally>,
    /// Connections that never opened, by reason.
    pub connect_failures: BTreeMap<String, u64>,
    /// Connections that opened and then broke or closed before the end.
    pub connections_lost: u64,
    /// Notifications received (not replies).
    pub notifications: u64,
    /// `ask` loops by the `status` of their result (`-` when it had none).
    pub loop_statuses: BTreeMap<String, u64>,
}

impl Tally {
    /// Records one request of `label`; `latency` is `None` when no answer came.
    pub(crate) fn record(&mut self, label: &str, outcome: Outcome, latency: Option<Duration>) {
        let operation = self.operations.entry(label.to_string()).or_default();
        if let Some(latency) = latency {
            operation.latencies.record(latency);
        }
        *operation.outcomes.entry(outcome).or_default() += 1;
    }

    /// Records a connection that could not be opened.
    pub(crate) fn connect_failed(&mut self, reason: &str) {
        *self.connect_failures.entry(reason.to_string()).or_default() += 1;
    }

    /// Records the status an `ask` loop ended with.
    pub(crate) fn loop_ended(&mut self, status: &str) {
        *self.loop_statuses.entry(status.to_string()).or_default() += 1;
    }

    /// Every request recorded, whatever its outcome.
    pub(crate) fn requests(&self) -> u64 {
        self.operations
            .values()
            .flat_map(|operation| operation.outcomes.values())
            .sum()
    }

    /// Every request that did not succeed.
    pub(crate) fn failures(&self) -> u64 {
        self.operations.values().map(OperationTally::failures).sum()
    }

    /// Failed requests by outcome label, over every operation.
    pub(crate) fn errors_by_code(&self) -> BTreeMap<String, u64> {
        let mut errors = BTreeMap::new();
        for operation in self.operations.values() {
            for (outcome, count) in &operation.outcomes {
                if *outcome != Outcome::Ok {
                    *errors.entry(outcome.label()).or_default() += count;
                }
            }
        }
        errors
    }

    /// Adds another tally into this one.
    pub(crate) fn merge(&mut self, other: Tally) {
        for (label, theirs) in other.operations {
            let ours = self.operations.entry(label).or_default();
            ours.latencies.merge(theirs.latencies);
            add_counts(&mut ours.outcomes, theirs.outcomes);
        }
        add_counts(&mut self.connect_failures, other.connect_failures);
        add_counts(&mut self.loop_statuses, other.loop_statuses);
        self.connections_lost += other.connections_lost;
        self.notifications += other.notifications;
    }
}

fn add_counts<K: Ord>(into: &mut BTreeMap<K, u64>, from: BTreeMap<K, u64>) {
    for (key, count) in from {
        *into.entry(key).or_default() += count;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn latencies(micros: impl IntoIterator<Item = u64>) -> Latencies {
        let mut latencies = Latencies::default();
        for micro in micros {
            latencies.record(Duration::from_micros(micro));
        }
        latencies
    }

    #[test]
    fn percentiles_use_the_nearest_rank() {
        let summary = latencies((1..=200).rev()).summary().unwrap();
        assert_eq!(
            summary,
            Percentiles {
                p50: 100,
                p95: 190,
                p99: 198,
                max: 200
            }
        );
    }

    #[test]
    fn one_sample_is_every_percentile() {
        let summary = latencies([7]).summary().unwrap();
        assert_eq!((summary.p50, summary.p99, summary.max), (7, 7, 7));
    }

    #[test]
    fn nothing_recorded_has_no_summary() {
        assert_eq!(Latencies::default().summary(), None);
    }

    #[test]
    fn merged_tallies_add_counts_and_samples() {
        let mut first = Tally::default();
        first.record("ping", Outcome::Ok, Some(Duration::from_micros(10)));
        first.record(
            "set",
            Outcome::RpcError(-32602),
            Some(Duration::from_micros(5)),
        );
        first.connect_failed("refused");
        let mut second = Tally::default();
        second.record("ping", Outcome::Ok, Some(Duration::from_micros(30)));
        second.record("ping", Outcome::Timeout, None);
        second.record(
            "set",
            Outcome::RpcError(-32602),
            Some(Duration::from_micros(5)),
        );
        second.connect_failed("refused");
        second.connections_lost = 2;
        second.loop_ended("200");
        first.merge(second);

        assert_eq!(first.requests(), 5);
        assert_eq!(first.failures(), 3);
        let ping = &first.operations["ping"];
        assert_eq!(ping.latencies.count(), 2);
        assert_eq!(ping.latencies.summary().unwrap().max, 30);
        let errors: Vec<(String, u64)> = first.errors_by_code().into_iter().collect();
        assert_eq!(errors, vec![("-32602".into(), 2), ("timeout".into(), 1)]);
        assert_eq!(first.connect_failures["refused"], 2);
        assert_eq!(first.connections_lost, 2);
        assert_eq!(first.loop_statuses["200"], 1);
    }
}
