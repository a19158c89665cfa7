//! The turn's audit copies: what the model saw and said, kept at archive fidelity, and the
//! turn's usage, written in the unit of work that records the reply. The system message is
//! copied only when it differs from the run's latest copy, which the run's actor holds across
//! its loops (`LatestWritten`), so the system message turn `N` saw is the run's latest
//! `system://M` with `M ≤ N`. What the actor holds counts only while it is the copy of the
//! run's latest turn: when it holds none (a new actor, after the run was idle, a restart, or
//! another instance's turns; a turn prepared again), the turn compares with the run's latest
//! stored copy, read in the unit that records it (the run's first turn has none to read).

use std::sync::{Mutex, PoisonError};

use serde_json::json;

use crate::context::Packet;
use crate::db::ids::{LoopId, RunId};
use crate::db::models::run::{TurnRow, TurnUsageForm};
use crate::db::queries::{entries, turns};
use crate::db::Conn;
use crate::db::DbError;
use crate::llm::ChatResponse;

/// What the run's latest `system://` copy holds, as far as its actor knows: nothing before
/// the actor's first turn recorded, then the turn it latest recorded and the system message
/// that turn saw (one loop of a run runs at a time, so no one else copies one meanwhile).
#[derive(Default)]
pub(crate) struct LatestSystemCopy(Mutex<Option<(i32, String)>>);

impl LatestSystemCopy {
    /// Whether the latest copy holds `system`; `None`: not known.
    fn holds(&self, system: &str) -> Option<bool> {
        let latest = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        latest.as_ref().map(|(_, latest)| latest == system)
    }

    /// Notes that recorded turn `turn` saw `system` (copied then, or copied before).
    pub(super) fn note(&self, turn: i32, system: &str) {
        let mut latest = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        match latest.as_mut() {
            Some((noted, held)) if held == system => *noted = turn,
            _ => *latest = Some((turn, system.to_owned())),
        }
    }

    /// Forgets what it holds unless it was noted on `turn`, the run's latest before the one
    /// being prepared (`None`: there is none, or the turn is prepared again).
    pub(super) fn keep_if_noted_on(&self, turn: Option<i32>) {
        let mut latest = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if latest.as_ref().map(|(noted, _)| *noted) != turn {
            *latest = None;
        }
    }
}

/// Whether a turn copies its system message.
enum SystemCopy {
    /// It is the run's latest copy already.
    Kept,
    /// It differs from the run's latest copy, or the run has none (its first turn).
    Write(String),
    /// The actor holds no copy (new, or the turn prepared again): copied unless the run's
    /// latest stored copy holds it.
    Unknown(String),
}

/// What the model saw and said (`system://N` when it changed, `user://N`, `assistant://N`,
/// `model://N`, `reasoning://N`, `content://N`), kept at archive fidelity, and the turn's
/// usage.
pub(super) struct TurnAudit {
    turn: TurnRow,
    system: SystemCopy,
    copies: Vec<(String, String)>,
    usage: TurnUsageForm,
}

impl TurnAudit {
    /// The audit of `turn`, whose packet was `packet` and answer `response` (`unparsed`: its
    /// text outside any command); `latest`: what the actor knows of the run's system copy.
    pub(super) fn of(
        turn: &TurnRow,
        packet: &Packet,
        response: &ChatResponse,
        unparsed: &str,
        latest: &LatestSystemCopy,
    ) -> TurnAudit {
        let n = turn.sequence;
        let system = match latest.holds(&packet.system) {
            Some(true) => SystemCopy::Kept,
            None if n > 1 => SystemCopy::Unknown(packet.system.clone()),
            Some(false) | None => SystemCopy::Write(packet.system.clone()),
        };
        let mut copies = vec![
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
            system,
            copies,
            usage,
        }
    }

    /// The turn's context size as its usage records it.
    pub(super) fn context_tokens(&self) -> i32 {
        self.usage.context_tokens
    }

    pub(super) fn write(self, conn: &mut Conn, run: RunId, loop_id: LoopId) -> Result<(), DbError> {
        let turn = self.turn.sequence;
        let system = match self.system {
            SystemCopy::Kept => None,
            SystemCopy::Write(system) => Some(system),
            SystemCopy::Unknown(system) => entries::latest_entry_of_scheme(conn, run, "system")?
                .is_none_or(|copy| copy.body != system)
                .then_some(system),
        }
        .map(|system| (format!("system://{turn}"), system));
        let copies: Vec<(String, String)> = system.into_iter().chain(self.copies).collect();
        entries::write_archived(conn, run, Some(loop_id), turn, &copies)?;
        turns::update_turn_usage(conn, self.turn.id, &self.usage)?;
        Ok(())
    }
}
