//! The session notes' upkeep: a reflection that asks the run's model, in a sidecar call of
//! its own (never a turn's), to update the notes from the run's recent log, and writes what
//! it answers, validated and rendered, to the run's entry `memory://session` (the notes as
//! JSON in its attributes, the rendered text as its body, cut to
//! `RUMMY_MEMORY_SESSION_TOKENS`), and gives the run the notes' title unless a person named
//! it (`db::queries::run_titles`). It refreshes the notes only after work worth noting
//! (`SessionUpkeep::due`): after a turn that wrote files or knowledge once
//! `RUMMY_MEMORY_SESSION_EVERY_TURNS` turns passed since the last refresh, before a panic
//! loop compresses the context, and when a loop that wrote, had a proposal accepted or took
//! that many turns ends — so a one-turn question costs one model call, and a proposal a
//! person rejects none more. Consolidation follows at a loop's end and before a panic
//! (whether the notes were refreshed or not), so what the notes hold worth keeping is the
//! project's before the panic loop drops the context it came from. A failed, slow (past
//! `RUMMY_MEMORY_SESSION_TIMEOUT_SECS`) or malformed answer
//! is logged and the notes stay as they were. Memory off means no call, and notes written
//! before it was switched off are removed before the run's next turn is assembled
//! (`NotesOffWithMemory`, a preparation).

use std::time::Duration;

use futures_util::future::BoxFuture;
use serde_json::json;

use crate::context::TokenMath;
use crate::db::enums::{CallPurpose, Fidelity};
use crate::db::ids::RunId;
use crate::db::models::entry::{EntryUpsertForm, Selector};
use crate::db::queries::memory::HistoryBounds;
use crate::db::queries::{entries, memory, run_actions, run_titles};
use crate::db::{Conn, DbError};
use crate::plugins::preparation::{Preparation, PreparingTurn};
use crate::plugins::reflection::{Moment, Reflecting, Reflection, ReflectionServices};

use super::consolidate::consolidate;
use super::notes::SessionNotes;
use super::sidecar::{self, SidecarCall};

/// The entry a run's session notes are written to.
pub(crate) const SESSION_PATH: &str = "memory://session";

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
#[derive(Clone)]
pub(super) struct SessionUpkeep {
    /// Most tokens of the rendered notes.
    pub budget: i64,
    /// Least turns between two refreshes after turns.
    pub every_turns: i32,
    pub timeout: Duration,
    pub tokens: TokenMath,
    /// How much history consolidation keeps.
    pub history: HistoryBounds,
}

/// The notes as stored, and the turn they were refreshed after.
pub(crate) struct StoredNotes {
    pub notes: SessionNotes,
    pub turn: i32,
}

/// The run's notes, if it has any.
pub(crate) fn stored_notes(conn: &mut Conn, run: RunId) -> Result<Option<StoredNotes>, DbError> {
    let Some(row) = entries::get_entry(conn, run, SESSION_PATH)? else {
        return Ok(None);
    };
    let attributes = &row.attributes;
    let notes = attributes
        .get("notes")
        .and_then(|notes| serde::Deserialize::deserialize(notes).ok());
    let turn = attributes
        .get("turn")
        .and_then(serde_json::Value::as_i64)
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

/// The run's notes and, when they are due for a refresh, what the sidecar reads, in one go.
struct Reading {
    enabled: bool,
    stored: Option<StoredNotes>,
    /// What the sidecar reads besides the notes; `None`: no refresh is due.
    recent: Option<Recent>,
}

/// What the sidecar reads of the run besides its notes, read only for a refresh.
struct Recent {
    prompt: String,
    /// The run's latest log entries, oldest first.
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
            let (run, project) = (at.run, at.project);
            let (upkeep, reflecting) = (self.clone(), at.clone());
            let reading = services
                .db
                .read(move |conn| read(conn, &upkeep, &reflecting))
                .await;
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
            let mut notes = reading.stored.as_ref().map(|stored| stored.notes.clone());
            if let Some(recent) = &reading.recent {
                if let Some(fresh) = self.refresh(services, at, &reading, recent).await {
                    notes = Some(fresh);
                }
            }
            if !matches!(at.moment, Moment::LoopEnded { .. } | Moment::BeforePanic) {
                return;
            }
            let Some(notes) = notes else {
                return;
            };
            let history = self.history;
            let consolidated = services
                .db
                .call(move |conn| consolidate(conn, project, run, &notes, history))
                .await;
            if let Err(error) = consolidated {
                tracing::warn!(%error, run.id = %run, "cannot consolidate the session notes");
            }
        })
    }
}

impl SessionUpkeep {
    /// Whether the notes, last refreshed after the run's turn `last`, are refreshed at
    /// `at`: only after work worth noting. After a turn that wrote files or knowledge, once
    /// `every_turns` turns passed since `last`; before a panic, when a turn passed; at a
    /// loop's end, when a turn since `last` wrote files or knowledge, a proposal made since
    /// then was accepted (`accepted_since`), or the loop took `every_turns` turns or more —
    /// never when it ended on proposals (a rejection ends the run with nothing to note; an
    /// acceptance resumes it, and that loop's end counts the accepted change). A loop's
    /// first moment and a turn that wrote nothing never refresh them.
    fn due(&self, at: &Reflecting, last: i32, accepted_since: bool) -> bool {
        let new_turns = at.turn > last;
        match at.moment {
            Moment::LoopStarting | Moment::LoopEnded { proposed: true } => false,
            Moment::TurnEnded { wrote } => wrote && at.turn - last >= self.every_turns,
            Moment::BeforePanic => new_turns,
            Moment::LoopEnded { proposed: false } => {
                new_turns
                    && (at.wrote_at > last || accepted_since || at.loop_turns >= self.every_turns)
            }
        }
    }

    /// Asks the sidecar and writes its notes; `None` (logged) when that fails.
    async fn refresh(
        &self,
        services: &ReflectionServices,
        at: &Reflecting,
        reading: &Reading,
        recent: &Recent,
    ) -> Option<SessionNotes> {
        let call = SidecarCall {
            purpose: CallPurpose::SessionNotes,
            model_actual: at.model_actual.clone(),
            instructions: INSTRUCTIONS,
            input: sidecar_input(reading, recent),
            answer_tokens: ANSWER_TOKENS,
            timeout: self.timeout,
        };
        let answer = match sidecar::ask(services, at, call).await {
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
        let (run, title) = (at.run, notes.title.clone());
        let written = services
            .db
            .call(move |conn| {
                entries::write_entry(conn, &form)?;
                run_titles::from_notes(conn, run, &title)
            })
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

fn read(conn: &mut Conn, upkeep: &SessionUpkeep, at: &Reflecting) -> Result<Reading, DbError> {
    let enabled = memory::is_enabled(conn, at.project)?;
    if !enabled {
        return Ok(Reading {
            enabled,
            stored: None,
            recent: None,
        });
    }
    let stored = stored_notes(conn, at.run)?;
    let last = stored.as_ref().map_or(0, |stored| stored.turn);
    let accepted_since = run_actions::accepted_after(conn, at.run, last)?;
    let recent = if upkeep.due(at, last, accepted_since) {
        Some(recent(conn, at.run)?)
    } else {
        None
    };
    Ok(Reading {
        enabled,
        stored,
        recent,
    })
}

fn recent(conn: &mut Conn, run: RunId) -> Result<Recent, DbError> {
    let prompt = entries::latest_entry_of_scheme(conn, run, "prompt")?
        .map(|row| cut(&row.body, PROMPT_CHARS))
        .unwrap_or_default();
    let log = entries::latest_run_log(conn, run, LOG_ENTRIES)?
        .iter()
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
    Ok(Recent { prompt, log })
}

/// The sidecar's user message: the current notes, the prompt and the log.
fn sidecar_input(reading: &Reading, recent: &Recent) -> String {
    let notes = reading
        .stored
        .as_ref()
        .map(|stored| serde_json::to_string(&stored.notes).unwrap_or_default())
        .unwrap_or_else(|| "{}".to_owned());
    format!(
        "Current notes:\n{notes}\n\nThe user's latest prompt:\n{}\n\nThe run's recent log, oldest first:\n{}",
        recent.prompt,
        recent.log.join("\n")
    )
}

fn cut(text: &str, chars: usize) -> String {
    text.chars().take(chars).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::ids::{LoopId, ProjectId};

    fn upkeep() -> SessionUpkeep {
        SessionUpkeep {
            budget: 600,
            every_turns: 3,
            timeout: Duration::from_secs(1),
            tokens: TokenMath::new(4),
            history: HistoryBounds {
                per_topic: 5,
                items: 500,
            },
        }
    }

    /// The run at its turn `turn`, its loop `loop_turns` turns long, its latest write at
    /// `wrote_at`.
    fn at(moment: Moment, turn: i32, loop_turns: i32, wrote_at: i32) -> Reflecting {
        Reflecting {
            run: RunId(1),
            loop_id: LoopId(1),
            project: ProjectId(1),
            turn,
            loop_turns,
            wrote_at,
            model_actual: "m".into(),
            moment,
        }
    }

    const ENDED: Moment = Moment::LoopEnded { proposed: false };
    const PROPOSED: Moment = Moment::LoopEnded { proposed: true };

    #[test]
    fn a_loop_end_refreshes_only_after_work_worth_noting() {
        let upkeep = upkeep();
        assert!(
            !upkeep.due(&at(ENDED, 1, 1, 0), 0, false),
            "a one-turn answer"
        );
        assert!(
            upkeep.due(&at(ENDED, 1, 1, 1), 0, false),
            "a turn that wrote"
        );
        assert!(
            !upkeep.due(&at(ENDED, 7, 1, 5), 5, false),
            "its write is noted"
        );
        assert!(
            upkeep.due(&at(ENDED, 7, 2, 6), 5, false),
            "a write after the notes"
        );
        assert!(
            upkeep.due(&at(ENDED, 2, 1, 0), 0, true),
            "an accepted proposal"
        );
        assert!(
            !upkeep.due(&at(ENDED, 3, 2, 0), 0, false),
            "two turns are not several"
        );
        assert!(upkeep.due(&at(ENDED, 3, 3, 0), 0, false), "three turns are");
        assert!(
            !upkeep.due(&at(ENDED, 9, 8, 0), 9, true),
            "nothing since the notes' turn"
        );
    }

    #[test]
    fn a_loop_ending_on_proposals_never_refreshes() {
        let upkeep = upkeep();
        assert!(!upkeep.due(&at(PROPOSED, 4, 4, 4), 0, true));
    }

    #[test]
    fn a_turn_refreshes_when_it_wrote_and_enough_turns_passed_and_a_panic_when_one_did() {
        let upkeep = upkeep();
        let wrote = Moment::TurnEnded { wrote: true };
        let idle = Moment::TurnEnded { wrote: false };
        assert!(upkeep.due(&at(wrote, 3, 3, 3), 0, false));
        assert!(!upkeep.due(&at(wrote, 2, 2, 2), 0, false));
        assert!(!upkeep.due(&at(idle, 9, 9, 0), 0, true));
        assert!(upkeep.due(&at(Moment::BeforePanic, 1, 1, 0), 0, false));
        assert!(!upkeep.due(&at(Moment::BeforePanic, 4, 1, 0), 4, false));
        assert!(!upkeep.due(&at(Moment::LoopStarting, 4, 0, 0), 0, true));
    }
}
