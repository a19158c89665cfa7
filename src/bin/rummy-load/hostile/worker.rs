//! One hostile client: its own project (files, a symlink out of the root), then `act` or
//! `ask` loops back to back against the fuzzing model, every proposal accepted, rejected or
//! errored at random (an accepted one sometimes with a large output), until the deadline.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::replies::Rng;
use crate::client::{Answer, CallError, RpcClient};
use crate::stats::Latencies;

/// What one client saw.
#[derive(Debug, Default)]
pub(crate) struct WorkerTally {
    /// How long each loop took, from `act`/`ask` to its final status (resolutions included).
    pub loops: Latencies,
    /// Loops by final status (`200`, `413`, `error -32603`, …).
    pub statuses: std::collections::BTreeMap<String, u64>,
    /// Resolutions sent.
    pub resolutions: u64,
    /// Calls that got no reply before the deadline, or whose connection broke.
    pub unanswered: u64,
}

/// Where and until when a worker works.
pub(super) struct WorkerPlan<'a> {
    pub url: &'a str,
    pub token: Option<&'a str>,
    pub model: &'a str,
    pub deadline: Instant,
    pub timeout: Duration,
    pub projects_dir: &'a Path,
}

/// Lays out a project root the model can edit and try to escape from.
pub(super) fn lay_out_project(root: &Path) -> std::io::Result<()> {
    let source = root.join("src");
    std::fs::create_dir_all(&source)?;
    std::fs::write(
        source.join("main.rs"),
        "fn main() {\n    println!(\"old\");\n}\n",
    )?;
    std::fs::write(
        source.join("lib.py"),
        "def f():\n    return 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaac'\n",
    )?;
    std::fs::write(source.join("a.txt"), "a".repeat(200_000))?;
    std::fs::write(root.join("README.md"), "# hostile\nold\n")?;
    let link = source.join("escape");
    if std::fs::symlink_metadata(&link).is_err() {
        std::os::unix::fs::symlink("/etc", &link)?;
    }
    Ok(())
}

/// Client number `index`: loops until the deadline; what it saw.
pub(super) async fn run(plan: &WorkerPlan<'_>, index: usize, seed: u64) -> WorkerTally {
    let mut tally = WorkerTally::default();
    let mut rng = Rng::new(seed ^ (index as u64).wrapping_mul(0x9E37_79B9));
    let Ok(mut client) = RpcClient::connect(plan.url, plan.token, plan.timeout).await else {
        tally.unanswered += 1;
        return tally;
    };
    let name = format!("hostile-{index}");
    let root = plan.projects_dir.join(&name);
    let init = json!({"name": name, "projectRoot": root.display().to_string()});
    if !matches!(
        call(&mut client, plan, "init", init).await,
        Ok(Answer::Result(_))
    ) {
        tally.unanswered += 1;
        return tally;
    }
    while Instant::now() < plan.deadline {
        let started = Instant::now();
        let method = if rng.chance(70) { "act" } else { "ask" };
        let params = json!({
            "model": plan.model,
            "prompt": "Edit the project as you see fit.",
            "noRepo": rng.chance(20),
        });
        let mut answer = call(&mut client, plan, method, params).await;
        loop {
            match answer {
                Ok(Answer::Result(result)) if result["status"] == json!(202) => {
                    tally.resolutions += 1;
                    answer = resolve(&mut client, plan, &mut rng, &result).await;
                }
                Ok(Answer::Result(result)) => {
                    let status = result["status"].to_string();
                    *tally.statuses.entry(status).or_default() += 1;
                    tally.loops.record(started.elapsed());
                    break;
                }
                Ok(Answer::Error { code, .. }) => {
                    *tally.statuses.entry(format!("error {code}")).or_default() += 1;
                    tally.loops.record(started.elapsed());
                    break;
                }
                Err(CallError::Timeout) if Instant::now() >= plan.deadline => {
                    client.close(Duration::from_millis(200)).await;
                    return tally;
                }
                Err(_) => {
                    tally.unanswered += 1;
                    return tally;
                }
            }
        }
    }
    client.close(Duration::from_millis(200)).await;
    tally
}

/// Resolves the first proposal of a 202 at random.
async fn resolve(
    client: &mut RpcClient,
    plan: &WorkerPlan<'_>,
    rng: &mut Rng,
    result: &Value,
) -> Result<Answer, CallError> {
    let path = result["proposed"][0]["path"].clone();
    let action = *rng.pick(&["accept", "reject", "error"]);
    let output = if rng.chance(20) {
        "output ".repeat(30_000)
    } else {
        "ok\n".to_string()
    };
    let params = json!({
        "run": result["run"],
        "resolution": {"path": path, "action": action, "output": output},
    });
    call(client, plan, "run/resolve", params).await
}

/// One call, waiting at most the timeout and never past the deadline (a loop still running
/// then is left to the server).
async fn call(
    client: &mut RpcClient,
    plan: &WorkerPlan<'_>,
    method: &str,
    params: Value,
) -> Result<Answer, CallError> {
    let left = plan.deadline.saturating_duration_since(Instant::now());
    let wait = left.min(plan.timeout).max(Duration::from_millis(1));
    client
        .call(method, params, wait)
        .await
        .map(|(answer, _)| answer)
}
