//! Admission of the loops clients ask for (`ask`, `act`): at most so many running or queued
//! per project and per person (0 = no bound). Past a bound a loop waits for a place, first
//! come first served, or is refused, as `agent.over_limit` says; a client that goes away
//! while waiting gives its place up. An admitted loop holds its place until it ends, even
//! if its client goes away meanwhile ([`Admitted::until`]).
//!
//! Places are counted here first, among this instance's loops. With several instances on
//! one store ([`LoopAdmission::shared`]) a loop admitted here then takes a place in the
//! store (`queries::loop_places`), where every instance's loops are counted per project and
//! per person: the bounds hold across the instances. A loop waiting for a place in the store
//! tries again when one of this instance's loops ends, and every [`PLACE_POLL`] for those of
//! the others; first come first served holds among one instance's loops only. The
//! operator's loops are bounded per connection, which lives on one instance, so only here.

use std::sync::Arc;
use std::time::Duration;

use futures_util::FutureExt;
use tokio::sync::{oneshot, Notify};

use crate::config::{AgentSettings, OverLimit};
use crate::db::ids::ProjectId;
use crate::db::queries::loop_places::{self, Bound, NoPlace, PlaceClaim, PlaceError};
use crate::db::{DbError, DbHandle};
use crate::slots::{Claim, Permit, Slots};

/// How often a loop waiting for a place in the store tries again, for the places other
/// instances give back.
#[cfg_attr(not(feature = "testing"), allow(unreachable_pub))]
pub const PLACE_POLL: Duration = Duration::from_millis(500);

/// Whom active loops are counted against.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum Asker {
    Project(ProjectId),
    /// A person's key (see `CallContext::person`).
    Person(String),
}

/// Why a loop was not admitted.
#[derive(Debug, thiserror::Error)]
pub(crate) enum NotAdmitted {
    #[error(transparent)]
    Full(#[from] LoopsFull),
    /// The store, where the instances' places are counted, failed.
    #[error(transparent)]
    Db(#[from] DbError),
}

/// An `ask`/`act` refused: a bound on active loops is reached.
#[derive(Debug, thiserror::Error)]
#[error(
    "{asker} already has {active} loop{} running or queued; try again later.",
    if *.active == 1 { "" } else { "s" }
)]
pub(crate) struct LoopsFull {
    /// The project or person, as a client reads it.
    asker: String,
    active: usize,
}

/// The bounds on active loops, shared by every connection. Clones share the counts.
#[derive(Clone)]
pub(crate) struct LoopAdmission {
    slots: Slots<Asker>,
    per_project: usize,
    per_person: usize,
    over_limit: OverLimit,
    /// Where every instance's places are counted, when the store is shared.
    store: Option<StorePlaces>,
}

/// The store's count of places, as this instance takes and gives them back.
#[derive(Clone)]
struct StorePlaces {
    db: DbHandle,
    instance: Arc<str>,
    /// Told when this instance gives a place back.
    given_back: Arc<Notify>,
}

/// Who asks for a loop, and of which project.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Asking<'a> {
    pub project: ProjectId,
    /// Its name, as a refusal shows it.
    pub project_name: &'a str,
    /// Whom the per-person bound counts this loop against (see `CallContext::limit_key`).
    pub limit_key: &'a str,
    /// The person of the users file who asks (`None`: the operator).
    pub person: Option<&'a str>,
}

impl LoopAdmission {
    /// The bounds and mode of `settings`, counted among this instance's loops.
    pub(crate) fn new(settings: &AgentSettings) -> Self {
        LoopAdmission {
            slots: Slots::default(),
            per_project: settings.max_active_loops_per_project,
            per_person: settings.max_active_loops_per_person,
            over_limit: settings.over_limit,
            store: None,
        }
    }

    /// [`new`](Self::new), the places also counted in the store `db`, which instance
    /// `instance` shares with others.
    pub(crate) fn shared(settings: &AgentSettings, db: DbHandle, instance: &str) -> Self {
        LoopAdmission {
            store: Some(StorePlaces {
                db,
                instance: Arc::from(instance),
                given_back: Arc::default(),
            }),
            ..LoopAdmission::new(settings)
        }
    }

    /// A place for one loop `asking` asks for.
    pub(crate) async fn admit(&self, asking: Asking<'_>) -> Result<Admitted, NotAdmitted> {
        let Asking {
            project,
            project_name,
            limit_key,
            person,
        } = asking;
        let claim = Claim::of(1)
            .under(Asker::Project(project), self.per_project)
            .under(Asker::Person(limit_key.to_owned()), self.per_person);
        let permit = match self.over_limit {
            OverLimit::Refuse => self.slots.try_take(claim).map_err(|full| LoopsFull {
                asker: match full.key {
                    Asker::Project(_) => format!("project '{project_name}'"),
                    Asker::Person(person) => person,
                },
                active: full.held,
            })?,
            OverLimit::Queue => {
                let mut take = self.slots.take(claim);
                match (&mut take).now_or_never() {
                    Some(permit) => permit,
                    None => {
                        let waiting = self.slots.waiting();
                        tracing::info!(
                            project = project_name,
                            person = limit_key,
                            waiting,
                            "loop waits for a place"
                        );
                        take.await
                    }
                }
            }
        };
        let stored = match &self.store {
            None => None,
            Some(store) => {
                let claim = PlaceClaim {
                    instance: store.instance.to_string(),
                    project,
                    per_project: self.per_project,
                    person: person.map(str::to_owned),
                    per_person: self.per_person,
                };
                Some(store.take(claim, project_name, self.over_limit).await?)
            }
        };
        Ok(Admitted {
            place: permit,
            stored,
        })
    }

    /// How many loops wait for a place.
    #[cfg(any(test, feature = "testing"))]
    pub(crate) fn waiting(&self) -> usize {
        self.slots.waiting()
    }
}

impl StorePlaces {
    /// A place in the store for `claim`, waiting for one or refused as `over_limit` says.
    async fn take(
        &self,
        claim: PlaceClaim,
        project_name: &str,
        over_limit: OverLimit,
    ) -> Result<StoredPlace, NotAdmitted> {
        let mut logged = false;
        loop {
            let given_back = self.given_back.notified();
            tokio::pin!(given_back);
            given_back.as_mut().enable();
            let tried = claim.clone();
            let taken = self
                .db
                .call_refusable(move |conn| loop_places::take(conn, &tried))
                .await;
            let NoPlace { bound, held } = match taken {
                Ok(id) => {
                    return Ok(StoredPlace {
                        id: Some(id),
                        store: self.clone(),
                    })
                }
                Err(PlaceError::Full(no_place)) => no_place,
                Err(PlaceError::Db(error)) => return Err(error.into()),
            };
            if over_limit == OverLimit::Refuse {
                return Err(LoopsFull {
                    asker: match bound {
                        Bound::Project => format!("project '{project_name}'"),
                        Bound::Person(person) => format!("person {person}"),
                    },
                    active: held,
                }
                .into());
            }
            if !logged {
                tracing::info!(
                    project = project_name,
                    "loop waits for a place another instance holds"
                );
                logged = true;
            }
            let _ = tokio::time::timeout(PLACE_POLL, given_back).await;
        }
    }
}

/// A place taken in the store: given back by [`give_back`](Self::give_back), or when it
/// drops (a loop that never started), without waiting.
struct StoredPlace {
    /// `None` once given back.
    id: Option<i64>,
    store: StorePlaces,
}

impl StoredPlace {
    /// Gives the place back and waits until the store has it, so that a client told the
    /// loop ended finds its place free on any instance.
    async fn give_back(mut self) {
        let Some(id) = self.id.take() else {
            return;
        };
        let given = self
            .store
            .db
            .call(move |conn| loop_places::give_back(conn, id))
            .await;
        if let Err(error) = given {
            tracing::warn!(%error, "a loop's place was not given back; its instance's release will");
        }
        self.store.given_back.notify_waiters();
    }
}

impl Drop for StoredPlace {
    fn drop(&mut self) {
        let Some(id) = self.id.take() else {
            return;
        };
        self.store
            .db
            .call_later("give a loop's place back", move |conn| {
                loop_places::give_back(conn, id)
            });
        self.store.given_back.notify_waiters();
    }
}

/// A loop admitted under the bounds on active loops.
pub(crate) struct Admitted {
    place: Permit<Asker>,
    /// Its place in the store, when the store is shared; given back before `place`.
    stored: Option<StoredPlace>,
}

impl Admitted {
    /// The loop's outcome, taken from `outcome` by a task of its own that holds this place
    /// until the loop ends (or its run's actor stops), so the loop counts whether or not
    /// its client still waits for it. The place is free before the outcome is passed on.
    pub(crate) fn until<T: 'static>(self, outcome: oneshot::Receiver<T>) -> oneshot::Receiver<T> {
        let (forward, forwarded) = oneshot::channel();
        let Admitted { place, stored } = self;
        actix::spawn(async move {
            let ended = outcome.await;
            if let Some(stored) = stored {
                stored.give_back().await;
            }
            drop(place);
            if let Ok(outcome) = ended {
                let _ = forward.send(outcome);
            }
        });
        forwarded
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::future::Future;
    use std::time::Duration;

    /// `future`'s output; a test fails at once rather than hang when it never comes.
    async fn soon<T>(future: impl Future<Output = T>) -> T {
        tokio::time::timeout(Duration::from_secs(5), future)
            .await
            .expect("never came")
    }

    fn asking(project: i64, name: &'static str, person: &'static str) -> Asking<'static> {
        Asking {
            project: ProjectId(project),
            project_name: name,
            limit_key: person,
            person: Some(person),
        }
    }

    fn admission(per_project: usize, per_person: usize, over_limit: OverLimit) -> LoopAdmission {
        LoopAdmission {
            slots: Slots::default(),
            per_project,
            per_person,
            over_limit,
            store: None,
        }
    }

    #[actix::test]
    async fn refused_past_the_project_bound_then_past_the_person_bound() {
        let loops = admission(2, 1, OverLimit::Refuse);
        let _alice = soon(loops.admit(asking(1, "web", "alice"))).await.unwrap();
        let again = soon(loops.admit(asking(1, "web", "alice"))).await.err();
        assert_eq!(
            again.map(|full| full.to_string()).as_deref(),
            Some("alice already has 1 loop running or queued; try again later.")
        );
        let _bob = soon(loops.admit(asking(1, "web", "bob"))).await.unwrap();
        let carol = soon(loops.admit(asking(1, "web", "carol"))).await.err();
        assert_eq!(
            carol.map(|full| full.to_string()).as_deref(),
            Some("project 'web' already has 2 loops running or queued; try again later.")
        );
        assert!(soon(loops.admit(asking(2, "api", "carol"))).await.is_ok());
    }

    #[actix::test]
    async fn queued_past_a_bound_until_a_place_is_free() {
        let loops = admission(1, 0, OverLimit::Queue);
        let first = soon(loops.admit(asking(1, "web", "alice"))).await.unwrap();
        let mut second = Box::pin(loops.admit(asking(1, "web", "bob")));
        assert!((&mut second).now_or_never().is_none());
        assert_eq!(loops.waiting(), 1);
        drop(first);
        assert!((&mut second)
            .now_or_never()
            .is_some_and(|admitted| admitted.is_ok()));
        assert_eq!(loops.waiting(), 0);
    }

    #[actix::test]
    async fn a_loop_holds_its_place_until_its_outcome_even_without_its_client() {
        let loops = admission(1, 0, OverLimit::Queue);
        let admitted = soon(loops.admit(asking(1, "web", "alice"))).await.unwrap();
        let (ended, outcome) = oneshot::channel::<u8>();
        drop(admitted.until(outcome));
        let mut next = Box::pin(loops.admit(asking(1, "web", "bob")));
        assert!((&mut next).now_or_never().is_none());
        tokio::task::yield_now().await;
        assert!(
            (&mut next).now_or_never().is_none(),
            "the client left; the loop still runs"
        );
        ended.send(7).unwrap();
        let next = soon(next).await.unwrap();
        let (ended, outcome) = oneshot::channel::<u8>();
        let forwarded = next.until(outcome);
        drop(ended);
        assert!(
            soon(forwarded).await.is_err(),
            "an actor that stops ends it too"
        );
        assert!(soon(loops.admit(asking(1, "web", "carol"))).await.is_ok());
    }

    #[actix::test]
    async fn the_place_is_free_before_the_outcome_is_passed_on() {
        let loops = admission(1, 0, OverLimit::Refuse);
        let admitted = soon(loops.admit(asking(1, "web", "alice"))).await.unwrap();
        let (ended, outcome) = oneshot::channel::<u8>();
        let forwarded = admitted.until(outcome);
        ended.send(7).unwrap();
        assert_eq!(soon(forwarded).await.unwrap(), 7);
        assert!(soon(loops.admit(asking(1, "web", "bob"))).await.is_ok());
    }

    /// Two instances' admissions over one store, `over_limit` on the second.
    fn sharing(db: &crate::db::DbHandle, over_limit: OverLimit) -> (LoopAdmission, LoopAdmission) {
        let on = |instance: &str, over_limit| LoopAdmission {
            store: Some(StorePlaces {
                db: db.clone(),
                instance: Arc::from(instance),
                given_back: Arc::default(),
            }),
            ..admission(2, 1, over_limit)
        };
        (on("a", OverLimit::Refuse), on("b", over_limit))
    }

    /// A store with instances `a` and `b` and project 1, and a handle on it.
    fn shared_store() -> (crate::db::testing::TestDb, crate::db::DbHandle) {
        let mut test_db = crate::db::testing::TestDb::new();
        crate::db::testing::project_with_run(&mut test_db.conn, None).unwrap();
        for instance in ["a", "b"] {
            crate::db::queries::instances::join(&mut test_db.conn, instance, i64::MAX).unwrap();
        }
        let db = crate::db::DbHandle::open(
            &test_db.store(),
            crate::db::DbOptions {
                setup: crate::db::ConnectionSetup::default(),
                writer_limits: crate::hedberg::Limits::default(),
                request_limits: crate::hedberg::Limits::default(),
                readers: 1,
                rpc_log: crate::db::queries::rpc_log::RpcLogBounds::default(),
                entry_changes: None,
                events: crate::db::queries::run_events::EventBounds::default(),
                sent: None,
                work: std::sync::Arc::default(),
            },
        )
        .unwrap();
        (test_db, db)
    }

    #[actix::test]
    async fn another_instance_s_loops_count_against_the_bounds_in_the_store() {
        let (_store, db) = shared_store();
        let (a, b) = sharing(&db, OverLimit::Refuse);
        let alice = soon(a.admit(asking(1, "web", "alice"))).await.unwrap();
        let refused = soon(b.admit(asking(1, "web", "alice"))).await.err();
        assert_eq!(
            refused.map(|error| error.to_string()).as_deref(),
            Some("person alice already has 1 loop running or queued; try again later.")
        );
        let _bob = soon(b.admit(asking(1, "web", "bob"))).await.unwrap();
        let refused = soon(b.admit(asking(1, "web", "carol"))).await.err();
        assert_eq!(
            refused.map(|error| error.to_string()).as_deref(),
            Some("project 'web' already has 2 loops running or queued; try again later.")
        );
        let operator = Asking {
            person: None,
            ..asking(1, "web", "connection 9")
        };
        assert!(
            soon(b.admit(operator)).await.is_err(),
            "the operator counts against the project"
        );
        let (ended, outcome) = oneshot::channel::<u8>();
        let forwarded = alice.until(outcome);
        ended.send(1).unwrap();
        soon(forwarded).await.unwrap();
        assert!(
            soon(b.admit(asking(1, "web", "alice"))).await.is_ok(),
            "a loop's place is free in the store once its outcome is passed on"
        );
    }

    #[actix::test]
    async fn a_loop_waits_for_a_place_another_instance_gives_back() {
        let (_store, db) = shared_store();
        let (a, b) = sharing(&db, OverLimit::Queue);
        let alice = soon(a.admit(asking(1, "web", "alice"))).await.unwrap();
        let mut waiting = Box::pin(b.admit(asking(1, "web", "alice")));
        assert!(
            tokio::time::timeout(PLACE_POLL * 2, &mut waiting)
                .await
                .is_err(),
            "it waits while alice's place on a is held"
        );
        drop(alice);
        assert!(
            soon(waiting).await.is_ok(),
            "a place given back (even by a loop that never started) is taken"
        );
    }
}
