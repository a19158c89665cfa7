//! Process counters, rendered in Prometheus text format at `GET /metrics`.

use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering};

/// Counters shared by every actor.
#[derive(Debug, Default)]
pub struct Metrics {
    connections_open: AtomicU64,
    connections_total: AtomicU64,
    requests_ok: AtomicU64,
    requests_failed: AtomicU64,
    turns_total: AtomicU64,
    llm_calls_total: AtomicU64,
    llm_latency_ms_total: AtomicU64,
    prompt_tokens_total: AtomicU64,
    completion_tokens_total: AtomicU64,
}

impl Metrics {
    pub fn connection_opened(&self) {
        self.connections_open.fetch_add(1, Ordering::Relaxed);
        self.connections_total.fetch_add(1, Ordering::Relaxed);
    }

    pub fn connection_closed(&self) {
        self.connections_open.fetch_sub(1, Ordering::Relaxed);
    }

    /// A request was answered.
    pub fn record_request(&self, ok: bool) {
        let counter = if ok {
            &self.requests_ok
        } else {
            &self.requests_failed
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }

    /// A turn finished; `latency_ms` is the LLM call's duration.
    pub fn record_turn(&self, latency_ms: u64, prompt_tokens: u64, completion_tokens: u64) {
        self.turns_total.fetch_add(1, Ordering::Relaxed);
        self.llm_calls_total.fetch_add(1, Ordering::Relaxed);
        self.llm_latency_ms_total
            .fetch_add(latency_ms, Ordering::Relaxed);
        self.prompt_tokens_total
            .fetch_add(prompt_tokens, Ordering::Relaxed);
        self.completion_tokens_total
            .fetch_add(completion_tokens, Ordering::Relaxed);
    }

    /// The Prometheus exposition; `runs_by_status` comes from the database.
    pub fn render(&self, runs_by_status: &[(i32, i64)]) -> String {
        let mut out = String::new();
        let gauges = [
            (
                "rummy_connections_open",
                "gauge",
                "Open client connections.",
                &self.connections_open,
            ),
            (
                "rummy_connections_total",
                "counter",
                "Client connections accepted.",
                &self.connections_total,
            ),
            (
                "rummy_turns_total",
                "counter",
                "Turns executed.",
                &self.turns_total,
            ),
            (
                "rummy_llm_calls_total",
                "counter",
                "LLM calls made.",
                &self.llm_calls_total,
            ),
            (
                "rummy_llm_latency_ms_total",
                "counter",
                "Milliseconds spent waiting for LLMs.",
                &self.llm_latency_ms_total,
            ),
            (
                "rummy_prompt_tokens_total",
                "counter",
                "Prompt tokens reported by providers.",
                &self.prompt_tokens_total,
            ),
            (
                "rummy_completion_tokens_total",
                "counter",
                "Completion tokens reported by providers.",
                &self.completion_tokens_total,
            ),
        ];
        for (name, kind, help, value) in gauges {
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
            let _ = writeln!(out, "{name} {}", value.load(Ordering::Relaxed));
        }
        let _ = writeln!(out, "# HELP rummy_requests_total RPC requests answered.\n# TYPE rummy_requests_total counter");
        let _ = writeln!(
            out,
            "rummy_requests_total{{outcome=\"ok\"}} {}",
            self.requests_ok.load(Ordering::Relaxed)
        );
        let _ = writeln!(
            out,
            "rummy_requests_total{{outcome=\"error\"}} {}",
            self.requests_failed.load(Ordering::Relaxed)
        );
        let _ = writeln!(
            out,
            "# HELP rummy_runs Runs by stored status.\n# TYPE rummy_runs gauge"
        );
        for (status, count) in runs_by_status {
            let _ = writeln!(out, "rummy_runs{{status=\"{status}\"}} {count}");
        }
        out
    }
}
