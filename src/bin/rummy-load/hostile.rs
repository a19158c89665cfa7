//! `rummy-load hostile`: sustained hostile load, bounded in time. A fuzzing model (an
//! OpenAI-compatible server on `--llm-port`, seeded, see [`replies`]) answers every turn
//! with a hostile reply or an HTTP fault; `--clients` clients each run `act`/`ask` loops
//! in their own project and resolve proposals at random; meanwhile a fresh client probes
//! the server every `--probe-every-ms` (`ping`, then `init` + `getRuns`) and, with
//! `--server-pid`, the server's memory is sampled. The report gives the probes' latency
//! percentiles and failures, the loops' durations and statuses, and the memory's peak.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::Context;
use futures_util::future::join_all;
use rummy::testing::fake_llm::{FakeLlm, WhenExhausted, FAKE_MODEL_ID};
use serde_json::{json, Value};

use crate::client::RpcClient;
use crate::llm::{self, ServedModel};
use crate::stats::{Latencies, Percentiles};

mod probe;
pub(crate) mod replies;
mod worker;

use probe::{MemoryTally, ProbePlan, ProbeTally};
use worker::{WorkerPlan, WorkerTally};

/// Context size the fuzzing model reports.
const CONTEXT: u32 = 32_768;

/// Time after the deadline for the probes' last calls and the fuzzer to wind down.
const GRACE: Duration = Duration::from_secs(2);

/// What a hostile run does.
pub(crate) struct HostilePlan {
    /// `ws://host:port/` of the server.
    pub url: String,
    pub token: Option<String>,
    /// The port the fuzzing model listens on (the server's `OPENAI_BASE_URL`).
    pub llm_port: u16,
    pub clients: usize,
    pub duration: Duration,
    pub seed: u64,
    pub probe_every: Duration,
    /// Longest wait for one reply.
    pub timeout: Duration,
    pub server_pid: Option<u32>,
    /// Where the clients' projects are laid out (inside the server's `RUMMY_PROJECTS_DIR`
    /// when it has one).
    pub projects_dir: PathBuf,
    /// The alias the fuzzing model is registered under.
    pub model: String,
}

/// What a hostile run measured.
pub(crate) struct HostileReport {
    pub clients: usize,
    pub seed: u64,
    pub elapsed: Duration,
    pub llm_requests: usize,
    pub probes: ProbeTally,
    pub workers: WorkerTally,
    pub memory: Option<MemoryTally>,
}

/// Runs a hostile plan inside an actix system.
pub(crate) async fn run(plan: HostilePlan) -> anyhow::Result<HostileReport> {
    let model = replies::HostileModel::new(plan.seed);
    let address = std::net::SocketAddr::from(([127, 0, 0, 1], plan.llm_port));
    let fuzzer = FakeLlm::builder([])
        .address(address)
        .n_ctx(CONTEXT)
        .when_exhausted(WhenExhausted::Respond(std::sync::Arc::new(move |_| {
            model.answer()
        })))
        .forget_requests()
        .try_start()
        .with_context(|| format!("binding the fuzzing model on {address}"))?;
    register(&plan).await?;
    for index in 0..plan.clients {
        worker::lay_out_project(&plan.projects_dir.join(format!("hostile-{index}")))
            .context("laying out a project")?;
    }
    let started = Instant::now();
    let deadline = started + plan.duration;
    let probing = spawn_probes(&plan, deadline);
    let worker_plan = WorkerPlan {
        url: &plan.url,
        token: plan.token.as_deref(),
        model: &plan.model,
        deadline,
        timeout: plan.timeout,
        projects_dir: &plan.projects_dir,
    };
    let tallies =
        join_all((0..plan.clients).map(|index| worker::run(&worker_plan, index, plan.seed))).await;
    let mut workers = WorkerTally::default();
    for tally in tallies {
        workers.loops.merge(tally.loops);
        for (status, count) in tally.statuses {
            *workers.statuses.entry(status).or_default() += count;
        }
        workers.resolutions += tally.resolutions;
        workers.unanswered += tally.unanswered;
    }
    let (probes, memory) = probing
        .join()
        .map_err(|_| anyhow::anyhow!("the probe thread panicked"))?;
    let llm_requests = llm::completions_served(&format!("http://{address}"), plan.timeout)
        .await
        .unwrap_or_default() as usize;
    fuzzer.stop().await;
    Ok(HostileReport {
        clients: plan.clients,
        seed: plan.seed,
        elapsed: started.elapsed(),
        llm_requests,
        probes,
        workers,
        memory,
    })
}

/// Registers the fuzzing model under the plan's alias.
async fn register(plan: &HostilePlan) -> anyhow::Result<()> {
    let mut client = RpcClient::connect(&plan.url, plan.token.as_deref(), plan.timeout)
        .await
        .with_context(|| format!("connecting to {}", plan.url))?;
    let served = ServedModel {
        id: FAKE_MODEL_ID.to_string(),
        context: u64::from(CONTEXT),
    };
    llm::register(&mut client, &plan.model, &served, plan.timeout).await?;
    client.close(Duration::from_secs(1)).await;
    Ok(())
}

/// The probes and the memory sampler, on a thread and event loop of their own so the
/// clients' traffic in this process does not delay what they measure.
fn spawn_probes(
    plan: &HostilePlan,
    deadline: Instant,
) -> std::thread::JoinHandle<(ProbeTally, Option<MemoryTally>)> {
    let probe_plan = ProbePlan {
        url: plan.url.clone(),
        token: plan.token.clone(),
        every: plan.probe_every,
        deadline,
        timeout: plan.timeout,
        projects_dir: plan.projects_dir.clone(),
    };
    let server_pid = plan.server_pid;
    std::thread::spawn(move || {
        actix_web::rt::System::new().block_on(async move {
            let memory = async {
                match server_pid {
                    Some(pid) => Some(probe::sample_memory(pid, deadline + GRACE).await),
                    None => None,
                }
            };
            futures_util::future::join(probe::probe_until_deadline(probe_plan), memory).await
        })
    })
}

impl HostileReport {
    /// The report as one JSON object (latencies in milliseconds, memory in KiB).
    pub(crate) fn to_json(&self) -> Value {
        json!({
            "clients": self.clients,
            "seed": self.seed,
            "seconds": self.elapsed.as_secs_f64(),
            "llmRequests": self.llm_requests,
            "probes": self.probes.ping.count() + self.probes.failed.values().sum::<u64>() as usize,
            "probesFailed": self.probes.failed,
            "pingMs": percentiles_ms(&self.probes.ping),
            "initGetRunsMs": percentiles_ms(&self.probes.init_get_runs),
            "loops": self.workers.loops.count(),
            "loopMs": percentiles_ms(&self.workers.loops),
            "statuses": self.workers.statuses,
            "resolutions": self.workers.resolutions,
            "unanswered": self.workers.unanswered,
            "rssStartKib": self.memory.map(|memory| memory.start_kib),
            "rssPeakKib": self.memory.map(|memory| memory.peak_kib),
            "rssHighWaterKib": self.memory.map(|memory| memory.high_water_kib),
        })
    }

    /// The report as text.
    pub(crate) fn render(&self) -> String {
        let mut out = format!(
            "{} hostile clients for {:.1} s (seed {}): {} LLM requests, {} loops, {} resolutions, {} unanswered\n",
            self.clients,
            self.elapsed.as_secs_f64(),
            self.seed,
            self.llm_requests,
            self.workers.loops.count(),
            self.workers.resolutions,
            self.workers.unanswered,
        );
        out.push_str(&format!(
            "fresh-client probes: {} answered, {} failed\n",
            self.probes.ping.count(),
            self.probes.failed.values().sum::<u64>()
        ));
        for (failure, count) in &self.probes.failed {
            out.push_str(&format!("  probe failed {count:>4}  {failure}\n"));
        }
        for (label, latencies) in [
            ("probe ping (connect + ping)", &self.probes.ping),
            ("probe init + getRuns", &self.probes.init_get_runs),
            ("loop (act/ask to its end)", &self.workers.loops),
        ] {
            if let Some(summary) = latencies.summary() {
                out.push_str(&format!(
                    "{label:<30} p50 {} ms  p95 {} ms  p99 {} ms  max {} ms\n",
                    ms(summary.p50),
                    ms(summary.p95),
                    ms(summary.p99),
                    ms(summary.max)
                ));
            }
        }
        for (status, count) in &self.workers.statuses {
            out.push_str(&format!("  loops ending {status:<12} {count}\n"));
        }
        if let Some(memory) = self.memory {
            out.push_str(&format!(
                "server memory: VmRSS {:.1} MiB at start, peak {:.1} MiB sampled, VmHWM {:.1} MiB\n",
                memory.start_kib as f64 / 1024.0,
                memory.peak_kib as f64 / 1024.0,
                memory.high_water_kib as f64 / 1024.0,
            ));
        }
        out
    }
}

fn percentiles_ms(latencies: &Latencies) -> Value {
    match latencies.summary() {
        Some(Percentiles { p50, p95, p99, max }) => json!({
            "p50": p50 as f64 / 1000.0,
            "p95": p95 as f64 / 1000.0,
            "p99": p99 as f64 / 1000.0,
            "max": max as f64 / 1000.0,
        }),
        None => Value::Null,
    }
}

fn ms(micros: u64) -> String {
    format!("{:.1}", micros as f64 / 1000.0)
}
