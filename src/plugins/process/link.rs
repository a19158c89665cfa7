//! [`Link`]: one plugin process, kept running. It is started with its handshake
//! (`initialize`, given at least 10 s), spoken to in JSON-RPC 2.0 lines (requests with ids, answered in any
//! order; notifications), and its stderr goes to the log, cut. A call waits at most the
//! timeout. A crash, a timeout or a line on stdout that is not JSON-RPC is a failure: the
//! process is killed, calls fail at once during a backoff (0.1 s, doubling, at most 30 s),
//! after which the process is started again. After `max_failures` failures in a row the
//! plugin is disabled until the server restarts (a log line, and its state in
//! `plugins/status`). Only a call answered, not a handshake, ends a run of failures; an
//! error the plugin answers is no failure. A plugin whose first handshake fails is
//! disabled at once (it never registered anything).

use std::collections::HashMap;
use std::ops::ControlFlow;
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tokio::io::{AsyncRead, AsyncWriteExt};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use super::declaration::Declaration;
use super::pipes::{self, Ended};
use super::protocol::{Initialize, Manifest, INITIALIZE, PROTOCOL_VERSION};

/// The first wait before a restart; it doubles with each failure in a row.
const FIRST_BACKOFF: Duration = Duration::from_millis(100);
/// The longest wait before a restart.
const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// The least time a handshake is given (an interpreter may take a while to start), even
/// when calls have less.
const HANDSHAKE_PATIENCE: Duration = Duration::from_secs(10);

/// Why a call to a plugin failed.
#[derive(Debug, Clone, thiserror::Error)]
pub(crate) enum CallError {
    #[error("the plugin cannot be started: {0}")]
    Spawn(String),
    #[error("the plugin did not answer within {0} ms")]
    Timeout(u128),
    #[error("the plugin stopped")]
    Crashed,
    #[error("the plugin wrote what is not JSON-RPC: {0}")]
    Garbage(String),
    #[error("the plugin failed and restarts in {0} ms")]
    Restarting(u128),
    #[error("the plugin is disabled after {0} failures in a row")]
    Disabled(u32),
    /// The plugin answered with an error: it is running well.
    #[error("{message}")]
    Answered { code: i64, message: String },
}

/// The process as it stands.
enum Phase {
    /// Not running: started again once `retry_at` has passed (by the restart its failure
    /// scheduled, or by a call).
    Stopped {
        retry_at: Instant,
    },
    Running(Arc<Process>),
    Disabled,
}

/// What a client reads of a plugin's process (`plugins/status`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Health {
    Running,
    /// Failed; it starts again after its backoff.
    Restarting,
    Disabled,
}

struct State {
    phase: Phase,
    /// Failures since the last success.
    failures: u32,
    /// Processes started after the first.
    restarts: u32,
    last_error: Option<String>,
    /// The process whose failure was counted last.
    counted: Option<u64>,
}

/// One running process.
struct Process {
    /// Its place in the link's starts, so a late failure of a process already replaced is
    /// not counted twice.
    generation: u64,
    lines: mpsc::UnboundedSender<String>,
    pending: Mutex<HashMap<u64, oneshot::Sender<Result<Value, CallError>>>>,
    /// Kills it.
    stop: CancellationToken,
}

impl Drop for Process {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

/// One plugin process, started again after failures.
pub(crate) struct Link {
    declaration: Declaration,
    timeout: Duration,
    max_failures: u32,
    state: Mutex<State>,
    /// One start at a time.
    starting: tokio::sync::Mutex<()>,
    next_id: AtomicU64,
    generations: AtomicU64,
    /// Itself, for the tasks of its processes.
    this: Weak<Link>,
}

impl Link {
    /// Starts `declaration`'s process and makes its handshake: its manifest, or why not.
    pub(crate) async fn start(
        declaration: Declaration,
        timeout: Duration,
        max_failures: u32,
    ) -> (Arc<Link>, Result<Manifest, CallError>) {
        let link = Arc::new_cyclic(|this| Link {
            declaration,
            timeout,
            max_failures: max_failures.max(1),
            state: Mutex::new(State {
                phase: Phase::Stopped {
                    retry_at: Instant::now(),
                },
                failures: 0,
                restarts: 0,
                last_error: None,
                counted: None,
            }),
            starting: tokio::sync::Mutex::new(()),
            next_id: AtomicU64::new(1),
            generations: AtomicU64::new(0),
            this: this.clone(),
        });
        let manifest = match link.running().await {
            Ok((_, manifest)) => manifest.ok_or(CallError::Crashed),
            Err(error) => Err(error),
        };
        if manifest.is_err() {
            link.lock().phase = Phase::Disabled;
        }
        (link, manifest)
    }

    /// The name the configuration gives it.
    pub(crate) fn name(&self) -> &str {
        &self.declaration.name
    }

    /// Whether it serves runs of `project`.
    pub(crate) fn serves(&self, project: &str) -> bool {
        self.declaration.projects.matches(project)
    }

    /// How it is, its failures in a row, restarts and last error.
    pub(crate) fn health(&self) -> (Health, u32, u32, Option<String>) {
        let state = self.lock();
        let health = match state.phase {
            Phase::Running(_) => Health::Running,
            Phase::Stopped { .. } => Health::Restarting,
            Phase::Disabled => Health::Disabled,
        };
        (
            health,
            state.failures,
            state.restarts,
            state.last_error.clone(),
        )
    }

    /// Calls `method` with `params`, starting the process first when it is due.
    pub(crate) async fn call(&self, method: &str, params: Value) -> Result<Value, CallError> {
        let (process, _) = self.running().await?;
        let outcome = self.request(&process, method, params, self.timeout).await;
        if matches!(outcome, Ok(_) | Err(CallError::Answered { .. })) {
            self.lock().failures = 0;
        }
        outcome
    }

    /// Tells it `method` with `params`, answering nothing; dropped unless it is running.
    pub(crate) fn notify(&self, method: &str, params: Value) {
        let running = match &self.lock().phase {
            Phase::Running(process) => Some(Arc::clone(process)),
            _ => None,
        };
        if let Some(process) = running {
            let line = json!({"jsonrpc": "2.0", "method": method, "params": params});
            let _ = process.lines.send(line.to_string());
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The running process, started (with its handshake, whose manifest comes along) when
    /// it was not and its backoff has passed.
    async fn running(&self) -> Result<(Arc<Process>, Option<Manifest>), CallError> {
        if let Some(process) = self.current()? {
            return Ok((process, None));
        }
        let _starting = self.starting.lock().await;
        if let Some(process) = self.current()? {
            return Ok((process, None));
        }
        let process = match self.spawn() {
            Ok(process) => process,
            Err(error) => {
                self.failed(None, &error);
                return Err(error);
            }
        };
        let hello = Initialize {
            protocol_version: PROTOCOL_VERSION,
            name: &self.declaration.name,
        };
        let params = serde_json::to_value(hello).unwrap_or(Value::Null);
        let patience = self.timeout.max(HANDSHAKE_PATIENCE);
        let answer = self.request(&process, INITIALIZE, params, patience).await;
        let manifest = match answer.map(serde_json::from_value::<Manifest>) {
            Ok(Ok(manifest)) => manifest,
            Ok(Err(error)) => {
                let error = CallError::Garbage(format!("a manifest that does not read: {error}"));
                self.failed(Some(process.generation), &error);
                return Err(error);
            }
            Err(error) => {
                self.failed(Some(process.generation), &error);
                return Err(error);
            }
        };
        let mut state = self.lock();
        if matches!(state.phase, Phase::Disabled) {
            return Err(CallError::Disabled(state.failures));
        }
        if state.counted == Some(process.generation) {
            return Err(CallError::Crashed);
        }
        state.phase = Phase::Running(Arc::clone(&process));
        Ok((process, Some(manifest)))
    }

    /// The running process; `None` when one is due to start; an error while it waits out
    /// its backoff or is disabled.
    fn current(&self) -> Result<Option<Arc<Process>>, CallError> {
        let state = self.lock();
        match &state.phase {
            Phase::Running(process) => Ok(Some(Arc::clone(process))),
            Phase::Disabled => Err(CallError::Disabled(state.failures)),
            Phase::Stopped { retry_at } => match retry_at.checked_duration_since(Instant::now()) {
                Some(wait) if !wait.is_zero() => Err(CallError::Restarting(wait.as_millis())),
                _ => Ok(None),
            },
        }
    }

    /// Sends one request to `process` and waits for its answer, at most `timeout`.
    async fn request(
        &self,
        process: &Arc<Process>,
        method: &str,
        params: Value,
        timeout: Duration,
    ) -> Result<Value, CallError> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (answered, answer) = oneshot::channel();
        lock_pending(process).insert(id, answered);
        let line = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        if process.lines.send(line.to_string()).is_err() {
            lock_pending(process).remove(&id);
            self.failed(Some(process.generation), &CallError::Crashed);
            return Err(CallError::Crashed);
        }
        let outcome = match tokio::time::timeout(timeout, answer).await {
            Ok(Ok(outcome)) => outcome,
            Ok(Err(_)) => Err(CallError::Crashed),
            Err(_) => {
                lock_pending(process).remove(&id);
                Err(CallError::Timeout(timeout.as_millis()))
            }
        };
        if let Err(error) = &outcome {
            if !matches!(error, CallError::Answered { .. }) {
                self.failed(Some(process.generation), error);
            }
        }
        outcome
    }

    /// Counts a failure of the process of `generation` (`None`: one that did not start),
    /// once per process: it is killed, and the plugin waits out its backoff or is disabled.
    fn failed(&self, generation: Option<u64>, error: &CallError) {
        let mut state = self.lock();
        if generation.is_some() && state.counted == generation {
            return;
        }
        match &state.phase {
            Phase::Disabled => return,
            Phase::Running(process) if Some(process.generation) != generation => return,
            Phase::Running(process) => process.stop.cancel(),
            Phase::Stopped { .. } => {}
        }
        state.counted = generation;
        state.failures += 1;
        state.last_error = Some(error.to_string());
        let name = self.declaration.name.as_str();
        if state.failures >= self.max_failures {
            state.phase = Phase::Disabled;
            tracing::error!(
                plugin = name,
                failures = state.failures,
                %error,
                "plugin process disabled after repeated failures"
            );
            return;
        }
        let backoff = FIRST_BACKOFF
            .saturating_mul(1 << (state.failures - 1).min(16))
            .min(MAX_BACKOFF);
        state.phase = Phase::Stopped {
            retry_at: Instant::now() + backoff,
        };
        if let Some(link) = self.this.upgrade() {
            tokio::spawn(async move {
                tokio::time::sleep(backoff).await;
                // A failed start counts, and schedules the next.
                let _ = link.running().await;
            });
        }
        tracing::warn!(
            plugin = name,
            failures = state.failures,
            backoff_ms = backoff.as_millis() as u64,
            %error,
            "plugin process failed; it is started again after the backoff"
        );
    }

    /// Starts the process and the tasks that write its stdin, read its stdout and stderr,
    /// and kill it when it is dropped.
    fn spawn(&self) -> Result<Arc<Process>, CallError> {
        let declaration = &self.declaration;
        let mut command = tokio::process::Command::new(&declaration.command);
        command
            .args(&declaration.args)
            .env_clear()
            .envs(
                std::env::vars().filter(|(name, _)| {
                    name == "PATH" || crate::config::may_pass_to_commands(name)
                }),
            )
            .envs(
                declaration
                    .env
                    .iter()
                    .map(|(name, value)| (name, value.expose())),
            )
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let mut child = command
            .spawn()
            .map_err(|error| CallError::Spawn(format!("{}: {error}", declaration.command)))?;
        let (Some(mut stdin), Some(stdout), Some(stderr)) =
            (child.stdin.take(), child.stdout.take(), child.stderr.take())
        else {
            return Err(CallError::Spawn("no pipes".into()));
        };
        let generation = self.generations.fetch_add(1, Ordering::Relaxed);
        if generation > 0 {
            self.lock().restarts += 1;
        }
        let (lines, mut to_write) = mpsc::unbounded_channel::<String>();
        let stop = CancellationToken::new();
        let process = Arc::new(Process {
            generation,
            lines,
            pending: Mutex::new(HashMap::new()),
            stop: stop.clone(),
        });
        tokio::spawn(async move {
            while let Some(mut line) = to_write.recv().await {
                line.push('\n');
                if stdin.write_all(line.as_bytes()).await.is_err() || stdin.flush().await.is_err() {
                    break;
                }
            }
        });
        tokio::spawn(answers(stdout, Arc::downgrade(&process), self.this.clone()));
        tokio::spawn(pipes::log_stderr(stderr, declaration.name.clone()));
        tokio::spawn(async move {
            tokio::select! {
                () = stop.cancelled() => {
                    let _ = child.kill().await;
                }
                _ = child.wait() => {}
            }
        });
        Ok(process)
    }
}

/// Hands each answer on the process's stdout to the call waiting for it; once stdout ends
/// or holds garbage, fails every call still waiting and counts the process's failure.
async fn answers(stdout: impl AsyncRead + Unpin, process: Weak<Process>, link: Weak<Link>) {
    let ended = pipes::read_answers(stdout, |answer| {
        let Some(process) = process.upgrade() else {
            return ControlFlow::Break(());
        };
        let waiting = answer.id.and_then(|id| lock_pending(&process).remove(&id));
        if let Some(waiting) = waiting {
            let outcome = answer
                .outcome
                .map_err(|(code, message)| CallError::Answered { code, message });
            let _ = waiting.send(outcome);
        }
        ControlFlow::Continue(())
    })
    .await;
    let error = match ended {
        Ended::Stopped => return,
        Ended::Closed => CallError::Crashed,
        Ended::Garbage(why) => CallError::Garbage(why),
    };
    let Some(process) = process.upgrade() else {
        return;
    };
    if let Some(link) = link.upgrade() {
        link.failed(Some(process.generation), &error);
    }
    for (_, waiting) in lock_pending(&process).drain() {
        let _ = waiting.send(Err(error.clone()));
    }
}

fn lock_pending(
    process: &Process,
) -> std::sync::MutexGuard<'_, HashMap<u64, oneshot::Sender<Result<Value, CallError>>>> {
    process
        .pending
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}
