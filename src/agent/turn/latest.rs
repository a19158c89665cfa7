//! What the run's latest audit copies hold, as far as its actor knows: the latest
//! `system://` copy and the latest context snapshot. The run's actor holds them across its
//! loops, so a loop whose system message or context did not change writes none of it again;
//! a new actor (after a restart, or once the actor left idle) holds nothing, and its first
//! turn compares with nothing (the system message) or with the store (the snapshot).

use crate::agent::turn::LatestSystemCopy;
use crate::context::snapshot::LatestSnapshot;

/// The run's latest `system://` copy and context snapshot, as far as its actor knows.
#[derive(Default)]
pub(crate) struct LatestWritten {
    pub system: LatestSystemCopy,
    pub snapshot: LatestSnapshot,
}
