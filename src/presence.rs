//! Who is in a run: the connections watching it or driving it, with the client each is, told
//! to every client of the run's project (`run/presence`) whenever that changes.
//!
//! A connection enters a run by `run/watch`, or by acting on it (a prompt, a resolution, an
//! injection, an abort: it then drives the run, until another present connection acts); it
//! is in one run at a time, and leaves it by `run/unwatch`, by entering another, or by
//! closing. Presence is kept in the store (`run_presence`, one row per connection, under its
//! instance), so every instance of a shared store reads the same, and an instance that dies
//! takes its connections' presence with its heartbeat row: the instance that releases it
//! tells the runs they were in ([`Presence::retell`]), and until then an expired instance's
//! connections are not read as present. No second liveness is kept.
//!
//! `run/presence` is not a run notification: it is not numbered, not kept, never replayed (a
//! replay would bring back who was there, not who is); it carries the whole presence after
//! the change, and `getRun` says the current one. Nothing here happens per turn.

use std::collections::HashSet;
use std::sync::{Arc, Mutex, MutexGuard};

use crate::db::ids::{ProjectId, RunId};
use crate::db::queries::presence::{self, Entering, PresentRow};
use crate::db::queries::runs::{self, now_ms};
use crate::db::{Conn, DbError, DbHandle};
use crate::hub::notifications::{Client, ClientKind, Present, RunPresence, UiNotification};
use crate::hub::{ConnId, HubRegistry};

/// One connection, as presence names it.
#[derive(Debug, Clone)]
pub(crate) struct Someone {
    pub conn: ConnId,
    /// Who it acts for (`None`: the operator).
    pub person: Option<String>,
    pub client: Client,
}

/// This instance's side of presence. Cheap to clone.
#[derive(Clone)]
pub(crate) struct Presence {
    /// This instance's id, under which its connections' rows are kept.
    instance: Arc<str>,
    db: DbHandle,
    hubs: HubRegistry,
    /// The connections of this instance that may be in a run, so a closing one that never
    /// entered any costs nothing.
    entered: Arc<Mutex<HashSet<ConnId>>>,
}

/// A run's presence as a unit of work leaves it: its project, and what clients are told.
struct Told {
    project: ProjectId,
    presence: RunPresence,
}

impl Presence {
    pub(crate) fn new(instance: &str, db: DbHandle, hubs: HubRegistry) -> Presence {
        Presence {
            instance: Arc::from(instance),
            db,
            hubs,
            entered: Arc::default(),
        }
    }

    /// Puts `someone` in `run` (out of the run it was in), watching; every client of each
    /// run whose presence changed is told.
    pub(crate) async fn watch(&self, someone: &Someone, run: RunId) -> Result<(), DbError> {
        self.enter(someone, run, false).await
    }

    /// As [`watch`](Self::watch), `someone` acting on `run`, so driving it; without waiting,
    /// a failure logged (the act goes on).
    pub(crate) fn acted(&self, someone: &Someone, run: RunId) {
        let (presence, someone) = (self.clone(), someone.clone());
        actix_web::rt::spawn(async move {
            if let Err(error) = presence.enter(&someone, run, true).await {
                tracing::warn!(%error, run = run.0, "cannot record who acted on the run");
            }
        });
    }

    /// Takes `conn` out of `run`; false when it was not in it.
    pub(crate) async fn unwatch(&self, conn: ConnId, run: RunId) -> Result<bool, DbError> {
        let left = self.leave(conn, Some(run)).await?;
        Ok(left.is_some())
    }

    /// Takes a closed connection out of the run it was in, without waiting.
    pub(crate) fn closed(&self, conn: ConnId) {
        if !self.lock().remove(&conn) {
            return;
        }
        let presence = self.clone();
        actix_web::rt::spawn(async move {
            // Not a warning: at a stop the store may be closed already, and the instance's
            // release takes its connections' presence anyway.
            if let Err(error) = presence.leave(conn, None).await {
                tracing::debug!(%error, conn, "cannot take a closed connection out of its run");
            }
        });
    }

    /// Who is in `run` now.
    pub(crate) fn read(conn: &mut Conn, run: RunId) -> Result<Vec<Present>, DbError> {
        Ok(present(presence::of_run(conn, run, now_ms())?))
    }

    /// Tells each of `runs` who is in it now: the connections of a gone instance left them.
    pub(crate) async fn retell(&self, runs: Vec<(ProjectId, RunId)>) {
        for (_, run) in runs {
            match self.db.read(move |conn| told(conn, run)).await {
                Ok(Some(told)) => self.tell(told),
                Ok(None) => {}
                Err(error) => tracing::warn!(%error, run = run.0, "cannot read who is in the run"),
            }
        }
    }

    async fn enter(&self, someone: &Someone, run: RunId, acted: bool) -> Result<(), DbError> {
        self.lock().insert(someone.conn);
        let instance = Arc::clone(&self.instance);
        let someone = someone.clone();
        let changed = self
            .db
            .call(move |conn| {
                let before = told(conn, run)?;
                let entering = Entering {
                    instance: &instance,
                    conn_id: conn_id(someone.conn),
                    run,
                    person: someone.person.as_deref(),
                    client_name: &someone.client.name,
                    client_kind: someone.client.kind.as_str(),
                    now: now_ms(),
                    acted,
                };
                let left = presence::enter(conn, &entering)?;
                let after = told(conn, run)?;
                let mut changed = Vec::new();
                if after.as_ref().map(|told| &told.presence)
                    != before.map(|told| told.presence).as_ref()
                {
                    changed.extend(after);
                }
                if let Some(left) = left {
                    changed.extend(told(conn, left)?);
                }
                Ok(changed)
            })
            .await?;
        changed.into_iter().for_each(|told| self.tell(told));
        Ok(())
    }

    async fn leave(&self, conn: ConnId, run: Option<RunId>) -> Result<Option<RunId>, DbError> {
        let instance = Arc::clone(&self.instance);
        let left = self
            .db
            .call(move |db| {
                let Some(left) = presence::leave(db, &instance, conn_id(conn), run)? else {
                    return Ok(None);
                };
                Ok(Some((left, told(db, left)?)))
            })
            .await?;
        let Some((left, told)) = left else {
            return Ok(None);
        };
        told.into_iter().for_each(|told| self.tell(told));
        Ok(Some(left))
    }

    fn tell(&self, told: Told) {
        self.hubs
            .broadcast(told.project, UiNotification::Presence(told.presence));
    }

    fn lock(&self) -> MutexGuard<'_, HashSet<ConnId>> {
        self.entered
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// `run`'s presence as it stands (`None` once the run is gone).
fn told(conn: &mut Conn, run: RunId) -> Result<Option<Told>, DbError> {
    let Some(row) = runs::get_run(conn, run)? else {
        return Ok(None);
    };
    Ok(Some(Told {
        project: row.project_id,
        presence: RunPresence {
            run: row.alias,
            present: present(presence::of_run(conn, run, now_ms())?),
        },
    }))
}

/// The rows as clients see them: the one that acted last drives.
fn present(rows: Vec<PresentRow>) -> Vec<Present> {
    let driver = rows
        .iter()
        .enumerate()
        .filter_map(|(index, row)| row.acted_ms.map(|acted| (acted, index)))
        .max()
        .map(|(_, index)| index);
    rows.into_iter()
        .enumerate()
        .map(|(index, row)| Present {
            person: row.person,
            client: Client {
                name: row.client_name,
                kind: ClientKind::parse(&row.client_kind),
            },
            driving: driver == Some(index),
            since: row.since_ms,
        })
        .collect()
}

/// A connection's id as the store keeps it.
fn conn_id(conn: ConnId) -> i64 {
    i64::try_from(conn).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(conn_id: i64, acted_ms: Option<i64>) -> PresentRow {
        PresentRow {
            instance_id: "a".into(),
            conn_id,
            person: None,
            client_name: "console".into(),
            client_kind: "console".into(),
            since_ms: conn_id,
            acted_ms,
        }
    }

    #[test]
    fn the_connection_that_acted_last_drives_and_only_it() {
        let driving = |rows| -> Vec<bool> {
            present(rows)
                .into_iter()
                .map(|present| present.driving)
                .collect()
        };
        assert_eq!(driving(vec![row(1, None), row(2, None)]), [false, false]);
        assert_eq!(
            driving(vec![row(1, Some(9)), row(2, Some(5)), row(3, None)]),
            [true, false, false]
        );
        assert_eq!(
            driving(vec![row(1, Some(5)), row(2, Some(9))]),
            [false, true]
        );
    }
}
