//! Publishing: notifications queued while the writer is busy share one unit of work, which
//! numbers and appends them (`db::events` says how a notification becomes durable).

use std::sync::{Arc, Mutex, PoisonError};

use super::events::{Publication, Unnumbered};
use super::ids::{ProjectId, RunId};
use super::queries::run_events::{self, EventBounds};
use super::writer::Writer;
use super::DbError;

/// The published notifications not yet taken by a unit of work, and whether one is on its
/// way to take them.
#[derive(Default)]
struct Queue {
    waiting: Vec<Publication>,
    scheduled: bool,
}

/// Publishing: the first notification queued while no publishing unit is on its way sends
/// one to the writer; that unit takes every notification queued by the time it runs.
#[derive(Clone)]
pub(crate) struct EventBatch {
    writer: Writer,
    queue: Arc<Mutex<Queue>>,
    bounds: EventBounds,
}

impl EventBatch {
    pub(crate) fn new(writer: Writer, bounds: EventBounds) -> EventBatch {
        EventBatch {
            writer,
            queue: Arc::default(),
            bounds,
        }
    }

    /// What the log keeps.
    pub(crate) fn bounds(&self) -> EventBounds {
        self.bounds
    }

    /// Queues `publication`; sends a unit to write it unless one is on its way.
    pub(crate) fn add(&self, publication: Publication) {
        let send = {
            let mut queue = self.queue.lock().unwrap_or_else(PoisonError::into_inner);
            queue.waiting.push(publication);
            !std::mem::replace(&mut queue.scheduled, true)
        };
        if send {
            let batch = self.clone();
            self.writer.call_later(move |conn| {
                batch.write(conn).map(|_| ()).inspect_err(
                    |error| tracing::error!(%error, "notifications not written; not sent"),
                )
            });
        }
    }

    /// Takes what is queued and appends it, each run's notifications in the order given.
    fn write(&self, conn: &mut crate::db::Conn) -> Result<usize, DbError> {
        let waiting = {
            let mut queue = self.queue.lock().unwrap_or_else(PoisonError::into_inner);
            queue.scheduled = false;
            std::mem::take(&mut queue.waiting)
        };
        let mut runs: Vec<(ProjectId, RunId, Vec<Unnumbered>)> = Vec::new();
        for Publication {
            project,
            run,
            frame,
        } in waiting
        {
            match runs.iter_mut().find(|(_, listed, _)| *listed == run) {
                Some((_, _, frames)) => frames.push(frame),
                None => runs.push((project, run, vec![frame])),
            }
        }
        let mut written = 0;
        for (project, run, frames) in runs {
            written += run_events::append(conn, &self.bounds, project, run, &frames)?.len();
        }
        Ok(written)
    }
}
