//! Memory hygiene: the history kept within bounds by folding ([`fold_history`]: the newest
//! items of a topic stay, older ones give their place and their count to the oldest that
//! stays), and transient facts pruned once their project moved on ([`prune_transient`]). No
//! model call does either: the rules decide.

use std::collections::BTreeMap;

use diesel::prelude::*;
use diesel::sql_types::BigInt;

use crate::db::ids::{MemoryHistoryId, ProjectId};
use crate::db::schema::memory_history;
use crate::db::statement::statement;
use crate::db::{Conn, DbError};

use super::layer_history;

/// How much history a layer (a project's, the server-wide one) keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct HistoryBounds {
    /// Most items of one topic (at least 1).
    pub per_topic: usize,
    /// Most items of the layer (at least 1).
    pub items: usize,
}

/// An item of the history as folding sees it.
type Folding = (MemoryHistoryId, String, i32);

/// Keeps `layer`'s history within `bounds` after an item on `topic` joined it: past
/// `per_topic` items of the topic, the older ones are folded into the oldest that stays;
/// past `items` items of the layer, the oldest are folded into the oldest item of their own
/// topic that stays (dropped outright when none does). A folded item's text goes; its count,
/// and the count it carried, is added to the item it is folded into.
pub(crate) fn fold_history(
    conn: &mut Conn,
    layer: Option<ProjectId>,
    topic: &str,
    bounds: HistoryBounds,
) -> Result<(), DbError> {
    let of_topic: Vec<Folding> = layer_history(layer)
        .filter(memory_history::topic.eq(topic))
        .order(memory_history::id.desc())
        .select((
            memory_history::id,
            memory_history::topic,
            memory_history::folded,
        ))
        .load(conn)?;
    if let Some(older) = of_topic.get(bounds.per_topic.max(1)..) {
        fold(conn, layer, older)?;
    }
    let total: i64 = layer_history(layer).count().get_result(conn)?;
    let excess = total - i64::try_from(bounds.items.max(1)).unwrap_or(i64::MAX);
    if excess > 0 {
        let oldest: Vec<Folding> = layer_history(layer)
            .order(memory_history::id.asc())
            .limit(excess)
            .select((
                memory_history::id,
                memory_history::topic,
                memory_history::folded,
            ))
            .load(conn)?;
        fold(conn, layer, &oldest)?;
    }
    Ok(())
}

/// Folds `items` (each older than every item of its topic that stays) into the oldest item
/// of their topic that stays, or drops them when none does.
fn fold(conn: &mut Conn, layer: Option<ProjectId>, items: &[Folding]) -> Result<(), DbError> {
    let mut by_topic: BTreeMap<&str, Vec<&Folding>> = BTreeMap::new();
    for item in items {
        by_topic.entry(item.1.as_str()).or_default().push(item);
    }
    for (topic, folding) in by_topic {
        let ids: Vec<MemoryHistoryId> = folding.iter().map(|item| item.0).collect();
        let count: i32 = folding.iter().map(|item| item.2.saturating_add(1)).sum();
        diesel::delete(memory_history::table.filter(memory_history::id.eq_any(&ids)))
            .execute(conn)?;
        hand_down(conn, layer, topic, count)?;
    }
    Ok(())
}

/// Adds `count` folded items to the oldest item of `topic` in `layer`'s history, if any.
pub(super) fn hand_down(
    conn: &mut Conn,
    layer: Option<ProjectId>,
    topic: &str,
    count: i32,
) -> Result<(), DbError> {
    if count == 0 {
        return Ok(());
    }
    let heir = layer_history(layer)
        .filter(memory_history::topic.eq(topic))
        .order(memory_history::id.asc())
        .select(memory_history::id)
        .first::<MemoryHistoryId>(conn)
        .optional()?;
    if let Some(heir) = heir {
        diesel::update(memory_history::table.find(heir))
            .set(memory_history::folded.eq(memory_history::folded + count))
            .execute(conn)?;
    }
    Ok(())
}

/// Erases `project`'s transient facts once the project started `runs` runs (not counting
/// sub-agents' runs) after the run that last wrote one; a fact whose run is gone (purged
/// after `RUMMY_RETENTION_DAYS`) goes too. `runs == 0` keeps them. A person's fact is never
/// erased here. How many went (not kept in the history: they held only for their work).
pub(crate) fn prune_transient(
    conn: &mut Conn,
    project: ProjectId,
    runs: u32,
) -> Result<usize, DbError> {
    if runs == 0 {
        return Ok(0);
    }
    Ok(statement(
        "DELETE FROM memory_facts
         WHERE project_id = ? AND transient AND NOT by_person
           AND (run_id IS NULL OR (
               SELECT count(*) FROM runs
               WHERE runs.project_id = memory_facts.project_id
                 AND runs.id > memory_facts.run_id
                 AND runs.delegated_by IS NULL) >= ?)",
    )
    .bind::<BigInt, _>(project.0)
    .bind::<BigInt, _>(i64::from(runs))
    .execute(conn)?)
}

#[cfg(test)]
mod tests;
