//! One start of a plugin process while it runs, as its link speaks to it: the lines that go
//! to its stdin, the calls waiting for their answers (handed over by the reader of its
//! stdout, [`answers`]), and its ending: shut down gently ([`Process::shut_down`]), or killed
//! with its tree when it is dropped. [`CallError`] is why a call to it failed.

use std::collections::HashMap;
use std::ops::ControlFlow;
use std::sync::{Mutex, Weak};
use std::time::Duration;

use serde_json::{json, Value};
use tokio::io::AsyncRead;
use tokio::sync::{mpsc, oneshot};

use super::child::{Ending, Out};
use super::pipes::{self, Ended};
use super::protocol::SHUTDOWN;

/// How long a process told to shut down (stdin closed) has to exit before its tree is
/// killed.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(2);

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
    #[error("the plugin is stopped: the server is stopping")]
    Closed,
    /// The plugin answered with an error: it is running well.
    #[error("{message}")]
    Answered { code: i64, message: String },
}

/// What a call waiting for its answer is given.
type Waiting = oneshot::Sender<Result<Value, CallError>>;

/// One running process.
pub(super) struct Process {
    /// Its place in the link's starts, so a late failure of a process already replaced is
    /// not counted twice.
    pub(super) generation: u64,
    lines: mpsc::UnboundedSender<Out>,
    pending: Mutex<HashMap<u64, Waiting>>,
    ending: Ending,
}

impl Process {
    pub(super) fn new(generation: u64, lines: mpsc::UnboundedSender<Out>, ending: Ending) -> Self {
        Process {
            generation,
            lines,
            pending: Mutex::new(HashMap::new()),
            ending,
        }
    }

    /// Writes `line` to its stdin; `false` when that is closed.
    pub(super) fn send(&self, line: String) -> bool {
        self.lines.send(Out::Line(line)).is_ok()
    }

    /// Where the answer to request `id` will arrive.
    pub(super) fn expect(&self, id: u64) -> oneshot::Receiver<Result<Value, CallError>> {
        let (answered, answer) = oneshot::channel();
        self.lock_pending().insert(id, answered);
        answer
    }

    /// No longer waits for the answer to request `id`.
    pub(super) fn forget(&self, id: u64) {
        self.lock_pending().remove(&id);
    }

    /// Kills it now, with everything it started.
    pub(super) fn kill(&self) {
        self.ending.kill();
    }

    /// Kills it and resolves once nothing of its tree is left.
    pub(super) async fn killed(&self) {
        self.ending.kill();
        self.ending.gone().await;
    }

    /// Tells it to shut down (`shutdown`, then stdin closed), gives it [`SHUTDOWN_GRACE`] to
    /// exit, then kills what is left of its tree; resolves once nothing is.
    pub(super) async fn shut_down(&self) {
        let notice = json!({"jsonrpc": "2.0", "method": SHUTDOWN});
        let _ = self.lines.send(Out::Line(notice.to_string()));
        let _ = self.lines.send(Out::Close);
        if tokio::time::timeout(SHUTDOWN_GRACE, self.ending.gone())
            .await
            .is_err()
        {
            self.killed().await;
        }
    }

    fn lock_pending(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Waiting>> {
        self.pending
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        self.ending.kill();
    }
}

/// Hands each answer on the process's stdout to the call waiting for it; once stdout ends
/// or holds garbage, tells `failed` (with the process's generation) and fails every call
/// still waiting.
pub(super) async fn answers(
    stdout: impl AsyncRead + Unpin,
    process: Weak<Process>,
    failed: impl FnOnce(u64, &CallError),
) {
    let ended = pipes::read_answers(stdout, |answer| {
        let Some(process) = process.upgrade() else {
            return ControlFlow::Break(());
        };
        let waiting = answer.id.and_then(|id| process.lock_pending().remove(&id));
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
    failed(process.generation, &error);
    for (_, waiting) in process.lock_pending().drain() {
        let _ = waiting.send(Err(error.clone()));
    }
}
