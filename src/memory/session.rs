//! The session notes' upkeep: a reflection that asks the run's model, in a sidecar call of
//! its own (never a turn's), to update the notes from the run's recent log, and writes what
//! it answers, validated and rendered, to the run's entry `memory://session` (the notes as
//! JSON in its attributes, the rendered text as its body, cut to
//! `RUMMY_MEMORY_SESSION_TOKENS`). It refreshes the notes after a turn that wrote files or
//! knowledge once `RUMMY_MEMORY_SESSION_EVERY_TURNS` turns passed since the last refresh,
//! before a panic loop compresses the context, and when a loop ends (then consolidation
//! follows). A failed, slow (past `RUMMY_MEMORY_SESSION_TIMEOUT_SECS`) or malformed answer
//! is logged and the notes stay as they were. Memory off means no call, and notes written
//! before it was switched off are removed before the run's next turn is assembled
//! (`NotesOffWithMemory`, a preparation).

use std::time::Duration;

use futures_util::future::BoxFuture;
use serde_json::json;

use crate::context::TokenMath;
use crate::db::enums::Fidelity;
use crate::db::ids::RunId;
use crate::db::models::entry::{EntryUpsertForm, Selector};
use crate::db::queries::{entries, memory};
use crate::db::{Conn, DbError};
use crate::plugins::preparation::{Preparation, PreparingTurn};
use crate::plugins::reflection::{Moment, Reflecting, Reflection, ReflectionServices};

use super::consolidate::consolidate;
use super::notes::SessionNotes;
use super::sidecar::{self, SidecarCall};

/// The entry a run's session notes are written to.
pub const SESSION_PATH: &str = "memory://session";

/// What the sidecar model is told to do.
const INSTRUCTIONS: &str = include_str!("../plugins/text/memory/sidecar.md");
/// Most log entries of the run the sidecar reads, newest kept.
const LOG_ENTRIES: usize = 40;
/// Most characters of one log entry's body the sidecar reads.
const LOG_BODY_CHARS: usize = 300;
/// Most characters of the prompt the sidecar reads.
const PROMPT_CHARS: usize = 2_000;
/// Cap on the sidecar's answer, in tokens.
const ANSWER_TOKENS: u32 = 2_000;

/// The reflection.
pub(super) struct SessionUpkeep {
    /// Most tokens of the rendered notes.
    pub budget: i64,
    /// Least turns between two refreshes after turns.
    pub every_turns: i32,
    pub timeout: Duration,
    pub tokens: TokenMath,
}

/// The notes as stored, and the turn they were refreshed after.
pub struct StoredNotes {
    pub notes: SessionNotes,
    pub turn: i32,
}

/// The run's notes, if it has any.
pub fn stored_notes(conn: &mut Conn, run: RunId) -> Result<Option<StoredNotes>, DbError> {
    let Some(row) = entries::get_entry(conn, run, SESSION_PATH)? else {
        return Ok(None);
    };
    let attributes: serde_json::Value = serde_json::from_str(&row.attributes).unwrap_or_default();
    let notes = serde_json::from_value(attributes["notes"].clone()).ok();
    let turn = attributes["turn"]
        .as_i64()
        .and_then(|turn| i32::try_from(turn).ok())
        .unwrap_or(0);
    Ok(notes.map(|notes| StoredNotes { notes, turn }))
}

/// The preparation that removes a run's notes once its project's memory is off.
pub(super) struct NotesOffWithMemory;

impl Preparation for NotesOffWithMemory {
    fn prepare(&self, conn: &mut Conn, turn: &PreparingTurn<'_>) -> Result<(), DbError> {
        if memory::is_enabled(conn, turn.project)? {
            return Ok(());
        }
        entries::delete_entries(conn, turn.run, &Selector::Path(SESSION_PATH.to_owned()))?;
        Ok(())
    }
}

/// What the sidecar is given, read in one go.
struct Reading {
    enabled: bool,
    stored: Option<StoredNotes>,
    prompt: String,
    log: Vec<String>,
}

impl Reflection for SessionUpkeep {
    fn reflect<'a>(
        &'a self,
        services: &'a ReflectionServices,
        at: &'a Reflecting,
    ) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            if matches!(
                at.moment,
                Moment::TurnEnded { wrote: false } | Moment::LoopStarting
            ) {
                return;
            }
            let run = at.run;
            let project = at.project;
            let reading = services.db.read(move |conn| read(conn, run, project)).await;
            let reading = match reading {
                Ok(reading) => reading,
                Err(error) => {
                    tracing::warn!(%error, run.id = %run, "cannot read the session notes");
                    return;
                }
            };
            if !reading.enabled {
                return;
            }
            let last = reading.stored.as_ref().map_or(0, |stored| stored.turn);
            let due = match at.moment {
                Moment::TurnEnded { .. } => at.turn - last >= self.every_turns,
                Moment::BeforePanic | Moment::LoopEnded => at.turn > last,
                Moment::LoopStarting => false,
            };
            let mut notes = reading.stored.as_ref().map(|stored| stored.notes.clone());
            if due {
                if let Some(fresh) = self.refresh(services, at, &reading).await {
                    notes = Some(fresh);
                }
            }
            if at.moment != Moment::LoopEnded {
                return;
            }
            let Some(notes) = notes else {
                return;
            };
            let consolidated = services
                .db
                .call(move |conn| consolidate(conn, project, run, &notes))
                .await;
            if let Err(error) = consolidated {
                tracing::warn!(%error, run.id = %run, "cannot consolidate the session notes");
            }
        })
    }
}

impl SessionUpkeep {
    /// Asks the sidecar and writes its notes; `None` (logged) when that fails.
    async fn refresh(
        &self,
        services: &ReflectionServices,
        at: &Reflecting,
        reading: &Reading,
    ) -> Option<SessionNotes> {
        let call = SidecarCall {
            model_actual: at.model_actual.clone(),
            instructions: INSTRUCTIONS,
            input: sidecar_input(reading),
            answer_tokens: ANSWER_TOKENS,
            timeout: self.timeout,
        };
        let answer = match sidecar::ask(services, call).await {
            Ok(answer) => answer,
            Err(error) => {
                tracing::warn!(%error, run.id = %at.run, "session notes: no answer; the notes stay");
                return None;
            }
        };
        let notes = match SessionNotes::from_answer(&answer) {
            Ok(notes) => notes,
            Err(error) => {
                tracing::warn!(%error, run.id = %at.run, "session notes: the sidecar's answer is refused; the notes stay");
                return None;
            }
        };
        let body = notes.render(self.budget, self.tokens);
        let form = EntryUpsertForm {
            fidelity: Some(Fidelity::Full),
            attributes: Some(json!({ "notes": notes, "turn": at.turn })),
            ..EntryUpsertForm::new(at.run, Some(at.loop_id), at.turn, SESSION_PATH, body)
        };
        let written = services
            .db
            .call(move |conn| entries::write_entry(conn, &form))
            .await;
        match written {
            Ok(_) => Some(notes),
            Err(error) => {
                tracing::warn!(%error, run.id = %at.run, "session notes: cannot write them");
                None
            }
        }
    }
}

fn read(
    conn: &mut Conn,
    run: RunId,
    project: crate::db::ids::ProjectId,
) -> Result<Reading, DbError> {
    let enabled = memory::is_enabled(conn, project)?;
    if !enabled {
        return Ok(Reading {
            enabled,
            stored: None,
            prompt: String::new(),
            log: Vec::new(),
        });
    }
    let prompt = entries::latest_entry_of_scheme(conn, run, "prompt")?
        .map(|row| cut(&row.body, PROMPT_CHARS))
        .unwrap_or_default();
    let rows = entries::run_log(conn, run)?;
    let log = rows
        .iter()
        .skip(rows.len().saturating_sub(LOG_ENTRIES))
        .map(|row| {
            format!(
                "{} {} [{}]: {}",
                row.tool,
                row.target,
                row.status.code(),
                cut(&row.body, LOG_BODY_CHARS)
            )
        })
        .collect();
    Ok(Reading {
        enabled,
        stored: stored_notes(conn, run)?,
        prompt,
        log,
    })
}

/// The sidecar's user message: the current notes, the prompt and the log.
fn sidecar_input(reading: &Reading) -> String {
    let notes = reading
        .stored
        .as_ref()
        .map(|stored| serde_json::to_string(&stored.notes).unwrap_or_default())
        .unwrap_or_else(|| "{}".to_owned());
    format!(
        "Current notes:\n{notes}\n\nThe user's latest prompt:\n{}\n\nThe run's recent log, oldest first:\n{}",
        reading.prompt,
        reading.log.join("\n")
    )
}

fn cut(text: &str, chars: usize) -> String {
    text.chars().take(chars).collect()
}
