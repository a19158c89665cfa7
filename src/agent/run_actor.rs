//! `RunActor`: one per run with work; its mailbox is the run's loop queue. A loop a client
//! asks for is inserted in the `loops` table, the queue's durable backing, by its verb
//! (`agent::verbs`), and awaited with an [`Await`] (through [`RunRegistry::await_loop`]),
//! which wakes the drain; a sub-agent's (whose actor cancels its loops with the parent's)
//! arrives as an [`Enqueue`], which appends it and wakes the drain. The
//! drain claims the pending loops one at a time (highest priority, then oldest) and executes
//! them, so two connections never execute one run at once (a loop's end is reflected on —
//! memory's session notes — after its outcome reaches its waiters and before the next loop
//! is claimed, and a stopping server waits for it as for a running loop); the only other
//! writer of the
//! queue is the drain itself, queueing a panic's recovery loops in the unit of work that
//! decides them. Loops left running by a stop or a crash go back to pending at start
//! (`runs::recover_after_restart`) and are claimed first the next time a client drives the
//! run. When the actor leaves, idle, it tells the budget, which keeps the run's calibration
//! for its next loop a while longer.
//!
//! Instances sharing one store drive each run from one of them at a time: the drain claims
//! each loop under the run's lease (`instances::claim_loop`), and runs only the loops this
//! instance's clients wait for (`loop_waiters`) or no instance waits for. While another
//! instance holds the lease, the loops queued here wait pending in the store and the actor
//! looks again every heartbeat, until that instance gives the lease back (its queue empty)
//! or is released (stopped, or expired). Once the server stops claiming, a drain ends at its
//! next claim and leaves the rest pending.
//!
//! [`RunRegistry::await_loop`]: crate::agent::RunRegistry::await_loop

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use actix::prelude::*;
use tokio::sync::{oneshot, watch};
use tokio_util::sync::CancellationToken;

use crate::agent::current::CurrentLoop;
use crate::agent::outcome::{Ending, LoopOutcome, LoopRecord, ProposedRow};
use crate::agent::run_loop::execute_loop;
use crate::agent::turn::LatestWritten;
use crate::agent::AgentContext;
use crate::budget::RunIdle;
use crate::db::enums::RunStatus;
use crate::db::ids::{LoopId, RunId};
use crate::db::models::run::{LoopEnqueue, LoopRow};
use crate::db::queries::instances::{self, Claim};
use crate::db::queries::{entries, loops, paused_loops};
use crate::db::DbError;

/// Append a loop to the run's queue and wake the drain. The reply is where that loop's
/// outcome arrives; the mailbox waits while the row is written, so the loop cannot end
/// before its waiter is known.
#[derive(Message)]
#[rtype(result = "Result<oneshot::Receiver<LoopOutcome>, DbError>")]
pub(crate) struct Enqueue(pub LoopEnqueue);

/// Wake the drain and answer the returned receiver with the outcome of loop `0`, which a
/// verb queued in its own unit of work (`agent::verbs`): it is claimed like any other.
#[derive(Message)]
#[rtype(result = "oneshot::Receiver<LoopOutcome>")]
pub(crate) struct Await(pub LoopId);

/// Wake the drain for a loop nobody waits for (a loop paused at a cap, taken up again).
#[derive(Message)]
#[rtype(result = "()")]
pub(crate) struct Wake;

/// A loop of this run ended (sent by the drain to its actor).
#[derive(Message)]
#[rtype(result = "()")]
pub(crate) struct LoopEnded {
    pub loop_id: LoopId,
    pub outcome: LoopOutcome,
}

/// Loop `0` of this run was dropped unrun by an abort or a cancel of this instance: its
/// waiters are answered 499, now or as they come (the request that queued it awaits it only
/// after its own unit of work, which the drop may follow at once).
#[derive(Message)]
#[rtype(result = "()")]
pub(crate) struct Dropped(pub LoopId);

/// The outcomes, read from the store, of loops this actor's waiters wait for that ended
/// without the drain (dropped by an abort elsewhere, or run before the waiter arrived).
#[derive(Message)]
#[rtype(result = "()")]
struct Stored(Vec<(LoopId, LoopOutcome)>);

/// Whoever waits for loop `from` waits for loop `to` instead (a panic's retry).
#[derive(Message)]
#[rtype(result = "()")]
struct LoopRedirected {
    from: LoopId,
    to: LoopId,
}

/// The drain finished: the queue was empty for this instance, or (`elsewhere`) another
/// instance holds the run's lease.
#[derive(Message)]
#[rtype(result = "()")]
struct DrainEnded {
    elsewhere: bool,
}

/// The actor serializing one run's loops.
pub(crate) struct RunActor {
    run: RunId,
    agent: AgentContext,
    current: Arc<Mutex<Option<CurrentLoop>>>,
    /// Cancels every loop this actor runs (a sub-agent's, with its parent's loop).
    parent: Option<CancellationToken>,
    handled: u64,
    draining: bool,
    wake_again: bool,
    waiters: HashMap<LoopId, Vec<oneshot::Sender<LoopOutcome>>>,
    /// Loops dropped before anyone here waited for them ([`Dropped`]).
    dropped: HashSet<LoopId>,
    /// The run's latest `system://` copy and snapshot, held across its loops.
    latest: Arc<LatestWritten>,
}

impl RunActor {
    /// An actor for `run`, sharing its current loop with the registry; its loops are
    /// cancelled with `parent` when there is one.
    pub(crate) fn new(
        run: RunId,
        agent: AgentContext,
        current: Arc<Mutex<Option<CurrentLoop>>>,
        parent: Option<CancellationToken>,
    ) -> Self {
        RunActor {
            run,
            agent,
            current,
            parent,
            handled: 0,
            draining: false,
            wake_again: false,
            waiters: HashMap::new(),
            dropped: HashSet::new(),
            latest: Arc::default(),
        }
    }

    /// Starts the drain, or has it look again once it finds the queue empty.
    fn wake(&mut self, ctx: &mut Context<Self>) {
        if self.draining {
            self.wake_again = true;
            return;
        }
        self.start_drain(ctx);
    }

    fn start_drain(&mut self, ctx: &mut Context<Self>) {
        self.draining = true;
        self.wake_again = false;
        let run = self.run;
        let agent = self.agent.clone();
        let current = Arc::clone(&self.current);
        let parent = self.parent.clone();
        let latest = Arc::clone(&self.latest);
        let me = ctx.address();
        ctx.spawn(actix::fut::wrap_future(async move {
            let elsewhere = drain(run, agent, current, parent, latest, me.clone()).await;
            me.do_send(DrainEnded { elsewhere });
        }));
    }
}

impl Actor for RunActor {
    type Context = Context<Self>;

    fn stopped(&mut self, _: &mut Self::Context) {
        for (_, waiters) in self.waiters.drain() {
            for waiter in waiters {
                let _ = waiter.send(LoopOutcome::Ended(Ending::Failed));
            }
        }
    }
}

impl Handler<Enqueue> for RunActor {
    type Result = AtomicResponse<Self, Result<oneshot::Receiver<LoopOutcome>, DbError>>;
    fn handle(&mut self, message: Enqueue, _: &mut Context<Self>) -> Self::Result {
        self.handled += 1;
        let Enqueue(enqueue) = message;
        let db = self.agent.db.clone();
        let instance = self.agent.runs.instance().id().to_owned();
        let insert = async move {
            db.call(move |conn| {
                let queued = loops::enqueue_loop(conn, &enqueue)?;
                instances::wait_for(conn, queued.id, &instance)?;
                Ok(queued)
            })
            .await
        };
        AtomicResponse::new(Box::pin(actix::fut::wrap_future(insert).map(
            |queued: Result<LoopRow, DbError>, actor: &mut RunActor, ctx| {
                let outcome = queued.map(|queued| {
                    let (waiter, outcome) = oneshot::channel();
                    actor.waiters.entry(queued.id).or_default().push(waiter);
                    outcome
                });
                // Even after a failed insert: a drain that finds nothing lets the actor leave.
                actor.wake(ctx);
                outcome
            },
        )))
    }
}

impl Handler<Await> for RunActor {
    type Result = MessageResult<Await>;
    fn handle(&mut self, message: Await, ctx: &mut Context<Self>) -> Self::Result {
        self.handled += 1;
        let (waiter, outcome) = oneshot::channel();
        match self.dropped.remove(&message.0) {
            true => drop(waiter.send(LoopOutcome::Ended(Ending::Aborted))),
            false => self.waiters.entry(message.0).or_default().push(waiter),
        }
        self.wake(ctx);
        MessageResult(outcome)
    }
}

impl Handler<Wake> for RunActor {
    type Result = ();
    fn handle(&mut self, _: Wake, ctx: &mut Context<Self>) {
        self.handled += 1;
        self.wake(ctx);
    }
}

impl Handler<Stored> for RunActor {
    type Result = ();
    fn handle(&mut self, message: Stored, ctx: &mut Context<Self>) {
        for (loop_id, outcome) in message.0 {
            for waiter in self.waiters.remove(&loop_id).unwrap_or_default() {
                let _ = waiter.send(outcome.clone());
            }
        }
        if !self.draining {
            self.leave_if_idle(ctx);
        }
    }
}

impl Handler<LoopEnded> for RunActor {
    type Result = ();
    fn handle(&mut self, message: LoopEnded, _: &mut Context<Self>) {
        for waiter in self.waiters.remove(&message.loop_id).unwrap_or_default() {
            let _ = waiter.send(message.outcome.clone());
        }
    }
}

impl Handler<Dropped> for RunActor {
    type Result = ();
    fn handle(&mut self, Dropped(loop_id): Dropped, _: &mut Context<Self>) {
        match self.waiters.remove(&loop_id) {
            Some(waiters) => waiters.into_iter().for_each(|waiter| {
                let _ = waiter.send(LoopOutcome::Ended(Ending::Aborted));
            }),
            None => drop(self.dropped.insert(loop_id)),
        }
    }
}

impl Handler<LoopRedirected> for RunActor {
    type Result = ();
    fn handle(&mut self, message: LoopRedirected, _: &mut Context<Self>) {
        let waiting = self.waiters.remove(&message.from).unwrap_or_default();
        self.waiters.entry(message.to).or_default().extend(waiting);
    }
}

impl Handler<DrainEnded> for RunActor {
    type Result = ();
    fn handle(&mut self, ended: DrainEnded, ctx: &mut Context<Self>) {
        self.draining = false;
        if self.wake_again {
            self.start_drain(ctx);
            return;
        }
        if !self.waiters.is_empty() {
            self.answer_stored(ctx);
        }
        if ended.elsewhere {
            let again = self.agent.runs.instance().beat_interval();
            ctx.run_later(again, |actor, ctx| actor.wake(ctx));
            return;
        }
        self.leave_if_idle(ctx);
    }
}

impl RunActor {
    /// Leaves when no one waits and every loop sent here was handled.
    fn leave_if_idle(&mut self, ctx: &mut Context<Self>) {
        if self.waiters.is_empty() && self.agent.runs.leave_if_idle(self.run, self.handled) {
            self.agent.budget.do_send(RunIdle { run: self.run });
            ctx.stop();
        }
    }

    /// Answers, from the store, the waiters of loops that ended without this actor's drain
    /// (the drain found nothing of theirs to claim).
    fn answer_stored(&mut self, ctx: &mut Context<Self>) {
        let ids: Vec<LoopId> = self.waiters.keys().copied().collect();
        let db = self.agent.db.clone();
        let me = ctx.address();
        ctx.spawn(actix::fut::wrap_future(async move {
            match db.read(move |conn| stored_outcomes(conn, &ids)).await {
                Ok(stored) if !stored.is_empty() => me.do_send(Stored(stored)),
                Ok(_) => {}
                Err(error) => tracing::warn!(%error, "cannot read the outcomes of awaited loops"),
            }
        }));
    }
}

/// The outcomes of those of `ids` that have ended, as their records say (a 200's reason is
/// not kept there: it is answered `done`), and of those pending behind a loop paused at a
/// spend cap: paused, as it was answered (they stay queued).
fn stored_outcomes(
    conn: &mut crate::db::Conn,
    ids: &[LoopId],
) -> Result<Vec<(LoopId, LoopOutcome)>, DbError> {
    let mut ended = Vec::new();
    for id in ids {
        let Some(lp) = loops::get_loop(conn, *id)? else {
            ended.push((*id, LoopOutcome::Ended(Ending::Failed)));
            continue;
        };
        if lp.status == RunStatus::Queued {
            if let Some(paused) = paused_loops::of_run(conn, lp.run_id)? {
                ended.push((*id, crate::agent::paused::outcome_of(&paused)));
            }
            continue;
        }
        if lp.status == RunStatus::Running {
            continue;
        }
        let record = lp
            .result
            .as_ref()
            .and_then(|result| serde::Deserialize::deserialize(&result.0).ok())
            .unwrap_or(LoopRecord::of(lp.status));
        let proposed = match lp.status {
            RunStatus::Proposed => entries::unresolved(conn, lp.run_id)?
                .into_iter()
                .map(ProposedRow::from)
                .collect(),
            _ => Vec::new(),
        };
        ended.push((*id, record.outcome(proposed)));
    }
    Ok(ended)
}

/// Claims and executes pending loops until none is left for this instance, or the server
/// stops claiming; true when it stopped because another instance holds the run's lease.
async fn drain(
    run: RunId,
    agent: AgentContext,
    current: Arc<Mutex<Option<CurrentLoop>>>,
    parent: Option<CancellationToken>,
    latest: Arc<LatestWritten>,
    me: Addr<RunActor>,
) -> bool {
    loop {
        if agent.runs.is_stopping() {
            return false;
        }
        let instance = agent.runs.instance().id().to_owned();
        let cancel = parent
            .as_ref()
            .map_or_else(CancellationToken::new, CancellationToken::child_token);
        let (stored, stored_watch) = watch::channel(false);
        let slot = Arc::clone(&current);
        // The loop is this run's current one from the unit of work that claims it, on the
        // writer: a verb's unit of work after it finds it there (`agent::verbs::abort`).
        let claimed = agent
            .db
            .call(move |conn| {
                let claim = instances::claim_loop(conn, run, &instance)?;
                if let Claim::Loop(lp) = &claim {
                    let loop_now = CurrentLoop::new(lp.id, cancel, stored_watch);
                    set_current(&slot, Some(loop_now));
                }
                Ok(claim)
            })
            .await;
        let (lp, claimed) = match (claimed, current_of(&current)) {
            (Ok(Claim::Loop(lp)), Some(claimed)) => (*lp, claimed),
            (Ok(Claim::Idle), _) => return false,
            (Ok(Claim::Elsewhere), _) => return true,
            (Ok(Claim::Loop(_)), None) => return false,
            (Err(error), _) => {
                set_current(&current, None);
                tracing::error!(run = %run, %error, "cannot claim the next loop");
                return false;
            }
        };
        let loop_id = lp.id;
        let (outcome, reflector) = execute_loop(&agent, lp, &claimed, &latest).await;
        let proposed = matches!(outcome, LoopOutcome::Proposed { .. });
        let loop_end = reflector.map(|reflector| (reflector, agent.runs.hold_loop_end()));
        set_current(&current, None);
        stored.send_replace(true);
        match outcome {
            LoopOutcome::Panicked { retry } => me.do_send(LoopRedirected {
                from: loop_id,
                to: retry,
            }),
            LoopOutcome::RecoveryFailed {
                ref error,
                retry: Some(retry),
            } => {
                me.do_send(LoopEnded {
                    loop_id: retry,
                    outcome: LoopOutcome::Overflow {
                        error: error.clone(),
                    },
                });
                me.do_send(LoopEnded { loop_id, outcome });
            }
            outcome => me.do_send(LoopEnded { loop_id, outcome }),
        }
        // After the outcome went to its waiters, before the next loop is claimed: the reply
        // does not wait for the loop end's reflections, the next loop sees what they wrote,
        // and a stopping server waits for them (held) before it gives the run's lease back.
        if let Some((reflector, _held)) = loop_end {
            reflector.loop_ended(&agent, proposed).await;
        }
    }
}

fn set_current(slot: &Mutex<Option<CurrentLoop>>, value: Option<CurrentLoop>) {
    *slot.lock().unwrap_or_else(|poisoned| poisoned.into_inner()) = value;
}

fn current_of(slot: &Mutex<Option<CurrentLoop>>) -> Option<CurrentLoop> {
    slot.lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
        .clone()
}
