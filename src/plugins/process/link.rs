//! [`Link`]: one plugin process, kept running. It is started with its handshake
//! (`initialize`, given at least 10 s), spoken to in JSON-RPC 2.0 lines (requests with ids, answered in any
//! order; notifications), and its stderr goes to the log, cut. A call waits at most the
//! plugin's timeout (its declaration file's, else its manifest's, else the setting). A
//! crash, a timeout or a line on stdout that is not JSON-RPC is a failure: the process is
//! killed with everything it started (`child`), calls fail at once during a backoff (0.1 s,
//! doubling, at most 30 s), after which the process is started again. After
//! `max_failures` failures in a row the plugin is disabled until an admin restarts it
//! (`plugins/restart`) or the server restarts (a log line, and its state in
//! `plugins/status`). Only a call answered, not a handshake, ends a run of failures; an
//! error the plugin answers is no failure. A plugin whose first handshake fails is
//! disabled at once (it never registered anything). A restart and the server's stop end a
//! process gently (`running`: a `shutdown` notification, stdin closed, a grace to exit,
//! then its tree is killed).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tokio::runtime::Handle;

use super::child;
use super::declaration::Declaration;
use super::pipes;
use super::protocol::{Initialize, Manifest, INITIALIZE, PROTOCOL_VERSION};
use super::running::{answers, CallError, Process};

/// The first wait before a restart; it doubles with each failure in a row.
const FIRST_BACKOFF: Duration = Duration::from_millis(100);
/// The longest wait before a restart.
const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// The least time a handshake is given (an interpreter may take a while to start), even
/// when calls have less.
const HANDSHAKE_PATIENCE: Duration = Duration::from_secs(10);
/// The longest timeout a plugin's manifest may ask for (its declaration file may set any).
const MAX_MANIFEST_TIMEOUT: Duration = Duration::from_secs(600);

/// The process as it stands.
enum Phase {
    /// Not running: started again once `retry_at` has passed (by the restart its failure
    /// scheduled, or by a call).
    Stopped {
        retry_at: Instant,
    },
    Running(Arc<Process>),
    Disabled,
    /// Stopped with the server: never started again.
    Closed,
}

/// What a client reads of a plugin's process (`plugins/status`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Health {
    Running,
    /// Failed; it starts again after its backoff.
    Restarting,
    Disabled,
    /// Stopped with the server.
    Stopped,
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

/// One plugin process, started again after failures.
pub(crate) struct Link {
    declaration: Declaration,
    /// The time a call may take, in ms: the declaration's, else the manifest's, else the
    /// setting's.
    timeout_ms: AtomicU64,
    max_failures: u32,
    state: Mutex<State>,
    /// One start at a time.
    starting: tokio::sync::Mutex<()>,
    next_id: AtomicU64,
    generations: AtomicU64,
    /// Itself, for the tasks of its processes.
    this: Weak<Link>,
    /// Where the tasks of its processes run: the runtime it was started on (the server's),
    /// not that of the call that happens to start a process again.
    runtime: Handle,
}

impl Link {
    /// Starts `declaration`'s process and makes its handshake: its manifest, or why not.
    /// `default_timeout` is the setting's, for a plugin whose declaration and manifest give
    /// none.
    pub(crate) async fn start(
        declaration: Declaration,
        default_timeout: Duration,
        max_failures: u32,
    ) -> (Arc<Link>, Result<Manifest, CallError>) {
        let timeout = declaration.timeout.unwrap_or(default_timeout);
        let link = Arc::new_cyclic(|this| Link {
            declaration,
            timeout_ms: AtomicU64::new(millis(timeout)),
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
            runtime: Handle::current(),
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

    /// How long a call may take.
    pub(crate) fn timeout(&self) -> Duration {
        Duration::from_millis(self.timeout_ms.load(Ordering::Relaxed))
    }

    /// How it is, its failures in a row, restarts and last error.
    pub(crate) fn health(&self) -> (Health, u32, u32, Option<String>) {
        let state = self.lock();
        let health = match state.phase {
            Phase::Running(_) => Health::Running,
            Phase::Stopped { .. } => Health::Restarting,
            Phase::Disabled => Health::Disabled,
            Phase::Closed => Health::Stopped,
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
        let outcome = self.request(&process, method, params, self.timeout()).await;
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
            process.send(line.to_string());
        }
    }

    /// Starts it afresh, enabled again after failures: the process running is shut down
    /// (its tree killed), its failures forgotten, and a new one started with its handshake
    /// (what it registered at the server's start stays as it was).
    pub(crate) async fn restart(&self) -> Result<(), CallError> {
        let previous = {
            let mut state = self.lock();
            if matches!(state.phase, Phase::Closed) {
                return Err(CallError::Closed);
            }
            let retry_at = Instant::now();
            let previous = match std::mem::replace(&mut state.phase, Phase::Stopped { retry_at }) {
                Phase::Running(process) => {
                    // Its end is no failure.
                    state.counted = Some(process.generation);
                    Some(process)
                }
                _ => None,
            };
            state.failures = 0;
            state.last_error = None;
            previous
        };
        if let Some(process) = previous {
            process.shut_down().await;
        }
        self.running().await.map(drop)
    }

    /// Stops it for good (the server stops): the process running is shut down and nothing
    /// of its tree is left when this returns.
    pub(crate) async fn close(&self) {
        let previous = {
            let mut state = self.lock();
            match std::mem::replace(&mut state.phase, Phase::Closed) {
                Phase::Running(process) => {
                    state.counted = Some(process.generation);
                    Some(process)
                }
                _ => None,
            }
        };
        if let Some(process) = previous {
            process.shut_down().await;
        }
        // A start under way finds the link closed and kills its process.
        drop(self.starting.lock().await);
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
        let process = match self.spawn().await {
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
        let patience = self.timeout().max(HANDSHAKE_PATIENCE);
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
        if let (None, Some(asked)) = (self.declaration.timeout, manifest.timeout_ms) {
            let asked = Duration::from_millis(asked).min(MAX_MANIFEST_TIMEOUT);
            self.timeout_ms.store(millis(asked), Ordering::Relaxed);
        }
        let refused = {
            let mut state = self.lock();
            match state.phase {
                Phase::Disabled => Some(CallError::Disabled(state.failures)),
                Phase::Closed => Some(CallError::Closed),
                _ if state.counted == Some(process.generation) => Some(CallError::Crashed),
                Phase::Running(_) | Phase::Stopped { .. } => {
                    state.phase = Phase::Running(Arc::clone(&process));
                    None
                }
            }
        };
        match refused {
            Some(error) => {
                process.killed().await;
                Err(error)
            }
            None => Ok((process, Some(manifest))),
        }
    }

    /// The running process; `None` when one is due to start; an error while it waits out
    /// its backoff or is disabled.
    fn current(&self) -> Result<Option<Arc<Process>>, CallError> {
        let state = self.lock();
        match &state.phase {
            Phase::Running(process) => Ok(Some(Arc::clone(process))),
            Phase::Disabled => Err(CallError::Disabled(state.failures)),
            Phase::Closed => Err(CallError::Closed),
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
        let answer = process.expect(id);
        let line = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        if !process.send(line.to_string()) {
            process.forget(id);
            self.failed(Some(process.generation), &CallError::Crashed);
            return Err(CallError::Crashed);
        }
        let outcome = match tokio::time::timeout(timeout, answer).await {
            Ok(Ok(outcome)) => outcome,
            Ok(Err(_)) => Err(CallError::Crashed),
            Err(_) => {
                process.forget(id);
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
            Phase::Disabled | Phase::Closed => return,
            Phase::Running(process) if Some(process.generation) != generation => return,
            Phase::Running(process) => process.kill(),
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
            self.runtime.spawn(async move {
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

    /// Starts the process (`child`) and the tasks that read its stdout and stderr, all on
    /// the link's runtime: a process's pipes belong to the runtime that spawned it, and a
    /// worker's ends with the server's stop. A process whose start nobody waits for any more
    /// is killed as it is dropped.
    async fn spawn(&self) -> Result<Arc<Process>, CallError> {
        let (declaration, link) = (self.declaration.clone(), self.this.clone());
        let starting = self.runtime.spawn(async move {
            let started = child::start(&declaration).await.map_err(CallError::Spawn)?;
            let Some(link) = link.upgrade() else {
                started.ending.kill();
                return Err(CallError::Closed);
            };
            let generation = link.generations.fetch_add(1, Ordering::Relaxed);
            if generation > 0 {
                link.lock().restarts += 1;
            }
            let process = Arc::new(Process::new(generation, started.lines, started.ending));
            let weak = link.this.clone();
            let failed = move |generation, error: &CallError| {
                if let Some(link) = weak.upgrade() {
                    link.failed(Some(generation), error);
                }
            };
            tokio::spawn(answers(started.stdout, Arc::downgrade(&process), failed));
            tokio::spawn(pipes::log_stderr(started.stderr, declaration.name));
            Ok(process)
        });
        starting
            .await
            .map_err(|error| CallError::Spawn(error.to_string()))?
    }
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}
