//! Per-project notification fan-out.
//!
//! A run's notification is made durable before anyone sees it ([`publish`]: the store numbers
//! it with a per-run `seq` and writes it, `db::events`); once its unit of work has committed,
//! the writer hands it to the [`HubRegistry`] ([`HubRegistry::offer`]), which sends it to the
//! other instances over the [`FrameBus`] and to its project's [`ProjectHub`]. A hub holds the
//! connections bound to its project and offers each frame to every one of them without
//! waiting: a client whose mailbox is full misses it, sees the gap in `seq`, and asks for
//! what it missed (`run/replay`, which reads the store after the hub has handed on every
//! frame it had when asked: [`HubRegistry::caught_up`]). A plugin's `ui/render` and
//! `ui/notify`, and the other [`UiNotification`]s, are about no run: offered the same way,
//! never numbered nor kept.
//!
//! With several instances on one store, each instance's hub of the project offers the frames
//! another instance wrote (they came over the bus) as its own, with the same `seq`. A hub
//! left with no subscriber retires, so a closed project leaves nothing behind; every message
//! reaches a hub through the registry, which never lets one retire with a message unhandled.
//!
//! Each frame a hub hands to a subscriber is counted in the server's [`WorkCounters`].

pub(crate) mod notifications;
pub(crate) mod replay;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use actix::prelude::*;

use crate::cluster::bus::{BusBroadcast, BusFrame, BusMessage, FrameBus};
use crate::db::events::{NumberedEvent, Publication};
use crate::db::ids::{ProjectId, RunId};
use crate::db::queries::run_events::{self, EventBounds};
use crate::db::{Conn, DbError, DbHandle};
use crate::metrics::WorkCounters;
use notifications::{Notification, UiNotification};

/// Identity of one client connection, unique for the server's lifetime.
pub(crate) type ConnId = u64;

/// A serialized notification frame, shared by every subscriber.
#[derive(Debug, Clone, Message)]
#[rtype(result = "()")]
pub struct Outbound(pub Arc<str>);

/// Start delivering a project's notifications to a connection.
#[derive(Message)]
#[rtype(result = "()")]
pub(crate) struct Subscribe {
    pub conn: ConnId,
    /// Where its frames go.
    pub recipient: Recipient<Outbound>,
}

/// Stop delivering to a connection.
#[derive(Message)]
#[rtype(result = "()")]
pub(crate) struct Unsubscribe {
    pub conn: ConnId,
}

/// Offer a frame to every subscriber: a run's notification, durable already, or a
/// project-wide one, unnumbered and not kept.
#[derive(Message)]
#[rtype(result = "()")]
pub(crate) struct Offer(pub Arc<str>);

/// Answered once every message the hub had before it is handled (mailbox order).
#[derive(Message)]
#[rtype(result = "()")]
pub(crate) struct CaughtUp;

/// Numbers, writes and then sends `notification` of `run` to every client bound to
/// `project`, on every instance, without waiting.
pub(crate) fn publish(db: &DbHandle, project: ProjectId, run: RunId, notification: &Notification) {
    if let Some(publication) = publication(project, run, notification) {
        db.publish(publication);
    }
}

/// Numbers and writes `notification` of `run` in the unit of work that `conn` runs, to be
/// sent to every client of `project` once that unit commits (so it is told exactly when
/// what it tells of is stored). Outside any savepoint that may roll back.
pub(crate) fn append(
    conn: &mut Conn,
    bounds: &EventBounds,
    project: ProjectId,
    run: RunId,
    notification: &Notification,
) -> Result<(), DbError> {
    if let Some(publication) = publication(project, run, notification) {
        run_events::append(conn, bounds, project, run, &[publication.frame])?;
    }
    Ok(())
}

/// `notification` of `run`, serialized once, for a unit of work to number and write; one
/// that cannot be serialized is logged and left out.
pub(crate) fn publication(
    project: ProjectId,
    run: RunId,
    notification: &Notification,
) -> Option<Publication> {
    match notification.unnumbered() {
        Ok(frame) => Some(Publication {
            project,
            run,
            frame,
        }),
        Err(error) => {
            let method = notification.method();
            tracing::error!(%error, method, "cannot serialize a notification");
            None
        }
    }
}

/// The fan-out actor of one project.
pub(crate) struct ProjectHub {
    project: ProjectId,
    subscribers: HashMap<ConnId, Recipient<Outbound>>,
    /// Messages handled so far, which the registry compares with those it sent.
    handled: Arc<AtomicU64>,
    /// Where it is listed, to leave when it retires.
    registry: HubRegistry,
}

impl ProjectHub {
    /// Counts a message handled; with no subscriber left, retires if nothing else is on its
    /// way to it.
    fn handled_one(&self, ctx: &mut Context<Self>) {
        self.handled.fetch_add(1, Ordering::AcqRel);
        if self.subscribers.is_empty() && self.registry.retire(self.project, &ctx.address()) {
            ctx.stop();
        }
    }

    /// Offers `text` to every subscriber without waiting; a closed one leaves. Each frame
    /// handed over is counted.
    fn offer(&mut self, text: &Arc<str>) {
        let work = &self.registry.work;
        self.subscribers.retain(|conn, recipient| {
            match recipient.try_send(Outbound(Arc::clone(text))) {
                Ok(()) => {
                    work.frame(text.len());
                    true
                }
                Err(SendError::Full(_)) => {
                    tracing::warn!(conn, "client mailbox full; notification dropped");
                    true
                }
                Err(SendError::Closed(_)) => false,
            }
        });
    }
}

impl Actor for ProjectHub {
    type Context = Context<Self>;
}

impl Handler<Subscribe> for ProjectHub {
    type Result = ();
    fn handle(&mut self, message: Subscribe, ctx: &mut Context<Self>) {
        self.subscribers.insert(message.conn, message.recipient);
        self.handled_one(ctx);
    }
}

impl Handler<Unsubscribe> for ProjectHub {
    type Result = ();
    fn handle(&mut self, message: Unsubscribe, ctx: &mut Context<Self>) {
        self.subscribers.remove(&message.conn);
        self.handled_one(ctx);
    }
}

impl Handler<Offer> for ProjectHub {
    type Result = ();
    fn handle(&mut self, Offer(text): Offer, ctx: &mut Context<Self>) {
        self.offer(&text);
        self.handled_one(ctx);
    }
}

impl Handler<CaughtUp> for ProjectHub {
    type Result = ();
    fn handle(&mut self, _: CaughtUp, ctx: &mut Context<Self>) {
        self.handled_one(ctx);
    }
}

/// A live hub and how many messages the registry sent it.
struct Listed {
    hub: Addr<ProjectHub>,
    sent: u64,
    handled: Arc<AtomicU64>,
}

/// Finds or starts the hub of each project, and sends it every message it gets.
#[derive(Clone)]
pub struct HubRegistry {
    hubs: Arc<Mutex<HashMap<ProjectId, Listed>>>,
    /// Where hubs run: the writer's thread and the bus's hand frames on from outside actix.
    arbiter: ArbiterHandle,
    /// Where the frames written here go to the other instances, once connected.
    bus: Arc<OnceLock<FrameBus>>,
    /// Where the frames handed to subscribers are counted.
    work: Arc<WorkCounters>,
    /// Shown every run notification frame offered here, this instance's and the others'.
    watcher: Arc<OnceLock<FrameWatcher>>,
}

/// What is shown each run notification frame with its project (the inbox's fan-out); it
/// must not wait, being called on the writer's thread.
pub(crate) type FrameWatcher = Box<dyn Fn(ProjectId, &Arc<str>) + Send + Sync>;

impl HubRegistry {
    /// Hubs that run on the current arbiter, counting the frames they hand over in `work`.
    pub(crate) fn new(work: &Arc<WorkCounters>) -> HubRegistry {
        HubRegistry {
            hubs: Arc::default(),
            arbiter: Arbiter::current(),
            bus: Arc::default(),
            work: Arc::clone(work),
            watcher: Arc::default(),
        }
    }

    /// Shows every run notification frame offered from now on to `watcher` (once; a second
    /// is ignored).
    pub(crate) fn watch_frames(&self, watcher: FrameWatcher) {
        let _ = self.watcher.set(watcher);
    }

    /// Where the frames handed to clients are counted.
    pub(crate) fn work(&self) -> &WorkCounters {
        &self.work
    }

    /// Sends every frame written here on `bus` from now on (once; a second bus is ignored).
    pub fn connect_bus(&self, bus: FrameBus) {
        let _ = self.bus.set(bus);
    }

    /// The bus [`connect_bus`](Self::connect_bus) gave, if any.
    pub fn bus(&self) -> Option<&FrameBus> {
        self.bus.get()
    }

    /// Sends notifications this instance wrote, in order: to the other instances, and to
    /// everyone bound to their projects here. Called on the writer's thread.
    pub fn offer(&self, events: Vec<NumberedEvent>) {
        for NumberedEvent {
            project,
            run,
            seq,
            text,
        } in events
        {
            if let Some(bus) = self.bus.get() {
                bus.send(BusMessage::Frame(BusFrame {
                    project,
                    run,
                    seq,
                    text: Arc::clone(&text),
                }));
            }
            self.watched(project, &text);
            self.deliver(project, |hub| hub.do_send(Offer(text)));
        }
    }

    /// Offers a frame another instance wrote to everyone bound to its project here.
    pub fn relayed(&self, frame: BusFrame) {
        let BusFrame { project, text, .. } = frame;
        self.watched(project, &text);
        self.deliver(project, |hub| hub.do_send(Offer(text)));
    }

    fn watched(&self, project: ProjectId, text: &Arc<str>) {
        if let Some(watcher) = self.watcher.get() {
            watcher(project, text);
        }
    }

    /// Delivers `project`'s notifications to connection `conn` at `recipient`.
    pub fn subscribe(&self, project: ProjectId, conn: ConnId, recipient: Recipient<Outbound>) {
        self.deliver(project, |hub| hub.do_send(Subscribe { conn, recipient }));
    }

    /// Stops delivering `project`'s notifications to `conn`.
    pub fn unsubscribe(&self, project: ProjectId, conn: ConnId) {
        self.deliver(project, |hub| hub.do_send(Unsubscribe { conn }));
    }

    /// Sends `notification` to everyone bound to `project` now, on this instance and (over the
    /// bus) on the others; no one who binds later ever sees it.
    pub fn broadcast(&self, project: ProjectId, notification: UiNotification) {
        let text: Arc<str> = match notification.frame() {
            Ok(text) => Arc::from(text),
            Err(error) => {
                let method = notification.method();
                tracing::error!(%error, method, "cannot serialize a notification");
                return;
            }
        };
        if let Some(bus) = self.bus.get() {
            bus.send(BusMessage::Broadcast(BusBroadcast {
                project,
                text: Arc::clone(&text),
            }));
        }
        self.deliver(project, |hub| hub.do_send(Offer(text)));
    }

    /// Offers a broadcast from another instance to everyone bound to its project here.
    pub fn relayed_broadcast(&self, BusBroadcast { project, text }: BusBroadcast) {
        self.deliver(project, |hub| hub.do_send(Offer(text)));
    }

    /// Waits until `project`'s hub has offered every frame it was given before this call to
    /// the connections subscribed by then: a connection that subscribed before asking finds,
    /// in the store read after this, every frame it did not get live.
    pub async fn caught_up(&self, project: ProjectId) -> Result<(), MailboxError> {
        self.deliver(project, |hub| hub.send(CaughtUp)).await
    }

    /// How many hubs are alive.
    pub fn live(&self) -> usize {
        self.lock().len()
    }

    /// Whether every hub has handled every message sent to it.
    #[cfg(feature = "testing")]
    pub(crate) fn all_handled(&self) -> bool {
        self.lock()
            .values()
            .all(|listed| listed.sent == listed.handled.load(Ordering::Acquire))
    }

    /// Hands `project`'s hub (started when it has none) to `send`, which must put exactly one
    /// message in its mailbox; under the lock, so the hub cannot retire meanwhile.
    fn deliver<T>(&self, project: ProjectId, send: impl FnOnce(&Addr<ProjectHub>) -> T) -> T {
        let mut hubs = self.lock();
        let listed = hubs.entry(project).or_insert_with(|| {
            let handled = Arc::new(AtomicU64::new(0));
            let hub = ProjectHub {
                project,
                subscribers: HashMap::new(),
                handled: Arc::clone(&handled),
                registry: self.clone(),
            };
            Listed {
                hub: ProjectHub::start_in_arbiter(&self.arbiter, |_| hub),
                sent: 0,
                handled,
            }
        });
        listed.sent += 1;
        send(&listed.hub)
    }

    /// Takes `hub` off the registry when it has handled every message sent to it; false
    /// otherwise.
    fn retire(&self, project: ProjectId, hub: &Addr<ProjectHub>) -> bool {
        let mut hubs = self.lock();
        match hubs.get(&project) {
            Some(listed)
                if listed.hub == *hub && listed.sent == listed.handled.load(Ordering::Acquire) =>
            {
                hubs.remove(&project);
                true
            }
            _ => false,
        }
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<ProjectId, Listed>> {
        self.hubs
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

#[cfg(test)]
mod tests;
