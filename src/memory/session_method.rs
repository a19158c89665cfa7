//! `memory/session`: a run's session notes, for clients (the same notes `run/state` carries
//! in `session`); `memory/session/set`: a client's notes in their place (checked against
//! the bounds the sidecar's are, rendered the same way), or none, announced at once to the
//! project's clients as `ui/notify` (a `run/state` needs its turn's model and packet, which
//! only the turn has; the next one carries the notes in `session`).

use std::future::Future;

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::access::Role;
use crate::context::TokenMath;
use crate::db::enums::Fidelity;
use crate::db::models::entry::{EntryUpsertForm, Selector};
use crate::db::models::run::RunRow;
use crate::db::queries::{entries, memory, run_titles, turns};
use crate::db::{Conn, DbError};
use crate::hub::notifications::NotifyLevel;
use crate::plugins::method::{MethodCall, MethodError, TypedMethod};

use super::methods::project;
use super::notes::SessionNotes;
use super::session::{stored_notes, SESSION_PATH};

/// `memory/session` params.
#[derive(Debug, Deserialize)]
pub(super) struct SessionParams {
    /// The run's alias.
    run: String,
}

/// What `memory/session` answers: `notes` is `null` until the sidecar first wrote them.
#[derive(Debug, Serialize)]
pub(super) struct Session {
    run: String,
    notes: Option<SessionNotes>,
    /// The run-wide turn the notes were refreshed after (0 without notes).
    turn: i32,
    /// The notes as the model reads them (`""` without notes).
    rendered: String,
}

pub(super) struct SessionMethod;

impl TypedMethod for SessionMethod {
    type Params = SessionParams;
    type Output = Session;

    fn name(&self) -> &'static str {
        "memory/session"
    }

    fn description(&self) -> &'static str {
        "A run's session notes: its working state, kept by the server from the run's work (null until the first refresh)."
    }

    fn params(&self) -> &'static [(&'static str, &'static str)] {
        &[("run", "string — the run's alias")]
    }

    fn role(&self) -> Role {
        Role::Viewer
    }

    fn call(
        &self,
        call: MethodCall,
        params: SessionParams,
    ) -> impl Future<Output = Result<Session, MethodError>> + Send + 'static {
        let alias = params.run;
        async move {
            let run = call.run(&alias).await?;
            Ok(call.db.read(move |conn| session(conn, &run)).await?)
        }
    }
}

/// `run`'s notes as the methods answer them.
fn session(conn: &mut Conn, run: &RunRow) -> Result<Session, DbError> {
    let stored = stored_notes(conn, run.id)?;
    let rendered = entries::get_entry(conn, run.id, SESSION_PATH)?
        .map(|row| row.body)
        .unwrap_or_default();
    Ok(Session {
        run: run.alias.clone(),
        turn: stored.as_ref().map_or(0, |stored| stored.turn),
        notes: stored.map(|stored| stored.notes),
        rendered,
    })
}

/// `memory/session/set` params.
#[derive(Debug, Deserialize)]
pub(super) struct SessionSetParams {
    /// The run's alias.
    run: String,
    /// The notes, in the shape `memory/session` answers them; `null` erases them.
    notes: Value,
}

/// `memory/session/set`: a client's notes for a run, rendered within `budget` tokens as the
/// sidecar's are, and dated at the run's latest turn (so a loop ending with no turn since
/// keeps them; a later refresh starts from them); every client bound to the project is told
/// with `ui/notify`: `<run>: session notes set` and the rendered notes, or `<run>: session
/// notes erased`.
pub(super) struct SessionSet {
    pub budget: i64,
    pub tokens: TokenMath,
}

impl TypedMethod for SessionSet {
    type Params = SessionSetParams;
    type Output = Session;

    fn name(&self) -> &'static str {
        "memory/session/set"
    }

    fn description(&self) -> &'static str {
        "Replaces a run's session notes with yours (the shape memory/session answers, within the same bounds), or erases them (null); answers as memory/session."
    }

    fn params(&self) -> &'static [(&'static str, &'static str)] {
        &[
            ("run", "string — the run's alias"),
            (
                "notes",
                "object|null — {title, currentState?, userIntent?, activeFiles?, decisions?, constraints?, errorsAndCorrections?, nextSteps?, workLog?}; null erases the notes",
            ),
        ]
    }

    fn role(&self) -> Role {
        Role::Member
    }

    fn call(
        &self,
        call: MethodCall,
        params: SessionSetParams,
    ) -> impl Future<Output = Result<Session, MethodError>> + Send + 'static {
        let (budget, tokens) = (self.budget, self.tokens);
        let project = project(&call);
        async move {
            let project = project?;
            let notes = match params.notes {
                Value::Null => None,
                value => Some(
                    SessionNotes::from_value(value)
                        .map_err(|error| MethodError::InvalidParams(format!("notes: {error}")))?,
                ),
            };
            let run = call.run(&params.run).await?;
            let set = call
                .db
                .call(move |conn| {
                    if !memory::is_enabled(conn, project)? {
                        return Ok(None);
                    }
                    match notes {
                        None => {
                            entries::delete_entries(
                                conn,
                                run.id,
                                &Selector::Path(SESSION_PATH.to_owned()),
                            )?;
                        }
                        Some(notes) => {
                            let turn =
                                turns::latest_turn(conn, run.id)?.map_or(0, |turn| turn.sequence);
                            run_titles::from_notes(conn, run.id, &notes.title)?;
                            let body = notes.render(budget, tokens);
                            let form = EntryUpsertForm {
                                fidelity: Some(Fidelity::Full),
                                attributes: Some(json!({ "notes": notes, "turn": turn })),
                                ..EntryUpsertForm::new(run.id, None, turn, SESSION_PATH, body)
                            };
                            entries::write_entry(conn, &form)?;
                        }
                    }
                    session(conn, &run).map(Some)
                })
                .await?;
            let session = set.ok_or_else(|| {
                MethodError::InvalidParams(
                    "memory is off for this project (memory/switch turns it on)".to_owned(),
                )
            })?;
            let text = match session.notes {
                Some(_) => format!("{}: session notes set\n\n{}", session.run, session.rendered),
                None => format!("{}: session notes erased", session.run),
            };
            call.clients.notify(project, text, NotifyLevel::Info);
            Ok(session)
        }
    }
}
