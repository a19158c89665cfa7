//! Recall on a prompt: when a loop's first turn writes its prompt, the facts that share the
//! most words with it (the project's, then the server-wide ones, then replaced ones, each
//! best first by the store's full-text rank) are written to the run's `memory://recall`, as
//! many as fit the budget; a prompt that recalls nothing (or memory off) removes the previous recall.
//! Panic loops recall nothing: they only compress.

use std::sync::Arc;

use serde_json::json;

use crate::context::TokenMath;
use crate::db::enums::{Fidelity, LoopMode};
use crate::db::models::entry::{EntryUpsertForm, Selector};
use crate::db::queries::{entries, memory};
use crate::db::{Conn, DbError};
use crate::plugins::preparation::{Preparation, PreparingTurn};

use super::recalled::{candidates, within_budget};
use super::rerank::{reorder, RecallOrders};

/// The entry a prompt's recall is written to.
pub(crate) const RECALL_PATH: &str = "memory://recall";

/// The preparation.
pub(super) struct RecallOnPrompt {
    /// Most tokens of recalled lines.
    pub budget: i64,
    pub tokens: TokenMath,
    /// Where the re-rank hands its orders.
    pub orders: Arc<RecallOrders>,
}

impl Preparation for RecallOnPrompt {
    /// Only a loop's first turn (the one with its prompt), outside panic mode, recalls.
    fn applies(&self, turn: &PreparingTurn<'_>) -> bool {
        turn.prompt.is_some() && turn.mode != LoopMode::Panic
    }

    fn prepare(&self, conn: &mut Conn, turn: &PreparingTurn<'_>) -> Result<(), DbError> {
        let Some(prompt) = turn.prompt.filter(|_| self.applies(turn)) else {
            return Ok(());
        };
        let order = self.orders.take(turn.run, turn.loop_id);
        let lines = match memory::is_enabled(conn, turn.project)? {
            true => {
                let items = candidates(conn, turn.project, prompt)?;
                let items = match order {
                    Some(order) => reorder(items, &order),
                    None => items,
                };
                within_budget(&items, self.budget, self.tokens)
            }
            false => Vec::new(),
        };
        if lines.is_empty() {
            entries::delete_entries(conn, turn.run, &Selector::Path(RECALL_PATH.to_owned()))?;
            return Ok(());
        }
        entries::write_entry(
            conn,
            &EntryUpsertForm {
                fidelity: Some(Fidelity::Full),
                attributes: Some(json!({ "items": lines.len() })),
                ..EntryUpsertForm::new(
                    turn.run,
                    Some(turn.loop_id),
                    turn.turn,
                    RECALL_PATH,
                    lines.join("\n"),
                )
            },
        )
    }
}
