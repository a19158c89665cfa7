//! Every open connection, so a stopping server can close them all with 1001.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use actix::prelude::*;

use crate::hub::ConnId;

/// Close the connection: the server is stopping.
#[derive(Debug, Clone, Copy, Message)]
#[rtype(result = "()")]
pub(crate) struct Shutdown;

/// The open connections, by id.
#[derive(Clone, Default)]
pub(crate) struct ConnectionRegistry {
    next_id: Arc<AtomicU64>,
    open: Arc<Mutex<HashMap<ConnId, Recipient<Shutdown>>>>,
}

impl ConnectionRegistry {
    /// A fresh connection id.
    pub(crate) fn next_id(&self) -> ConnId {
        self.next_id.fetch_add(1, Ordering::Relaxed) + 1
    }

    /// Records an open connection.
    pub(crate) fn register(&self, id: ConnId, recipient: Recipient<Shutdown>) {
        self.lock().insert(id, recipient);
    }

    /// Forgets a closed connection.
    pub(crate) fn deregister(&self, id: ConnId) {
        self.lock().remove(&id);
    }

    /// Asks every open connection to close.
    pub(crate) fn shutdown_all(&self) {
        for recipient in self.lock().values() {
            recipient.do_send(Shutdown);
        }
    }

    /// How many connections are open.
    #[cfg(any(test, feature = "testing"))]
    pub(crate) fn count(&self) -> usize {
        self.lock().len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<ConnId, Recipient<Shutdown>>> {
        self.open
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}
