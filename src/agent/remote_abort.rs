//! `run/abort` of a loop executing on another instance: asked of the instance holding the
//! run's lease over the frame bus, which aborts it as its own `run/abort` would and answers
//! once the loop's 499 is stored, so the caller replies when a single instance would.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use tokio::sync::oneshot;

use crate::agent::AgentContext;
use crate::db::bus::{AbortMessage, BusMessage, FrameBus};
use crate::db::ids::{LoopId, RunId};
use crate::db::queries::instances;
use crate::db::queries::runs::now_ms;

/// How long a caller waits for the other instance's answer before going on as if no loop
/// ran (the other instance died meanwhile, or the bus lost the message).
const ANSWER_WAIT: Duration = Duration::from_secs(30);

/// The requests this instance sent and waits to have answered.
#[derive(Clone, Default)]
pub struct RemoteAborts {
    bus: Arc<OnceLock<FrameBus>>,
    next: Arc<AtomicU64>,
    waiting: Arc<Mutex<HashMap<u64, oneshot::Sender<Option<LoopId>>>>>,
}

impl RemoteAborts {
    /// Sends the requests on `bus` from now on (once).
    pub fn connect(&self, bus: FrameBus) {
        let _ = self.bus.set(bus);
    }

    /// Has the live instance holding `run`'s lease, if another, abort the loop it executes;
    /// returns the loop it stopped. `None` without a bus, when no other instance holds the
    /// lease, or without an answer within `ANSWER_WAIT`.
    pub async fn abort(&self, agent: &AgentContext, run: RunId) -> Option<LoopId> {
        let bus = self.bus.get()?;
        let me = agent.runs.instance().id().to_owned();
        let holder = agent
            .db
            .read(move |conn| instances::holder(conn, run, now_ms()))
            .await
            .ok()??;
        if holder == me {
            return None;
        }
        let id = self.next.fetch_add(1, Ordering::SeqCst);
        let (answer, answered) = oneshot::channel();
        self.lock().insert(id, answer);
        bus.send(BusMessage::Abort(AbortMessage::Request {
            from: me,
            to: holder,
            run,
            id,
        }));
        let stopped = tokio::time::timeout(ANSWER_WAIT, answered).await;
        self.lock().remove(&id);
        stopped.ok()?.ok()?
    }

    /// Takes an abort message for this instance: a request is served (the loop aborted
    /// here, then answered), an answer goes to its waiting caller.
    pub async fn take(&self, agent: &AgentContext, message: AbortMessage) {
        match message {
            AbortMessage::Request { from, run, id, .. } => {
                let stopped = agent.runs.current(run).map(|current| current.id);
                agent.runs.abort(run).await;
                if let Some(bus) = self.bus.get() {
                    bus.send(BusMessage::Abort(AbortMessage::Done {
                        from: agent.runs.instance().id().to_owned(),
                        to: from,
                        id,
                        stopped,
                    }));
                }
            }
            AbortMessage::Done { id, stopped, .. } => {
                if let Some(answer) = self.lock().remove(&id) {
                    let _ = answer.send(stopped);
                }
            }
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u64, oneshot::Sender<Option<LoopId>>>> {
        self.waiting
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}
