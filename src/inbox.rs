//! A person's inbox: what waits for them across all their projects, computed from the store
//! on demand (`inbox`), newest first — runs waiting on proposals in the projects where their
//! role may resolve them (member and up), and the runs whose latest loop they asked for that
//! a cap stopped (402), that failed (413, 500) or that finished (200). The operator's inbox
//! is the server's, with no users file or with the shared token. An item goes when what it
//! tells of changes (someone resolves the proposals, the run is continued) or when the
//! person dismisses it (`inbox/dismiss`, until the run has something new); nothing is
//! written when a run changes, so a turn costs nothing more.
//!
//! `inbox/changed` tells the connections that asked for their inbox (here: [`Inbox::watch`])
//! that it may have changed: when a run of a project they may open ends a loop or is acted
//! on (its `run/outcome` or `run/action`, which every instance sees: its own, and the others'
//! over the bus), and when the same person dismisses an item, on any instance (the bus's
//! inbox channel). No connection asking, nothing is done.

pub(crate) mod items;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use actix::prelude::*;
use serde::Deserialize;

use crate::access::{Access, Caller};
use crate::cluster::bus::{BusInbox, BusMessage};
use crate::db::ids::ProjectId;
use crate::db::queries::projects;
use crate::db::DbHandle;
use crate::hub::notifications::{InboxChanged, UiNotification};
use crate::hub::{ConnId, HubRegistry, Outbound};

use items::ItemId;

/// A connection that asked for its inbox.
struct Watcher {
    caller: Caller,
    access: Access,
    recipient: Recipient<Outbound>,
}

/// This instance's connections told of changes to their inboxes. Cheap to clone.
#[derive(Clone)]
pub(crate) struct Inbox {
    db: DbHandle,
    hubs: HubRegistry,
    /// Where the fan-out runs: frames are seen on the writer's thread and the bus's.
    arbiter: ArbiterHandle,
    watchers: Arc<Mutex<HashMap<ConnId, Watcher>>>,
}

/// The two notifications of a run that may change an inbox.
const CHANGING: [&str; 2] = [
    r#"{"jsonrpc":"2.0","method":"run/outcome","#,
    r#"{"jsonrpc":"2.0","method":"run/action","#,
];

impl Inbox {
    /// An inbox fan-out on the current arbiter.
    pub(crate) fn new(db: DbHandle, hubs: HubRegistry) -> Inbox {
        Inbox {
            db,
            hubs,
            arbiter: Arbiter::current(),
            watchers: Arc::default(),
        }
    }

    /// Tells `conn` (acting for `caller`) of every change to its inbox from now on, until
    /// it closes.
    pub(crate) fn watch(
        &self,
        conn: ConnId,
        caller: Caller,
        access: Access,
        recipient: Recipient<Outbound>,
    ) {
        self.lock().insert(
            conn,
            Watcher {
                caller,
                access,
                recipient,
            },
        );
    }

    /// Forgets a closed connection.
    pub(crate) fn closed(&self, conn: ConnId) {
        self.lock().remove(&conn);
    }

    /// Looks at a run's notification frame of `project` written here or on another
    /// instance; one that may change an inbox is told to the watchers who may open the
    /// project. Called on the writer's thread and the bus's: it never waits.
    pub(crate) fn saw(&self, project: ProjectId, frame: &Arc<str>) {
        if self.lock().is_empty() || !CHANGING.iter().any(|head| frame.starts_with(head)) {
            return;
        }
        let (inbox, frame) = (self.clone(), Arc::clone(frame));
        self.arbiter
            .spawn(async move { inbox.changed(project, &frame).await });
    }

    /// Tells `person`'s watchers here, and (over the bus) on the other instances, that they
    /// dismissed `item`.
    pub(crate) fn dismissed(&self, person: Option<&str>, item: &ItemId) {
        let text = match (UiNotification::InboxChanged(InboxChanged {
            project: None,
            run: None,
            dismissed: Some(item.to_string()),
        }))
        .frame()
        {
            Ok(text) => Arc::<str>::from(text),
            Err(error) => {
                tracing::error!(%error, "cannot serialize inbox/changed");
                return;
            }
        };
        if let Some(bus) = self.hubs.bus() {
            bus.send(BusMessage::Inbox(BusInbox {
                person: person.map(str::to_owned),
                text: Arc::clone(&text),
            }));
        }
        self.tell_person(person, &text);
    }

    /// Offers a dismissal another instance sent to its person's watchers here.
    pub(crate) fn relayed(&self, BusInbox { person, text }: BusInbox) {
        self.tell_person(person.as_deref(), &text);
    }

    fn tell_person(&self, person: Option<&str>, text: &Arc<str>) {
        for watcher in self.lock().values() {
            if watcher.caller.person() == person {
                self.send(watcher, text);
            }
        }
    }

    /// Tells the watchers who may open `project` that its run in `frame` changed.
    async fn changed(&self, project: ProjectId, frame: &str) {
        #[derive(Deserialize)]
        struct Frame {
            params: Params,
        }
        #[derive(Deserialize)]
        struct Params {
            run: String,
        }
        let run = serde_json::from_str::<Frame>(frame)
            .ok()
            .map(|frame| frame.params.run);
        let name = match self
            .db
            .read(move |conn| projects::get_project(conn, project))
            .await
        {
            Ok(Some(row)) => row.name,
            Ok(None) => return,
            Err(error) => {
                tracing::warn!(%error, "cannot read the project of a changed inbox");
                return;
            }
        };
        let notification = UiNotification::InboxChanged(InboxChanged {
            project: Some(name.clone()),
            run,
            dismissed: None,
        });
        let text: Arc<str> = match notification.frame() {
            Ok(text) => Arc::from(text),
            Err(error) => {
                tracing::error!(%error, "cannot serialize inbox/changed");
                return;
            }
        };
        for watcher in self.lock().values() {
            let may_open = watcher
                .access
                .grant(&watcher.caller)
                .is_ok_and(|grant| grant.open(&name).is_ok());
            if may_open {
                self.send(watcher, &text);
            }
        }
    }

    fn send(&self, watcher: &Watcher, text: &Arc<str>) {
        if watcher
            .recipient
            .try_send(Outbound(Arc::clone(text)))
            .is_ok()
        {
            self.hubs.work().frame(text.len());
        }
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<ConnId, Watcher>> {
        self.watchers
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}
