//! `memory/session`: a run's session notes, for clients (the same notes `run/state` carries
//! in `session`).

use std::future::Future;

use serde::{Deserialize, Serialize};

use crate::access::Role;
use crate::db::queries::runs;
use crate::plugins::method::{MethodCall, MethodError, TypedMethod};

use super::methods::project;
use super::notes::SessionNotes;
use super::session::{stored_notes, SESSION_PATH};

/// `memory/session` params.
#[derive(Debug, Deserialize)]
pub struct SessionParams {
    /// The run's alias.
    run: String,
}

/// What `memory/session` answers: `notes` is `null` until the sidecar first wrote them.
#[derive(Debug, Serialize)]
pub struct Session {
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
        let project = project(&call);
        async move {
            let project = project?;
            let alias = params.run;
            let found = call
                .db
                .read(move |conn| {
                    let Some(run) =
                        runs::find_run(conn, &alias)?.filter(|run| run.project_id == project)
                    else {
                        return Ok(Err(alias));
                    };
                    let stored = stored_notes(conn, run.id)?;
                    let rendered =
                        crate::db::queries::entries::get_entry(conn, run.id, SESSION_PATH)?
                            .map(|row| row.body)
                            .unwrap_or_default();
                    Ok(Ok(Session {
                        run: run.alias,
                        turn: stored.as_ref().map_or(0, |stored| stored.turn),
                        notes: stored.map(|stored| stored.notes),
                        rendered,
                    }))
                })
                .await?;
            found.map_err(|alias| {
                MethodError::InvalidParams(format!("no run {alias} in this project"))
            })
        }
    }
}
