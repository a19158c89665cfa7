//! The process-wide registry of run actors, so abort and inject work from any connection.
//!
//! A run actor exists while its run has work: [`RunRegistry::await_loop`] (a verb's loop)
//! and [`RunRegistry::enqueue_under`] (a sub-agent's) start one on demand,
//! and an idle actor leaves only when every loop sent to it has been handled (counted under
//! the registry lock), so a loop is never sent to an actor that is stopping. The registry
//! also knows this [`Instance`] (whose lease a run's actor holds while it drives the run)
//! and whether the server is stopping (then no actor claims another loop), and how many
//! loop ends are still being reflected on, which a stop waits for as for running loops.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use actix::{Actor, Addr};
use tokio::sync::{oneshot, watch};
use tokio_util::sync::CancellationToken;

use crate::agent::current::CurrentLoop;
use crate::agent::outcome::LoopOutcome;
use crate::agent::run_actor::{Await, Dropped, Enqueue, RunActor, Wake};
use crate::agent::AgentContext;
use crate::cluster::Instance;
use crate::db::ids::{LoopId, RunId};
use crate::db::models::run::LoopEnqueue;
use crate::db::DbError;

/// What the registry keeps of one live run actor.
struct Entry {
    actor: Addr<RunActor>,
    submitted: Arc<AtomicU64>,
    current: Arc<Mutex<Option<CurrentLoop>>>,
}

/// Live run actors, by run, on this instance.
#[derive(Clone)]
pub(crate) struct RunRegistry {
    entries: Arc<Mutex<HashMap<RunId, Entry>>>,
    instance: Instance,
    stopping: Arc<AtomicBool>,
    /// How many loop ends are being reflected on now (see [`LoopEndHeld`]).
    loop_ends: Arc<watch::Sender<usize>>,
}

/// Held while a loop's end is reflected on (after its outcome is stored, before the run's
/// next claim): a stop waits until none is held, so the reflections' writes are not lost
/// to the hand-over. Dropping it lets go.
pub(crate) struct LoopEndHeld {
    loop_ends: Arc<watch::Sender<usize>>,
}

impl Drop for LoopEndHeld {
    fn drop(&mut self) {
        self.loop_ends.send_modify(|held| *held -= 1);
    }
}

impl RunRegistry {
    /// No actors yet, on `instance`.
    pub(crate) fn new(instance: Instance) -> RunRegistry {
        RunRegistry {
            entries: Arc::default(),
            instance,
            stopping: Arc::default(),
            loop_ends: Arc::new(watch::channel(0).0),
        }
    }

    /// The instance these actors run on.
    pub(crate) fn instance(&self) -> &Instance {
        &self.instance
    }

    /// From now on no actor claims another loop (the server is stopping): loops not yet
    /// started stay pending, for another instance.
    pub(crate) fn stop_claiming(&self) {
        self.stopping.store(true, Ordering::SeqCst);
    }

    /// Whether [`stop_claiming`](Self::stop_claiming) was called.
    pub(crate) fn is_stopping(&self) -> bool {
        self.stopping.load(Ordering::SeqCst)
    }

    /// Marks a loop's end as being reflected on until the returned value is dropped.
    pub(crate) fn hold_loop_end(&self) -> LoopEndHeld {
        self.loop_ends.send_modify(|held| *held += 1);
        LoopEndHeld {
            loop_ends: Arc::clone(&self.loop_ends),
        }
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<RunId, Entry>> {
        self.entries
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Appends a loop to the queue of a run that has no actor yet (a sub-agent's) through
    /// the actor it starts, whose loops are cancelled with `parent` as long as it lives:
    /// aborting the parent's loop aborts them, their panic's recovery loops too. The
    /// receiver gets that loop's outcome, or closes if the actor stops first.
    pub(crate) async fn enqueue_under(
        &self,
        agent: &AgentContext,
        enqueue: LoopEnqueue,
        parent: &CancellationToken,
    ) -> Result<oneshot::Receiver<LoopOutcome>, DbError> {
        self.enqueue_linked(agent, enqueue, Some(parent.clone()))
            .await
    }

    /// The outcome of loop `id` of `run`, which a verb queued (and said this instance
    /// waits for) in its own unit of work: the run's actor (started if needed) claims it.
    /// The receiver closes if the actor stops first.
    pub(crate) async fn await_loop(
        &self,
        agent: &AgentContext,
        run: RunId,
        id: LoopId,
    ) -> oneshot::Receiver<LoopOutcome> {
        crate::telemetry::links::asked(id);
        let actor = self.actor(agent, run, None);
        match actor.send(Await(id)).await {
            Ok(outcome) => outcome,
            Err(_) => oneshot::channel().1,
        }
    }

    /// Has the run's actor (started if it has none) claim the loops nobody waits for: a loop
    /// paused at a spend cap, taken up again, and those queued behind it.
    pub(crate) async fn wake(&self, agent: &AgentContext, run: RunId) {
        let actor = self.actor(agent, run, None);
        let _ = actor.send(Wake).await;
    }

    /// Loop `id` of `run` was dropped before it ran (an abort, a cancel): whoever waits for
    /// it here is answered that it was aborted, also one that comes to wait only now.
    pub(crate) fn dropped(&self, run: RunId, id: LoopId) {
        let entries = self.lock();
        if let Some(entry) = entries.get(&run) {
            entry.actor.do_send(Dropped(id));
        }
    }

    /// The run's actor, started if it has none (its loops cancelled with `parent`), counted
    /// as sent one more message.
    fn actor(
        &self,
        agent: &AgentContext,
        run: RunId,
        parent: Option<CancellationToken>,
    ) -> Addr<RunActor> {
        let mut entries = self.lock();
        let entry = entries.entry(run).or_insert_with(|| {
            let submitted = Arc::new(AtomicU64::new(0));
            let current = Arc::new(Mutex::new(None));
            let actor = RunActor::new(run, agent.clone(), Arc::clone(&current), parent).start();
            Entry {
                actor,
                submitted,
                current,
            }
        });
        entry.submitted.fetch_add(1, Ordering::SeqCst);
        entry.actor.clone()
    }

    async fn enqueue_linked(
        &self,
        agent: &AgentContext,
        enqueue: LoopEnqueue,
        parent: Option<CancellationToken>,
    ) -> Result<oneshot::Receiver<LoopOutcome>, DbError> {
        let run = enqueue.run_id;
        let actor = self.actor(agent, run, parent);
        // `send` puts the message in the mailbox at once (a fresh address is never parked), so
        // the count stays true even if this future is dropped before the reply.
        match actor.send(Enqueue(enqueue)).await {
            Ok(queued) => queued,
            // Only a stopping server stops an actor with a loop to handle.
            Err(_) => Ok(oneshot::channel().1),
        }
    }

    /// Removes the run's actor if it has handled every loop sent to it; true when it may stop.
    pub(crate) fn leave_if_idle(&self, run: RunId, handled: u64) -> bool {
        let mut entries = self.lock();
        let idle = entries
            .get(&run)
            .is_some_and(|entry| entry.submitted.load(Ordering::SeqCst) == handled);
        if idle {
            entries.remove(&run);
        }
        idle
    }

    /// How many runs have an actor now (one with work, or still finishing it).
    #[cfg(feature = "testing")]
    pub(crate) fn live(&self) -> usize {
        self.lock().len()
    }

    /// The loop the run is executing, if any.
    pub(crate) fn current(&self, run: RunId) -> Option<CurrentLoop> {
        let entries = self.lock();
        let entry = entries.get(&run)?;
        let current = entry
            .current
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        current.clone()
    }

    /// The loops executing now, on every run.
    fn all_current(&self) -> Vec<CurrentLoop> {
        let entries = self.lock();
        entries
            .values()
            .filter_map(|entry| {
                entry
                    .current
                    .lock()
                    .unwrap_or_else(|poisoned| poisoned.into_inner())
                    .clone()
            })
            .collect()
    }

    /// Cancels every loop executing now (this instance's runs were released elsewhere).
    pub(crate) fn cancel_all(&self) {
        for current in self.all_current() {
            current.cancel.cancel();
        }
    }

    /// Waits until no loop is executing and no loop's end is reflected on, or `grace` has
    /// passed; true when none is. Only after [`stop_claiming`](Self::stop_claiming), or new
    /// loops may keep it waiting.
    pub(crate) async fn settle(&self, grace: Duration) -> bool {
        let settled = async {
            let mut loop_ends = self.loop_ends.subscribe();
            loop {
                let running = self.all_current();
                for mut current in running {
                    // An error means the drain is gone, and with it the loop.
                    let _ = current.stored.wait_for(|stored| *stored).await;
                }
                // A drain holds its loop's end before it marks the loop stored, so a loop
                // that was running is either still running or held here.
                let _ = loop_ends.wait_for(|held| *held == 0).await;
                if self.all_current().is_empty() {
                    return;
                }
            }
        };
        tokio::time::timeout(grace, settled).await.is_ok()
    }
}
