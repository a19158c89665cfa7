//! Admission of the loops clients ask for (`ask`, `act`): at most so many running or queued
//! per project and per person (0 = no bound). Past a bound a loop waits for a place, first
//! come first served, or is refused, as `agent.over_limit` says; a client that goes away
//! while waiting gives its place up. An admitted loop holds its place until it ends, even
//! if its client goes away meanwhile ([`Admitted::until`]).

use futures_util::FutureExt;
use tokio::sync::oneshot;

use crate::config::{AgentSettings, OverLimit};
use crate::db::ids::ProjectId;
use crate::slots::{Claim, Permit, Slots};

/// Whom active loops are counted against.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Asker {
    Project(ProjectId),
    /// A person's key (see `CallContext::person`).
    Person(String),
}

/// An `ask`/`act` refused: a bound on active loops is reached.
#[derive(Debug, thiserror::Error)]
#[error(
    "{asker} already has {active} loop{} running or queued; try again later.",
    if *.active == 1 { "" } else { "s" }
)]
pub struct LoopsFull {
    /// The project or person, as a client reads it.
    asker: String,
    active: usize,
}

/// The bounds on active loops, shared by every connection. Clones share the counts.
#[derive(Clone)]
pub struct LoopAdmission {
    slots: Slots<Asker>,
    per_project: usize,
    per_person: usize,
    over_limit: OverLimit,
}

impl LoopAdmission {
    /// The bounds and mode of `settings`.
    pub fn new(settings: &AgentSettings) -> Self {
        LoopAdmission {
            slots: Slots::default(),
            per_project: settings.max_active_loops_per_project,
            per_person: settings.max_active_loops_per_person,
            over_limit: settings.over_limit,
        }
    }

    /// A place for one loop of `project` (called `project_name`) that `person` asks for.
    pub async fn admit(
        &self,
        project: ProjectId,
        project_name: &str,
        person: &str,
    ) -> Result<Admitted, LoopsFull> {
        let claim = Claim::of(1)
            .under(Asker::Project(project), self.per_project)
            .under(Asker::Person(person.to_owned()), self.per_person);
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
                            person,
                            waiting,
                            "loop waits for a place"
                        );
                        take.await
                    }
                }
            }
        };
        Ok(Admitted { place: permit })
    }

    /// How many loops wait for a place.
    pub fn waiting(&self) -> usize {
        self.slots.waiting()
    }
}

/// A loop admitted under the bounds on active loops.
pub struct Admitted {
    place: Permit<Asker>,
}

impl Admitted {
    /// The loop's outcome, taken from `outcome` by a task of its own that holds this place
    /// until the loop ends (or its run's actor stops), so the loop counts whether or not
    /// its client still waits for it. The place is free before the outcome is passed on.
    pub fn until<T: 'static>(self, outcome: oneshot::Receiver<T>) -> oneshot::Receiver<T> {
        let (forward, forwarded) = oneshot::channel();
        let place = self.place;
        actix::spawn(async move {
            let ended = outcome.await;
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

    fn admission(per_project: usize, per_person: usize, over_limit: OverLimit) -> LoopAdmission {
        LoopAdmission {
            slots: Slots::default(),
            per_project,
            per_person,
            over_limit,
        }
    }

    #[actix::test]
    async fn refused_past_the_project_bound_then_past_the_person_bound() {
        let loops = admission(2, 1, OverLimit::Refuse);
        let _alice = soon(loops.admit(ProjectId(1), "web", "alice"))
            .await
            .unwrap();
        let again = soon(loops.admit(ProjectId(1), "web", "alice")).await.err();
        assert_eq!(
            again.map(|full| full.to_string()).as_deref(),
            Some("alice already has 1 loop running or queued; try again later.")
        );
        let _bob = soon(loops.admit(ProjectId(1), "web", "bob")).await.unwrap();
        let carol = soon(loops.admit(ProjectId(1), "web", "carol")).await.err();
        assert_eq!(
            carol.map(|full| full.to_string()).as_deref(),
            Some("project 'web' already has 2 loops running or queued; try again later.")
        );
        assert!(soon(loops.admit(ProjectId(2), "api", "carol"))
            .await
            .is_ok());
    }

    #[actix::test]
    async fn queued_past_a_bound_until_a_place_is_free() {
        let loops = admission(1, 0, OverLimit::Queue);
        let first = soon(loops.admit(ProjectId(1), "web", "alice"))
            .await
            .unwrap();
        let mut second = Box::pin(loops.admit(ProjectId(1), "web", "bob"));
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
        let admitted = soon(loops.admit(ProjectId(1), "web", "alice"))
            .await
            .unwrap();
        let (ended, outcome) = oneshot::channel::<u8>();
        drop(admitted.until(outcome));
        let mut next = Box::pin(loops.admit(ProjectId(1), "web", "bob"));
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
        assert!(soon(loops.admit(ProjectId(1), "web", "carol"))
            .await
            .is_ok());
    }

    #[actix::test]
    async fn the_place_is_free_before_the_outcome_is_passed_on() {
        let loops = admission(1, 0, OverLimit::Refuse);
        let admitted = soon(loops.admit(ProjectId(1), "web", "alice"))
            .await
            .unwrap();
        let (ended, outcome) = oneshot::channel::<u8>();
        let forwarded = admitted.until(outcome);
        ended.send(7).unwrap();
        assert_eq!(soon(forwarded).await.unwrap(), 7);
        assert!(soon(loops.admit(ProjectId(1), "web", "bob")).await.is_ok());
    }
}
