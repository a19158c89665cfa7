//! What a newcomer sees while the hostile clients work: every interval a fresh client
//! connects and sends `ping`, then `init` and `getRuns`; and the server's resident memory,
//! sampled from `/proc/PID/status` (Linux, same machine).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::rc::Rc;
use std::time::{Duration, Instant};

use futures_util::future::join_all;
use serde_json::json;

use crate::client::{Answer, RpcClient};
use crate::proc_status;
use crate::stats::Latencies;

/// How often the server's memory is read.
const MEMORY_EVERY: Duration = Duration::from_millis(200);

/// What the probes measured.
#[derive(Debug, Default)]
pub(crate) struct ProbeTally {
    /// From opening the connection to `ping`'s answer.
    pub ping: Latencies,
    /// `init` then `getRuns`, both answered.
    pub init_get_runs: Latencies,
    /// Probes whose connection, `ping`, `init` or `getRuns` failed or got no answer in
    /// time, by what failed.
    pub failed: BTreeMap<String, u64>,
}

/// Where probes go and how long each may wait.
pub(super) struct ProbePlan {
    pub url: String,
    pub token: Option<String>,
    pub every: Duration,
    pub deadline: Instant,
    pub timeout: Duration,
    pub projects_dir: PathBuf,
}

/// Starts a probe every `every` until the deadline, each a task of its own (a slow one
/// does not delay the next), and gathers them.
pub(super) async fn probe_until_deadline(plan: ProbePlan) -> ProbeTally {
    let plan = Rc::new(plan);
    let mut probes = Vec::new();
    let mut next = Instant::now();
    while next < plan.deadline {
        tokio::time::sleep_until(next.into()).await;
        let number = probes.len();
        let shared = Rc::clone(&plan);
        probes.push(actix_web::rt::spawn(
            async move { probe(&shared, number).await },
        ));
        next += plan.every;
    }
    let mut tally = ProbeTally::default();
    for outcome in join_all(probes).await {
        match outcome.unwrap_or_else(|_| Err("the probe's task failed".into())) {
            Ok((ping, init_get_runs)) => {
                tally.ping.record(ping);
                tally.init_get_runs.record(init_get_runs);
            }
            Err(failure) => *tally.failed.entry(failure).or_default() += 1,
        }
    }
    tally
}

/// One fresh client: the time to its `ping` answer and to its `init` + `getRuns` answers,
/// or what failed.
async fn probe(plan: &ProbePlan, number: usize) -> Result<(Duration, Duration), String> {
    let started = Instant::now();
    let mut client = RpcClient::connect(&plan.url, plan.token.as_deref(), plan.timeout)
        .await
        .map_err(|error| format!("connect: {error}"))?;
    call(&mut client, "ping", json!({}), plan.timeout).await?;
    let ping = started.elapsed();
    let name = format!("hostile-probe-{}", number % 4);
    let root = plan.projects_dir.join(&name);
    let init_started = Instant::now();
    let init = json!({"name": name, "projectRoot": root.display().to_string()});
    call(&mut client, "init", init, plan.timeout).await?;
    call(&mut client, "getRuns", json!({"limit": 20}), plan.timeout).await?;
    let init_get_runs = init_started.elapsed();
    client.close(Duration::from_millis(200)).await;
    Ok((ping, init_get_runs))
}

/// One call that must succeed; what failed otherwise.
async fn call(
    client: &mut RpcClient,
    method: &str,
    params: serde_json::Value,
    timeout: Duration,
) -> Result<(), String> {
    match client.call(method, params, timeout).await {
        Ok((Answer::Result(_), _)) => Ok(()),
        Ok((Answer::Error { code, .. }, _)) => Err(format!("{method}: error {code}")),
        Err(error) => Err(format!("{method}: {error}")),
    }
}

/// The server's memory over the run, in KiB.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct MemoryTally {
    /// `VmRSS` before the clients started.
    pub start_kib: u64,
    /// The largest `VmRSS` sampled.
    pub peak_kib: u64,
    /// `VmHWM` at the end: the kernel's own peak, between samples too.
    pub high_water_kib: u64,
}

/// Samples `pid`'s memory until the deadline.
pub(super) async fn sample_memory(pid: u32, deadline: Instant) -> MemoryTally {
    let mut tally = MemoryTally {
        start_kib: proc_status::kib(pid, "VmRSS:").unwrap_or_default(),
        ..MemoryTally::default()
    };
    while Instant::now() < deadline {
        if let Some(rss) = proc_status::kib(pid, "VmRSS:") {
            tally.peak_kib = tally.peak_kib.max(rss);
        }
        tokio::time::sleep(MEMORY_EVERY).await;
    }
    tally.high_water_kib = proc_status::kib(pid, "VmHWM:").unwrap_or_default();
    tally
}
