//! The request a loop was asked in, for its trace: the loop runs on its run's actor, outside
//! the request's future, so the request's span waits here, by loop, until the loop's span is
//! made under it. Only while traces are exported; otherwise nothing is kept.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use tracing::Span;

use crate::db::ids::LoopId;

/// Whether spans are exported (set once, at start).
static EXPORTING: AtomicBool = AtomicBool::new(false);

/// The spans of the requests waiting for their loops. Bounded: a loop claimed before its
/// request came to wait (another instance's, a race) leaves its entry, and past the bound
/// a request's loop is traced on its own.
static WAITING: Mutex<Option<HashMap<LoopId, Span>>> = Mutex::new(None);
const MOST_WAITING: usize = 4096;

pub(super) fn exporting() {
    EXPORTING.store(true, Ordering::Relaxed);
}

/// Keeps the current span as the parent of loop `id`'s.
pub(crate) fn asked(id: LoopId) {
    if !EXPORTING.load(Ordering::Relaxed) {
        return;
    }
    let Ok(mut waiting) = WAITING.lock() else {
        return;
    };
    let waiting = waiting.get_or_insert_with(HashMap::new);
    if waiting.len() < MOST_WAITING {
        waiting.insert(id, Span::current());
    }
}

/// The span of the request that asked for loop `id`, once.
pub(crate) fn asker(id: LoopId) -> Option<Span> {
    if !EXPORTING.load(Ordering::Relaxed) {
        return None;
    }
    WAITING.lock().ok()?.as_mut()?.remove(&id)
}
