//! Transient facts pruned: when a loop's prompt arrives (before it recalls), the project's
//! transient facts whose project started `RUMMY_MEMORY_TRANSIENT_RUNS` runs since the run
//! that last wrote them are erased (`db::queries::memory::prune_transient`). A transient fact
//! is one the model marked as holding only while the work at hand lasts — the seed's working
//! state, which belongs to a run's session notes, not to the project's lasting memory. A
//! project whose memory is off is left as it is; panic loops only compress.

use crate::db::enums::LoopMode;
use crate::db::queries::memory;
use crate::db::{Conn, DbError};
use crate::plugins::preparation::{Preparation, PreparingTurn};

/// The preparation.
pub(super) struct PruneTransient {
    /// Runs a transient fact outlives the run that last wrote it (0: kept).
    pub runs: u32,
}

impl Preparation for PruneTransient {
    /// Only a loop's first turn, outside panic mode, prunes.
    fn applies(&self, turn: &PreparingTurn<'_>) -> bool {
        turn.prompt.is_some() && turn.mode != LoopMode::Panic
    }

    fn prepare(&self, conn: &mut Conn, turn: &PreparingTurn<'_>) -> Result<(), DbError> {
        if !self.applies(turn) {
            return Ok(());
        }
        if !memory::is_enabled(conn, turn.project)? {
            return Ok(());
        }
        let pruned = memory::prune_transient(conn, turn.project, self.runs)?;
        if pruned > 0 {
            tracing::info!(project.id = %turn.project, pruned, "memory: transient facts pruned");
        }
        Ok(())
    }
}
