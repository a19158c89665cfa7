//! Process metrics, rendered in Prometheus text format at `GET /metrics`. Counters are kept
//! where things happen: connections and requests by the sessions, turns by the turn
//! executor, LLM calls by each provider's actor ([`ProviderMetrics`]); what the store holds
//! (runs by status, the loop queue) is read at scrape time ([`StoreGauges`]); what model
//! calls used and cost, by model and project, is counted by the ledger as it records them
//! ([`Metrics::record_spending`]); the work the server does (statements, units of work,
//! frames) by the [`WorkCounters`] it holds.

mod work;

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::usage::{Micros, Tokens};
pub(crate) use work::{StatementsOn, WorkCounters};

/// The counters shared by the sessions and the agent.
#[derive(Debug, Default)]
pub(crate) struct Metrics {
    connections_open: AtomicU64,
    connections_total: AtomicU64,
    requests_ok: AtomicU64,
    requests_failed: AtomicU64,
    turns_total: AtomicU64,
    /// By (model, project): what the calls this instance recorded used and cost.
    spending: Mutex<BTreeMap<(String, String), Spent>>,
    work: Arc<WorkCounters>,
}

/// What the recorded calls of one model in one project used and cost.
#[derive(Debug, Default, Clone, Copy)]
struct Spent {
    calls: u64,
    tokens: Tokens,
    cost: Micros,
}

/// What one provider's actor counts of its calls.
#[derive(Debug, Default)]
pub struct ProviderMetrics {
    requests: AtomicU64,
    completions: AtomicU64,
    completion_micros: AtomicU64,
    errors: AtomicU64,
    prompt_tokens: AtomicU64,
    completion_tokens: AtomicU64,
    in_flight: AtomicU64,
    waiting: AtomicU64,
}

/// What the store holds at scrape time.
#[derive(Debug, Default)]
pub(crate) struct StoreGauges {
    /// `(status code, runs)`.
    pub runs_by_status: Vec<(i32, i64)>,
    /// Loops waiting to run.
    pub loops_pending: i64,
    /// Loops running.
    pub loops_running: i64,
    /// Runs with a loop pending or running.
    pub runs_with_work: i64,
}

/// One unit of a gauge, given back when dropped.
#[must_use = "the gauge goes down again when this is dropped"]
pub struct Held<'a>(&'a AtomicU64);

impl Drop for Held<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

fn hold(gauge: &AtomicU64) -> Held<'_> {
    gauge.fetch_add(1, Ordering::Relaxed);
    Held(gauge)
}

impl Metrics {
    pub(crate) fn connection_opened(&self) {
        self.connections_open.fetch_add(1, Ordering::Relaxed);
        self.connections_total.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn connection_closed(&self) {
        self.connections_open.fetch_sub(1, Ordering::Relaxed);
    }

    /// A request was answered.
    pub(crate) fn record_request(&self, ok: bool) {
        let counter = if ok {
            &self.requests_ok
        } else {
            &self.requests_failed
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }

    /// A turn got its reply from the model.
    pub(crate) fn record_turn(&self) {
        self.turns_total.fetch_add(1, Ordering::Relaxed);
    }

    /// What the server's work is counted in, shared with whatever does it.
    pub(crate) fn work(&self) -> &Arc<WorkCounters> {
        &self.work
    }

    /// A call of `model` (its provider id) in `project` was recorded: what it used and cost.
    pub(crate) fn record_spending(&self, model: &str, project: &str, used: &Tokens, cost: Micros) {
        let mut spending = self
            .spending
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let spent = spending
            .entry((model.to_owned(), project.to_owned()))
            .or_default();
        spent.calls = spent.calls.saturating_add(1);
        spent.tokens = spent.tokens + *used;
        spent.cost = [spent.cost, cost].into_iter().sum();
    }

    /// The Prometheus exposition of these counters, of `store`, of the bytes kept for
    /// `run/replay` and of each provider's calls.
    pub(crate) fn render(
        &self,
        store: &StoreGauges,
        replay_bytes: usize,
        providers: &[(&str, &ProviderMetrics)],
    ) -> String {
        let mut out = Exposition::default();
        let load = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
        out.family(
            "rummy_connections_open",
            "gauge",
            "Open client connections.",
        );
        out.sample("rummy_connections_open", "", load(&self.connections_open));
        out.family(
            "rummy_connections_total",
            "counter",
            "Client connections accepted.",
        );
        out.sample("rummy_connections_total", "", load(&self.connections_total));
        out.family("rummy_requests_total", "counter", "RPC requests answered.");
        out.sample(
            "rummy_requests_total",
            "outcome=\"ok\"",
            load(&self.requests_ok),
        );
        out.sample(
            "rummy_requests_total",
            "outcome=\"error\"",
            load(&self.requests_failed),
        );
        out.family(
            "rummy_turns_total",
            "counter",
            "Turns that got the model's reply.",
        );
        out.sample("rummy_turns_total", "", load(&self.turns_total));
        out.family("rummy_runs", "gauge", "Runs by stored status.");
        for (status, count) in &store.runs_by_status {
            out.sample("rummy_runs", &format!("status=\"{status}\""), count);
        }
        out.family("rummy_loops", "gauge", "Loops waiting or running.");
        out.sample("rummy_loops", "state=\"pending\"", store.loops_pending);
        out.sample("rummy_loops", "state=\"running\"", store.loops_running);
        out.family(
            "rummy_runs_with_work",
            "gauge",
            "Runs with a loop waiting or running.",
        );
        out.sample("rummy_runs_with_work", "", store.runs_with_work);
        out.family(
            "rummy_replay_bytes",
            "gauge",
            "Bytes of notifications the event log keeps for run/replay, every run together.",
        );
        out.sample("rummy_replay_bytes", "", replay_bytes);
        self.work.render(&mut out);
        out.providers(providers);
        let spending = self
            .spending
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone();
        out.spending(&spending);
        out.text
    }
}

impl ProviderMetrics {
    /// A completion arrived after `duration` (its retries included).
    pub fn record_completion(
        &self,
        duration: Duration,
        prompt_tokens: u64,
        completion_tokens: u64,
    ) {
        let micros = u64::try_from(duration.as_micros()).unwrap_or(u64::MAX);
        self.completions.fetch_add(1, Ordering::Relaxed);
        self.completion_micros.fetch_add(micros, Ordering::Relaxed);
        add_saturating(&self.prompt_tokens, prompt_tokens);
        add_saturating(&self.completion_tokens, completion_tokens);
    }

    /// A completion failed for good (not cancelled).
    pub fn record_error(&self) {
        self.errors.fetch_add(1, Ordering::Relaxed);
    }

    /// A call waiting for one of the provider's slots, while held.
    pub fn waiting(&self) -> Held<'_> {
        hold(&self.waiting)
    }

    /// A request holding one of the provider's slots, while held: every request made to
    /// the provider holds one, so each is counted here as made.
    pub fn in_flight(&self) -> Held<'_> {
        self.requests.fetch_add(1, Ordering::Relaxed);
        hold(&self.in_flight)
    }

    /// Requests made to the provider so far (each attempt of a call, context discovery
    /// included).
    #[cfg(feature = "testing")]
    pub(crate) fn requests(&self) -> u64 {
        self.requests.load(Ordering::Relaxed)
    }
}

/// Prometheus text being written.
#[derive(Default)]
struct Exposition {
    text: String,
}

impl Exposition {
    fn family(&mut self, name: &str, kind: &str, help: &str) {
        let _ = writeln!(self.text, "# HELP {name} {help}\n# TYPE {name} {kind}");
    }

    fn sample(&mut self, name: &str, labels: &str, value: impl std::fmt::Display) {
        let _ = if labels.is_empty() {
            writeln!(self.text, "{name} {value}")
        } else {
            writeln!(self.text, "{name}{{{labels}}} {value}")
        };
    }

    /// Each measure of the providers' calls: one family, one sample per provider.
    fn providers(&mut self, providers: &[(&str, &ProviderMetrics)]) {
        let each = |out: &mut Self, sample: &str, measure: fn(&ProviderMetrics) -> String| {
            for (provider, metrics) in providers {
                out.sample(
                    sample,
                    &format!("provider=\"{provider}\""),
                    measure(metrics),
                );
            }
        };
        self.family(
            "rummy_llm_requests_total",
            "counter",
            "Requests made to the provider: each attempt of a call, context discovery included.",
        );
        each(self, "rummy_llm_requests_total", |m| count(&m.requests));
        self.family(
            "rummy_llm_duration_seconds",
            "summary",
            "Completions received, and the seconds each took with its retries.",
        );
        each(self, "rummy_llm_duration_seconds_sum", |m| {
            let micros = m.completion_micros.load(Ordering::Relaxed);
            format!("{:.6}", micros as f64 / 1e6)
        });
        each(self, "rummy_llm_duration_seconds_count", |m| {
            count(&m.completions)
        });
        self.family(
            "rummy_llm_errors_total",
            "counter",
            "Completions that failed after their retries.",
        );
        each(self, "rummy_llm_errors_total", |m| count(&m.errors));
        self.family(
            "rummy_llm_prompt_tokens_total",
            "counter",
            "Prompt tokens the provider reported.",
        );
        each(self, "rummy_llm_prompt_tokens_total", |m| {
            count(&m.prompt_tokens)
        });
        self.family(
            "rummy_llm_completion_tokens_total",
            "counter",
            "Completion tokens the provider reported.",
        );
        each(self, "rummy_llm_completion_tokens_total", |m| {
            count(&m.completion_tokens)
        });
        self.family(
            "rummy_llm_in_flight",
            "gauge",
            "Requests holding one of the provider's slots (RUMMY_PROVIDER_CONCURRENCY).",
        );
        each(self, "rummy_llm_in_flight", |m| count(&m.in_flight));
        self.family(
            "rummy_llm_waiting",
            "gauge",
            "Calls waiting for a slot of the provider.",
        );
        each(self, "rummy_llm_waiting", |m| count(&m.waiting));
    }
}

impl Exposition {
    /// The recorded calls' usage and cost: one sample per model and project.
    fn spending(&mut self, spending: &BTreeMap<(String, String), Spent>) {
        let each = |out: &mut Self, sample: &str, kind: &str, measure: fn(&Spent) -> i64| {
            for ((model, project), spent) in spending {
                let labels = format!(
                    "model=\"{}\",project=\"{}\"{kind}",
                    label(model),
                    label(project)
                );
                out.sample(sample, &labels, measure(spent));
            }
        };
        self.family(
            "rummy_model_calls_total",
            "counter",
            "Answered model calls recorded, by model and project.",
        );
        each(self, "rummy_model_calls_total", "", |spent| {
            i64::try_from(spent.calls).unwrap_or(i64::MAX)
        });
        self.family(
            "rummy_model_tokens_total",
            "counter",
            "Tokens of the recorded calls, by model, project and kind (prompt, cached, completion).",
        );
        each(
            self,
            "rummy_model_tokens_total",
            ",kind=\"prompt\"",
            |spent| spent.tokens.prompt_tokens,
        );
        each(
            self,
            "rummy_model_tokens_total",
            ",kind=\"cached\"",
            |spent| spent.tokens.cached_tokens,
        );
        each(
            self,
            "rummy_model_tokens_total",
            ",kind=\"completion\"",
            |spent| spent.tokens.completion_tokens,
        );
        self.family(
            "rummy_model_cost_micro_dollars_total",
            "counter",
            "Cost of the recorded calls in micro-dollars, by model and project.",
        );
        each(self, "rummy_model_cost_micro_dollars_total", "", |spent| {
            spent.cost.0
        });
    }
}

/// A label value escaped for the exposition format.
fn label(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// Adds `amount` to `counter`, stopping at `u64::MAX`: a provider's absurd report never
/// wraps a counter (Prometheus would read a wrap as a reset).
fn add_saturating(counter: &AtomicU64, amount: u64) {
    let _ = counter.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |now| {
        Some(now.saturating_add(amount))
    });
}

fn count(counter: &AtomicU64) -> String {
    counter.load(Ordering::Relaxed).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reported_tokens_past_any_bound_stop_at_the_largest_count_and_never_wrap() {
        let openai = ProviderMetrics::default();
        openai.record_completion(Duration::from_millis(1), 7, 3);
        openai.record_completion(Duration::from_millis(1), u64::MAX, u64::MAX - 1);
        openai.record_completion(Duration::from_millis(1), 5, 5);
        assert_eq!(openai.prompt_tokens.load(Ordering::Relaxed), u64::MAX);
        assert_eq!(openai.completion_tokens.load(Ordering::Relaxed), u64::MAX);
    }

    #[test]
    fn each_family_is_declared_before_its_samples() {
        let metrics = Metrics::default();
        metrics.connection_opened();
        let openai = ProviderMetrics::default();
        drop(openai.in_flight());
        openai.record_completion(Duration::from_millis(1500), 1200, 34);
        let store = StoreGauges {
            runs_by_status: vec![(200, 3)],
            loops_pending: 2,
            loops_running: 1,
            runs_with_work: 1,
        };
        let used = |prompt: i64, cached: i64, completion: i64| Tokens {
            prompt_tokens: prompt,
            cached_tokens: cached,
            completion_tokens: completion,
            ..Tokens::default()
        };
        metrics.record_spending("openai/x", "a\"b", &used(10, 4, 3), Micros(500));
        metrics.record_spending("openai/x", "a\"b", &used(20, 0, 4), Micros(1000));
        let text = metrics.render(&store, 0, &[("openai", &openai)]);
        let mut declared = Vec::new();
        for line in text.lines() {
            if let Some(family) = line.strip_prefix("# TYPE ") {
                declared.push(family.split(' ').next().unwrap().to_string());
                continue;
            }
            if line.starts_with('#') {
                continue;
            }
            let name = line.split(['{', ' ']).next().unwrap();
            assert!(
                declared.iter().any(|family| {
                    name == family
                        || name
                            .strip_prefix(family.as_str())
                            .is_some_and(|suffix| ["_sum", "_count"].contains(&suffix))
                }),
                "{name} has no # TYPE before it:\n{text}"
            );
        }
        for expected in [
            "# TYPE rummy_llm_duration_seconds summary",
            "rummy_llm_requests_total{provider=\"openai\"} 1",
            "# TYPE rummy_sql_statements_total counter",
            "rummy_llm_duration_seconds_sum{provider=\"openai\"} 1.500000",
            "rummy_llm_duration_seconds_count{provider=\"openai\"} 1",
            "rummy_llm_prompt_tokens_total{provider=\"openai\"} 1200",
            "rummy_connections_open 1",
            "rummy_runs{status=\"200\"} 3",
            "rummy_loops{state=\"pending\"} 2",
            "rummy_model_calls_total{model=\"openai/x\",project=\"a\\\"b\"} 2",
            "rummy_model_tokens_total{model=\"openai/x\",project=\"a\\\"b\",kind=\"prompt\"} 30",
            "rummy_model_tokens_total{model=\"openai/x\",project=\"a\\\"b\",kind=\"cached\"} 4",
            "rummy_model_tokens_total{model=\"openai/x\",project=\"a\\\"b\",kind=\"completion\"} 7",
            "rummy_model_cost_micro_dollars_total{model=\"openai/x\",project=\"a\\\"b\"} 1500",
        ] {
            assert!(
                text.lines().any(|line| line == expected),
                "{expected}:\n{text}"
            );
        }
    }
}
