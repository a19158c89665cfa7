//! The text report of a load run: throughput, latency per operation, errors by code,
//! connection failures and, when asks ran, loops and turns per second.

use std::fmt::Write;
use std::time::Duration;

use crate::stats::Tally;

/// What the report needs beside the merged tally.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RunFacts {
    /// Load connections asked for.
    pub connections: usize,
    /// Askers asked for.
    pub asks: usize,
    /// From the first connection attempt to the last worker's end.
    pub elapsed: Duration,
    /// Completions the fake LLM served during the run, when it could tell.
    pub llm_completions: Option<u64>,
}

pub(crate) fn render(tally: &Tally, facts: RunFacts) -> String {
    let seconds = facts.elapsed.as_secs_f64().max(f64::EPSILON);
    let mut out = String::new();
    let requests = tally.requests();
    let connect_failures: u64 = tally.connect_failures.values().sum();
    let _ = writeln!(
        out,
        "{} connections + {} askers for {:.1} s: {} requests, {:.1} req/s, {} failed",
        facts.connections,
        facts.asks,
        seconds,
        requests,
        requests as f64 / seconds,
        tally.failures(),
    );
    let _ = writeln!(
        out,
        "connections: {} failed to open, {} lost; {} notifications received",
        connect_failures, tally.connections_lost, tally.notifications
    );
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "{:<28} {:>8} {:>9} {:>8} {:>8} {:>8} {:>8} {:>7}",
        "operation", "count", "req/s", "p50 ms", "p95 ms", "p99 ms", "max ms", "failed"
    );
    for (label, operation) in &tally.operations {
        let count = operation.latencies.count();
        let Some(summary) = operation.latencies.summary() else {
            let _ = writeln!(
                out,
                "{label:<28} {count:>8} {:>9} {:>44}",
                "-",
                operation.failures()
            );
            continue;
        };
        let _ = writeln!(
            out,
            "{label:<28} {count:>8} {:>9.1} {:>8} {:>8} {:>8} {:>8} {:>7}",
            count as f64 / seconds,
            millis(summary.p50),
            millis(summary.p95),
            millis(summary.p99),
            millis(summary.max),
            operation.failures(),
        );
    }
    let errors = tally.errors_by_code();
    if !errors.is_empty() {
        let _ = writeln!(out);
        let _ = writeln!(out, "errors by code:");
        for (code, count) in &errors {
            let _ = writeln!(out, "  {code:<12} {count}");
        }
    }
    if !tally.connect_failures.is_empty() {
        let _ = writeln!(out);
        let _ = writeln!(out, "connection failures:");
        for (reason, count) in &tally.connect_failures {
            let _ = writeln!(out, "  {count:>6}  {reason}");
        }
    }
    if facts.asks > 0 {
        render_loops(&mut out, tally, facts, seconds);
    }
    out
}

fn render_loops(out: &mut String, tally: &Tally, facts: RunFacts, seconds: f64) {
    let loops: u64 = tally.loop_statuses.values().sum();
    let _ = writeln!(out);
    let _ = writeln!(
        out,
        "ask loops: {loops} ended, {:.2} loops/s",
        loops as f64 / seconds
    );
    for (status, count) in &tally.loop_statuses {
        let _ = writeln!(out, "  status {status:<10} {count}");
    }
    if let Some(turns) = facts.llm_completions {
        let per_loop = if loops == 0 {
            0.0
        } else {
            turns as f64 / loops as f64
        };
        let _ = writeln!(
            out,
            "LLM completions: {turns}, {:.2} turns/s, {per_loop:.2} per loop",
            turns as f64 / seconds
        );
    }
}

/// Microseconds as milliseconds with two decimals.
fn millis(micros: u64) -> String {
    format!("{:.2}", micros as f64 / 1000.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::Outcome;

    fn facts(asks: usize) -> RunFacts {
        RunFacts {
            connections: 2,
            asks,
            elapsed: Duration::from_secs(2),
            llm_completions: Some(6),
        }
    }

    #[test]
    fn the_report_shows_rates_latencies_and_errors() {
        let mut tally = Tally::default();
        tally.record("ping", Outcome::Ok, Some(Duration::from_micros(1_500)));
        tally.record("ping", Outcome::Ok, Some(Duration::from_micros(2_500)));
        tally.record(
            "set known://",
            Outcome::RpcError(-32602),
            Some(Duration::from_micros(900)),
        );
        tally.connect_failed("HTTP 401");
        let report = render(&tally, facts(0));
        assert!(
            report.contains("3 requests, 1.5 req/s, 1 failed"),
            "{report}"
        );
        assert!(report.contains("1 failed to open"), "{report}");
        let ping = report
            .lines()
            .find(|line| line.starts_with("ping"))
            .unwrap();
        let columns: Vec<&str> = ping.split_whitespace().collect();
        assert_eq!(
            columns,
            ["ping", "2", "1.0", "1.50", "2.50", "2.50", "2.50", "0"]
        );
        assert!(report.contains("-32602       1"), "{report}");
        assert!(report.contains("     1  HTTP 401"), "{report}");
        assert!(!report.contains("ask loops"), "{report}");
    }

    #[test]
    fn asks_report_loops_and_turns_per_second() {
        let mut tally = Tally::default();
        tally.record("ask", Outcome::Ok, Some(Duration::from_millis(20)));
        tally.loop_ended("200");
        tally.loop_ended("200");
        tally.loop_ended("413");
        let report = render(&tally, facts(1));
        assert!(
            report.contains("ask loops: 3 ended, 1.50 loops/s"),
            "{report}"
        );
        assert!(report.contains("status 200        2"), "{report}");
        assert!(
            report.contains("LLM completions: 6, 3.00 turns/s, 2.00 per loop"),
            "{report}"
        );
    }
}
