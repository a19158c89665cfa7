//! Per-project notification fan-out.
//!
//! One [`ProjectHub`] actor per project holds the connections bound to it. A notification
//! is numbered (a per-run `seq`), serialized once, and offered to every subscriber
//! without waiting: a client whose mailbox is full misses it and can see the gap in `seq`.

pub mod notifications;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use actix::prelude::*;

use crate::db::ids::{ProjectId, RunId};
use notifications::Notification;

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

/// The fan-out actor of one project.
#[derive(Default)]
pub struct ProjectHub {
    subscribers: HashMap<ConnId, Recipient<Outbound>>,
    next_seq: HashMap<RunId, u64>,
}

impl Actor for ProjectHub {
    type Context = Context<Self>;
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
        let seq = self.next_seq.entry(run).or_insert(0);
        *seq += 1;
        let text: Arc<str> = match notification.frame(*seq) {
            Ok(text) => Arc::from(text),
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

/// Finds or starts the hub of each project.
#[derive(Clone, Default)]
pub struct HubRegistry {
    hubs: Arc<Mutex<HashMap<ProjectId, Addr<ProjectHub>>>>,
}

impl HubRegistry {
    /// The hub of `project`, started on first use.
    pub fn hub(&self, project: ProjectId) -> Addr<ProjectHub> {
        let mut hubs = self
            .hubs
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        hubs.entry(project)
            .or_insert_with(|| ProjectHub::default().start())
            .clone()
    }

    /// Sends a notification about `run` to everyone bound to `project`.
    pub fn publish(&self, project: ProjectId, run: RunId, notification: Notification) {
        self.hub(project).do_send(Publish { run, notification });
    }
}
