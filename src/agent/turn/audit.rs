//! The turn's audit copies: what the model saw and said, kept at archive fidelity, and the
//! turn's usage, written in the unit of work that records the reply.

use serde_json::json;

use crate::context::Packet;
use crate::db::enums::Fidelity;
use crate::db::ids::{LoopId, RunId};
use crate::db::models::entry::EntryUpsertForm;
use crate::db::models::run::{TurnRow, TurnUsageForm};
use crate::db::queries::{entries, turns};
use crate::db::Conn;
use crate::db::DbError;
use crate::llm::ChatResponse;

/// What the model saw and said (`system://N`, `user://N`, `assistant://N`, `model://N`,
/// `reasoning://N`, `content://N`), kept at archive fidelity, and the turn's usage.
pub(super) struct TurnAudit {
    turn: TurnRow,
    copies: Vec<(String, String)>,
    usage: TurnUsageForm,
}

impl TurnAudit {
    pub(super) fn of(
        turn: &TurnRow,
        packet: &Packet,
        response: &ChatResponse,
        unparsed: &str,
    ) -> TurnAudit {
        let n = turn.sequence;
        let mut copies = vec![
            (format!("system://{n}"), packet.system.clone()),
            (format!("user://{n}"), packet.user.clone()),
            (format!("assistant://{n}"), response.content.clone()),
            (
                format!("model://{n}"),
                json!({"model": response.model, "usage": response.usage, "finish_reason": response.finish_reason})
                    .to_string(),
            ),
        ];
        if let Some(reasoning) = response
            .reasoning_content
            .as_ref()
            .filter(|text| !text.is_empty())
        {
            copies.push((format!("reasoning://{n}"), reasoning.clone()));
        }
        if !unparsed.trim().is_empty() {
            copies.push((format!("content://{n}"), unparsed.trim().to_string()));
        }
        let usage = &response.usage;
        let to_i32 = |value: u64| i32::try_from(value).unwrap_or(i32::MAX);
        let usage = TurnUsageForm {
            context_tokens: to_i32(if usage.prompt_tokens > 0 {
                usage.prompt_tokens
            } else {
                u64::try_from(packet.assembled_tokens).unwrap_or(0)
            }),
            reasoning_content: response.reasoning_content.clone(),
            prompt_tokens: to_i32(usage.prompt_tokens),
            cached_tokens: to_i32(usage.cached_tokens),
            completion_tokens: to_i32(usage.completion_tokens),
            reasoning_tokens: to_i32(usage.reasoning_tokens),
            total_tokens: to_i32(usage.total_tokens),
            cost: usage.cost,
        };
        TurnAudit {
            turn: turn.clone(),
            copies,
            usage,
        }
    }

    pub(super) fn write(self, conn: &mut Conn, run: RunId, loop_id: LoopId) -> Result<(), DbError> {
        let turn = self.turn.sequence;
        for (path, body) in self.copies {
            entries::write_entry(
                conn,
                &EntryUpsertForm {
                    fidelity: Some(Fidelity::Archive),
                    ..EntryUpsertForm::new(run, Some(loop_id), turn, path, body)
                },
            )?;
        }
        turns::update_turn_usage(conn, self.turn.id, &self.usage)?;
        Ok(())
    }
}
