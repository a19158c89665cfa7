//! Per-project notification fan-out.
//!
//! One [`ProjectHub`] actor per project holds the connections bound to it. A notification
//! is numbered (a per-run `seq`), serialized once, kept a while ([`replay`]) and offered to
//! every subscriber without waiting: a client whose mailbox is full misses it, sees the gap
//! in `seq`, and asks for what it missed ([`Replay`]).

pub mod notifications;
pub mod replay;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use actix::prelude::*;

use crate::db::ids::{ProjectId, RunId};
use notifications::Notification;
use replay::{ReplayError, ReplayLimits, RunLogs};

/// Identity of one client connection, unique for the server's lifetime.
pub type ConnId = u64;

/// A serialized notification frame, shared by every subscriber.
#[derive(Debug, Clone, Message)]
#[rtype(result = "()")]
pub struct Outbound(pub Arc<str>);

/// Start delivering a project's notifications to a connection.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Subscribe {
    pub conn: ConnId,
    /// Where its frames go.
    pub recipient: Recipient<Outbound>,
}

/// Stop delivering to a connection.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Unsubscribe {
    pub conn: ConnId,
}

/// Number a notification of `run` and send it to every subscriber.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Publish {
    /// The run it is about; its notifications are numbered 1, 2, ...
    pub run: RunId,
    pub notification: Notification,
}

/// The kept frames of `run` after seq `since`, in order. Answered in the hub's mailbox
/// order: a connection that subscribed before asking gets, live or here, every frame after
/// `since` (some maybe both ways, the same seq).
#[derive(Message)]
#[rtype(result = "Result<Vec<Arc<str>>, ReplayError>")]
pub struct Replay {
    pub run: RunId,
    pub since: u64,
}

/// The fan-out actor of one project.
pub struct ProjectHub {
    subscribers: HashMap<ConnId, Recipient<Outbound>>,
    logs: RunLogs,
}

impl ProjectHub {
    pub fn new(limits: ReplayLimits) -> ProjectHub {
        ProjectHub {
            subscribers: HashMap::new(),
            logs: RunLogs::new(limits),
        }
    }
}

impl Actor for ProjectHub {
    type Context = Context<Self>;

    /// Sweeps the logs every `keep`: a quiet run is freed within twice that.
    fn started(&mut self, ctx: &mut Context<Self>) {
        ctx.run_interval(self.logs.keep(), |hub, _| hub.logs.sweep(Instant::now()));
    }
}

impl Handler<Subscribe> for ProjectHub {
    type Result = ();
    fn handle(&mut self, message: Subscribe, _: &mut Context<Self>) {
        self.subscribers.insert(message.conn, message.recipient);
    }
}

impl Handler<Unsubscribe> for ProjectHub {
    type Result = ();
    fn handle(&mut self, message: Unsubscribe, _: &mut Context<Self>) {
        self.subscribers.remove(&message.conn);
    }
}

impl Handler<Publish> for ProjectHub {
    type Result = ();
    fn handle(&mut self, Publish { run, notification }: Publish, _: &mut Context<Self>) {
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
        self.subscribers.retain(|conn, recipient| {
            match recipient.try_send(Outbound(Arc::clone(&text))) {
                Ok(()) => true,
                Err(SendError::Full(_)) => {
                    tracing::warn!(conn, "client mailbox full; notification dropped");
                    true
                }
                Err(SendError::Closed(_)) => false,
            }
        });
    }
}

impl Handler<Replay> for ProjectHub {
    type Result = Result<Vec<Arc<str>>, ReplayError>;
    fn handle(&mut self, Replay { run, since }: Replay, _: &mut Context<Self>) -> Self::Result {
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

/// Finds or starts the hub of each project.
#[derive(Clone)]
pub struct HubRegistry {
    hubs: Arc<Mutex<HashMap<ProjectId, Addr<ProjectHub>>>>,
    limits: ReplayLimits,
}

impl HubRegistry {
    /// Hubs that keep what `limits` allows for replay.
    pub fn new(limits: ReplayLimits) -> HubRegistry {
        HubRegistry {
            hubs: Arc::default(),
            limits,
        }
    }

    /// The hub of `project`, started on first use.
    pub fn hub(&self, project: ProjectId) -> Addr<ProjectHub> {
        let mut hubs = self
            .hubs
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        hubs.entry(project)
            .or_insert_with(|| ProjectHub::new(self.limits).start())
            .clone()
    }

    /// Sends a notification about `run` to everyone bound to `project`.
    pub fn publish(&self, project: ProjectId, run: RunId, notification: Notification) {
        self.hub(project).do_send(Publish { run, notification });
    }

    /// The kept frames of `run` after seq `since`, asked of `project`'s hub.
    pub async fn replay(
        &self,
        project: ProjectId,
        run: RunId,
        since: u64,
    ) -> Result<Result<Vec<Arc<str>>, ReplayError>, MailboxError> {
        self.hub(project).send(Replay { run, since }).await
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
    async fn a_hub_keeps_what_it_published_and_frees_a_quiet_run_by_itself() {
        let keep = Duration::from_millis(20);
        let hub = ProjectHub::new(ReplayLimits {
            per_run: 8,
            runs: 4,
            keep,
        })
        .start();
        let published_at = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_micros();
        for _ in 0..2 {
            hub.send(Publish {
                run: RUN,
                notification: thinking(),
            })
            .await
            .unwrap();
        }
        let kept = hub
            .send(Replay { run: RUN, since: 0 })
            .await
            .unwrap()
            .unwrap();
        let seqs: Vec<u64> = kept.iter().map(|frame| seq_of(frame)).collect();
        assert!(
            u128::from(seqs[0]) > published_at,
            "numbered from the clock: {seqs:?}"
        );
        assert_eq!(seqs[1], seqs[0] + 1);
        let freed = Err(ReplayError::NotKept { since: seqs[1] });
        for _ in 0..500 {
            if hub
                .send(Replay {
                    run: RUN,
                    since: seqs[1],
                })
                .await
                .unwrap()
                == freed
            {
                return;
            }
            tokio::time::sleep(keep).await;
        }
        panic!("the quiet run was never freed");
    }
}
