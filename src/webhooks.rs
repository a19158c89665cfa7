//! Notifications outside the socket: a project's webhooks (docs/src/webhooks.md). An admin
//! adds one (`webhooks/add`: a URL, the [`Event`]s it is sent, a [`Format`], a secret shown
//! once); each event of the project becomes a delivery in the store's outbox, written in
//! the unit of work that makes the event — a run's end by the store's trigger on the event
//! log (`approval.pending`, `run.finished`, `run.failed`, `cap.reached`), a cap's warning by
//! the ledger's unit (`cap.warning`) — and only for the webhooks sent it, so a project
//! without webhooks writes nothing. A background [`worker`] on each instance claims due
//! deliveries (one instance each, `db::queries::webhooks::deliveries`), POSTs each
//! [`payload`] signed ([`signature`]) with a timeout per attempt and no redirects, records
//! every attempt, and retries a failed one with exponential backoff and jitter
//! ([`backoff`]) up to `RUMMY_WEBHOOK_ATTEMPTS`. Nothing here is on a turn's path: a
//! receiver that hangs or fails slows no run, and what is pending survives a restart.

pub(crate) mod backoff;
mod event;
pub(crate) mod payload;
pub(crate) mod signature;
pub(crate) mod target;
pub(crate) mod worker;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use tokio::sync::Notify;

use crate::db::events::NumberedEvent;

pub(crate) use event::{Event, Format};

/// The start of a `run/outcome` frame, the one notification the store's trigger turns into
/// deliveries.
const OUTCOME_FRAME: &str = r#"{"jsonrpc":"2.0","method":"run/outcome","#;

/// What this instance knows of the store's webhooks, and how its worker is woken. Cheap to
/// clone.
#[derive(Clone, Default)]
pub(crate) struct Webhooks {
    shared: Arc<Shared>,
}

#[derive(Default)]
struct Shared {
    /// The store has a webhook or a pending delivery, as last learnt.
    known: AtomicBool,
    wake: Notify,
}

impl Webhooks {
    /// Whether the store has webhooks (or deliveries pending), as this instance last learnt.
    pub(crate) fn known(&self) -> bool {
        self.shared.known.load(Ordering::Acquire)
    }

    /// The store has webhooks (`any`) or none now; the worker looks again.
    pub(crate) fn learnt(&self, any: bool) {
        self.shared.known.store(any, Ordering::Release);
        self.shared.wake.notify_one();
    }

    /// Told of what a committed unit of work wrote to the event log: a run's end, when the
    /// store has webhooks, may have made deliveries, so the worker looks now rather than at
    /// its next poll. Reads no store.
    pub(crate) fn saw(&self, events: &[NumberedEvent]) {
        if self.known()
            && events
                .iter()
                .any(|event| event.text.starts_with(OUTCOME_FRAME))
        {
            self.shared.wake.notify_one();
        }
    }

    /// Resolves when something woke the worker.
    async fn woken(&self) {
        self.shared.wake.notified().await;
    }
}
