//! How a run's notification becomes durable, then is sent.
//!
//! A notification reaches the store unnumbered ([`Unnumbered`]: its frame's text around a
//! hole for its seq). A unit of work that knows it appends it itself
//! ([`run_events::append`](super::queries::run_events::append), as the turn's unit of work
//! does with the turn's `run/state`); any other is published
//! ([`DbHandle::publish`](super::DbHandle::publish)): queued, and written by the next
//! publishing unit, which takes every notification queued by the time it runs, so those
//! published while the writer is busy share one unit
//! ([`EventBatch`](super::event_batch::EventBatch)). Either way the unit
//! numbers them and stages them in the writer thread's outbox; once the unit has committed,
//! the writer hands them to the [`EventSink`] (the hubs), in commit order. So a frame is sent
//! only after it is durable: whatever a client saw survives any crash, and a unit that fails
//! sends nothing.

use std::cell::RefCell;
use std::sync::Arc;

use super::ids::{ProjectId, RunId};

/// A frame's text with a hole for its seq: `before`, the seq, `after`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unnumbered {
    pub before: String,
    pub after: &'static str,
}

impl Unnumbered {
    /// The frame numbered `seq`.
    pub fn numbered(&self, seq: i64) -> String {
        format!("{}{seq}{}", self.before, self.after)
    }
}

/// A notification of `run` waiting to be numbered and written.
#[derive(Debug, Clone)]
pub struct Publication {
    pub project: ProjectId,
    pub run: RunId,
    pub frame: Unnumbered,
}

/// A notification numbered and written: what is sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NumberedEvent {
    pub project: ProjectId,
    pub run: RunId,
    pub seq: u64,
    pub text: Arc<str>,
}

/// Where the writer hands each committed unit's notifications, in the order they were
/// numbered, on its own thread: it must not block.
#[derive(Clone)]
pub struct EventSink(Arc<dyn Fn(Vec<NumberedEvent>) + Send + Sync>);

impl EventSink {
    pub fn new(sink: impl Fn(Vec<NumberedEvent>) + Send + Sync + 'static) -> EventSink {
        EventSink(Arc::new(sink))
    }

    /// Hands over a unit's notifications (none: not called).
    pub(crate) fn deliver(&self, events: Vec<NumberedEvent>) {
        if !events.is_empty() {
            (self.0)(events);
        }
    }
}

impl std::fmt::Debug for EventSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("EventSink")
    }
}

/// The notifications the current unit of work numbered, and how many this thread has
/// numbered in all. Thread-local because a unit's closure is given the connection alone and
/// the writer is one thread, running one unit at a time.
#[derive(Default)]
struct Outbox {
    staged: Vec<NumberedEvent>,
    numbered: u64,
}

thread_local! {
    static OUTBOX: RefCell<Outbox> = RefCell::default();
}

/// Stages `events` to be sent once the current unit commits; true when this thread's count
/// of numbered notifications just passed a multiple of `every`.
pub(crate) fn stage(events: &[NumberedEvent], every: u64) -> bool {
    OUTBOX.with(|outbox| {
        let mut outbox = outbox.borrow_mut();
        let before = outbox.numbered;
        outbox.numbered += events.len() as u64;
        outbox.staged.extend_from_slice(events);
        outbox.numbered / every.max(1) > before / every.max(1)
    })
}

/// What the current unit staged, emptied: its unit committed.
pub(crate) fn take_staged() -> Vec<NumberedEvent> {
    OUTBOX.with(|outbox| std::mem::take(&mut outbox.borrow_mut().staged))
}

/// Forgets what the current unit staged: it failed, or another begins.
pub(crate) fn discard_staged() {
    OUTBOX.with(|outbox| outbox.borrow_mut().staged.clear());
}
