//! Per-project notification fan-out.
//!
//! One [`ProjectHub`] actor per project holds the connections bound to it. A notification
//! is numbered (a per-run `seq`), serialized once, kept a while ([`replay`]) and offered to
//! every subscriber without waiting: a client whose mailbox is full misses it, sees the gap
//! in `seq`, and asks for what it missed ([`Replay`]). A plugin's `ui/render` and `ui/notify`
//! ([`Broadcast`]) are about no run: offered the same way, never numbered nor kept. A hub left with no subscriber and
//! nothing kept retires, so a closed project leaves nothing behind; every message reaches a
//! hub through the [`HubRegistry`], which never lets one retire with a message unhandled.
//!
//! With several instances on one store, a run's frames are numbered by the instance executing
//! it and sent to the others over the [`FrameBus`]; each instance's hub of the project keeps
//! and offers them ([`Relayed`]) with the same `seq`, in the same order. A `ui/render` or
//! `ui/notify` crosses the bus too, so it reaches the project's clients on every instance.
//!
//! Each frame a hub hands to a subscriber is counted in the server's [`WorkCounters`].

pub(crate) mod notifications;
pub(crate) mod replay;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use actix::prelude::*;

use crate::cluster::bus::{BusBroadcast, BusFrame, BusMessage, FrameBus};
use crate::db::ids::{ProjectId, RunId};
use crate::metrics::WorkCounters;
use notifications::{Notification, UiNotification};
use replay::{ReplayError, ReplayLimits, RunLogs, ServerFrames};

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

/// Number a notification of `run` and send it to every subscriber.
#[derive(Message)]
#[rtype(result = "()")]
pub(crate) struct Publish {
    /// The run it is about; its notifications are numbered 1, 2, ...
    pub run: RunId,
    pub notification: Notification,
}

/// Keep a frame of `run` another instance numbered and send it to every subscriber.
#[derive(Message)]
#[rtype(result = "()")]
pub(crate) struct Relayed {
    pub run: RunId,
    pub seq: u64,
    pub text: Arc<str>,
}

/// Send a project-wide frame to every subscriber, unnumbered and not kept.
#[derive(Message)]
#[rtype(result = "()")]
pub(crate) struct Broadcast(pub Arc<str>);

/// The kept frames of `run` after seq `since`, in order. Answered in the hub's mailbox
/// order: a connection that subscribed before asking gets, live or here, every frame after
/// `since` (some maybe both ways, the same seq).
#[derive(Message)]
#[rtype(result = "Result<Vec<Arc<str>>, ReplayError>")]
pub(crate) struct Replay {
    pub run: RunId,
    pub since: u64,
}

/// The fan-out actor of one project.
pub(crate) struct ProjectHub {
    project: ProjectId,
    subscribers: HashMap<ConnId, Recipient<Outbound>>,
    logs: RunLogs,
    /// Messages handled so far, which the registry compares with those it sent.
    handled: Arc<AtomicU64>,
    /// Where it is listed, to leave when it retires.
    registry: HubRegistry,
}

impl ProjectHub {
    fn handled_one(&self) {
        self.handled.fetch_add(1, Ordering::AcqRel);
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

    /// Sweeps the logs every `keep`: a quiet run is freed within twice that, and a hub with
    /// no subscriber and nothing kept retires.
    fn started(&mut self, ctx: &mut Context<Self>) {
        ctx.run_interval(self.logs.keep(), |hub, ctx| {
            hub.logs.sweep(Instant::now());
            if hub.subscribers.is_empty()
                && hub.logs.is_empty()
                && hub.registry.retire(hub.project, &ctx.address())
            {
                ctx.stop();
            }
        });
    }
}

impl Handler<Subscribe> for ProjectHub {
    type Result = ();
    fn handle(&mut self, message: Subscribe, _: &mut Context<Self>) {
        self.handled_one();
        self.subscribers.insert(message.conn, message.recipient);
    }
}

impl Handler<Unsubscribe> for ProjectHub {
    type Result = ();
    fn handle(&mut self, message: Unsubscribe, _: &mut Context<Self>) {
        self.handled_one();
        self.subscribers.remove(&message.conn);
    }
}

impl Handler<Publish> for ProjectHub {
    type Result = ();
    /// Counted handled once it is done, its frame on the bus too (a test waits for the bus
    /// after the hubs).
    fn handle(&mut self, Publish { run, notification }: Publish, _: &mut Context<Self>) {
        self.publish(run, &notification);
        self.handled_one();
    }
}

impl ProjectHub {
    /// Numbers, keeps and offers `notification` of `run`, and sends it on the bus.
    fn publish(&mut self, run: RunId, notification: &Notification) {
        let framed = self.logs.record(run, Instant::now(), clock_us(), |seq| {
            notification.frame(seq).map(Arc::from)
        });
        let text = match framed {
            Ok(text) => text,
            Err(error) => {
                let method = notification.method();
                tracing::error!(%error, method, "cannot serialize a notification");
                return;
            }
        };
        self.offer(&text);
        if let (Some(bus), Some(seq)) = (self.registry.bus.get(), self.logs.last(run)) {
            bus.send(BusMessage::Frame(BusFrame {
                project: self.project,
                run,
                seq,
                text,
            }));
        }
    }
}

impl Handler<Relayed> for ProjectHub {
    type Result = ();
    fn handle(&mut self, Relayed { run, seq, text }: Relayed, _: &mut Context<Self>) {
        self.handled_one();
        if self
            .logs
            .keep_numbered(run, Instant::now(), seq, Arc::clone(&text))
        {
            self.offer(&text);
        }
    }
}

impl Handler<Broadcast> for ProjectHub {
    type Result = ();
    fn handle(&mut self, Broadcast(text): Broadcast, _: &mut Context<Self>) {
        self.handled_one();
        self.offer(&text);
    }
}

impl Handler<Replay> for ProjectHub {
    type Result = Result<Vec<Arc<str>>, ReplayError>;
    fn handle(&mut self, Replay { run, since }: Replay, _: &mut Context<Self>) -> Self::Result {
        self.handled_one();
        self.logs.after(run, since)
    }
}

/// Microseconds since the epoch: where a run's numbering starts, above what it had before a
/// restart.
fn clock_us() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| {
            u64::try_from(elapsed.as_micros()).unwrap_or(u64::MAX)
        })
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
    limits: ReplayLimits,
    frames: ServerFrames,
    /// Where the frames numbered here go to the other instances, once connected.
    bus: Arc<OnceLock<FrameBus>>,
    /// Where the frames handed to subscribers are counted.
    work: Arc<WorkCounters>,
}

impl HubRegistry {
    /// Hubs that keep what `limits` allows for replay, counting the frames they hand over
    /// in `work`.
    pub(crate) fn new(limits: ReplayLimits, work: &Arc<WorkCounters>) -> HubRegistry {
        HubRegistry {
            hubs: Arc::default(),
            limits,
            frames: ServerFrames::default(),
            bus: Arc::default(),
            work: Arc::clone(work),
        }
    }

    /// Sends every frame numbered here on `bus` from now on (once; a second bus is ignored).
    pub fn connect_bus(&self, bus: FrameBus) {
        let _ = self.bus.set(bus);
    }

    /// The bus [`connect_bus`](Self::connect_bus) gave, if any.
    pub fn bus(&self) -> Option<&FrameBus> {
        self.bus.get()
    }

    /// Offers a frame another instance numbered to everyone bound to its project here.
    pub fn relayed(&self, frame: BusFrame) {
        let BusFrame {
            project,
            run,
            seq,
            text,
        } = frame;
        self.deliver(project, |hub| hub.do_send(Relayed { run, seq, text }));
    }

    /// Delivers `project`'s notifications to connection `conn` at `recipient`.
    pub fn subscribe(&self, project: ProjectId, conn: ConnId, recipient: Recipient<Outbound>) {
        self.deliver(project, |hub| hub.do_send(Subscribe { conn, recipient }));
    }

    /// Stops delivering `project`'s notifications to `conn`.
    pub fn unsubscribe(&self, project: ProjectId, conn: ConnId) {
        self.deliver(project, |hub| hub.do_send(Unsubscribe { conn }));
    }

    /// Sends a notification about `run` to everyone bound to `project`.
    pub fn publish(&self, project: ProjectId, run: RunId, notification: Notification) {
        self.deliver(project, |hub| hub.do_send(Publish { run, notification }));
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
        self.deliver(project, |hub| hub.do_send(Broadcast(text)));
    }

    /// Offers a broadcast from another instance to everyone bound to its project here.
    pub fn relayed_broadcast(&self, BusBroadcast { project, text }: BusBroadcast) {
        self.deliver(project, |hub| hub.do_send(Broadcast(text)));
    }

    /// The kept frames of `run` after seq `since`, asked of `project`'s hub.
    pub async fn replay(
        &self,
        project: ProjectId,
        run: RunId,
        since: u64,
    ) -> Result<Result<Vec<Arc<str>>, ReplayError>, MailboxError> {
        self.deliver(project, |hub| hub.send(Replay { run, since }))
            .await
    }

    /// Bytes of the frames kept for `run/replay`, every project together.
    pub fn replay_bytes(&self) -> usize {
        self.frames.bytes()
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
                logs: RunLogs::new(self.limits, self.frames.clone()),
                handled: Arc::clone(&handled),
                registry: self.clone(),
            }
            .start();
            Listed {
                hub,
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
mod tests {
    use std::time::Duration;

    use super::*;
    use notifications::{ProgressStatus, RunProgress};

    const RUN: RunId = RunId(7);

    fn thinking() -> Notification {
        Notification::Progress(RunProgress {
            run: "r".into(),
            turn: 1,
            status: ProgressStatus::Thinking,
        })
    }

    fn seq_of(frame: &str) -> u64 {
        let frame: serde_json::Value = serde_json::from_str(frame).unwrap();
        frame["params"]["seq"].as_u64().unwrap()
    }

    #[actix::test]
    async fn a_hub_keeps_what_it_published_frees_a_quiet_run_and_then_retires() {
        let keep = Duration::from_millis(20);
        let hubs = HubRegistry::new(
            ReplayLimits {
                per_run: 8,
                runs: 4,
                bytes: usize::MAX,
                server_bytes: usize::MAX,
                keep,
            },
            &Arc::default(),
        );
        let published_at = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_micros() as u64;
        for _ in 0..2 {
            hubs.publish(ProjectId(1), RUN, thinking());
        }
        let kept = hubs.replay(ProjectId(1), RUN, 0).await.unwrap().unwrap();
        let seqs: Vec<u64> = kept.iter().map(|frame| seq_of(frame)).collect();
        assert!(seqs[0] > published_at, "numbered from the clock: {seqs:?}");
        assert_eq!(seqs[1], seqs[0] + 1);
        assert_eq!(hubs.live(), 1);
        let kept_bytes: usize = kept.iter().map(|frame| frame.len()).sum();
        assert_eq!(hubs.replay_bytes(), kept_bytes, "counted server-wide");
        for _ in 0..500 {
            if hubs.live() == 0 {
                assert_eq!(
                    hubs.replay_bytes(),
                    0,
                    "a retired hub's frames count no more"
                );
                let after = hubs.replay(ProjectId(1), RUN, seqs[1]).await.unwrap();
                assert_eq!(after, Err(ReplayError::NotKept { since: seqs[1] }));
                return;
            }
            tokio::time::sleep(keep).await;
        }
        panic!("the quiet hub never retired");
    }

    /// Stands in for a session: counts the frames it gets.
    struct Counter(Arc<AtomicU64>);

    impl Actor for Counter {
        type Context = Context<Self>;
    }

    impl Handler<Outbound> for Counter {
        type Result = ();
        fn handle(&mut self, _: Outbound, _: &mut Context<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    #[actix::test]
    async fn a_hub_with_a_subscriber_stays_and_one_retires_only_with_nothing_unhandled() {
        let keep = Duration::from_millis(10);
        let work = Arc::new(WorkCounters::default());
        let hubs = HubRegistry::new(
            ReplayLimits {
                per_run: 8,
                runs: 4,
                bytes: usize::MAX,
                server_bytes: usize::MAX,
                keep,
            },
            &work,
        );
        let frames = Arc::new(AtomicU64::new(0));
        let counter = Counter(Arc::clone(&frames)).start();
        hubs.subscribe(ProjectId(1), 1, counter.recipient());
        hubs.publish(ProjectId(1), RUN, thinking());
        while frames.load(Ordering::SeqCst) == 0 {
            tokio::time::sleep(keep).await;
        }
        let kept = hubs.replay(ProjectId(1), RUN, 0).await.unwrap().unwrap();
        let handed = (work.count().frames, work.count().frame_bytes);
        assert_eq!(
            handed,
            (1, kept[0].len() as u64),
            "the frame handed over, counted"
        );
        tokio::time::sleep(keep * 10).await;
        assert_eq!(hubs.live(), 1, "a subscriber keeps its hub");

        let listed = {
            let hubs = hubs.lock();
            let listed = &hubs[&ProjectId(1)];
            (listed.hub.clone(), Arc::clone(&listed.handled))
        };
        hubs.lock().get_mut(&ProjectId(1)).unwrap().sent += 1;
        assert!(
            !hubs.retire(ProjectId(1), &listed.0),
            "a message on its way keeps the hub"
        );
        listed.1.fetch_add(1, Ordering::SeqCst);
        assert!(hubs.retire(ProjectId(1), &listed.0));
        assert_eq!(hubs.live(), 0);
        assert!(!hubs.retire(ProjectId(1), &listed.0), "already gone");
    }
}
