//! The places of admitted loops (`loop_places`), counted per project and per person across
//! every instance sharing the store: taken when a loop is admitted, given back when it ends,
//! and given back with their instance's row when it goes. The count and the insert of one
//! place follow every other instance's under one lock, so two instances never both take the
//! last place.

use diesel::sql_types::{BigInt, Nullable, Text};
use diesel::RunQueryDsl;

use crate::db::connection::write_transaction;
use crate::db::ids::ProjectId;
use crate::db::statement::statement;
use crate::db::{Conn, DbError, UnitError};

/// The key of PostgreSQL's transaction-scoped advisory lock under which places are counted
/// and taken (any number no other lock of the database uses: "rummy" and 1).
const PLACES_LOCK: i64 = 0x72_75_6d_6d_79_01;

/// What one place is taken under.
#[derive(Debug, Clone)]
pub(crate) struct PlaceClaim {
    /// The instance that holds it (its row's deletion gives it back).
    pub instance: String,
    pub project: ProjectId,
    /// The most places the project may hold (0: no bound).
    pub per_project: usize,
    /// The person who asks (`None`: the operator, not counted here).
    pub person: Option<String>,
    /// The most places a person may hold (0: no bound).
    pub per_person: usize,
}

/// Whose bound left no place.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Bound {
    Project,
    Person(String),
}

/// A claim refused: `bound` already holds `held` places.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct NoPlace {
    pub bound: Bound,
    pub held: usize,
}

/// Why no place was taken.
#[derive(Debug, thiserror::Error)]
pub(crate) enum PlaceError {
    /// A bound is reached; nothing was written.
    #[error("no place: {} held under {:?}", .0.held, .0.bound)]
    Full(NoPlace),
    #[error(transparent)]
    Db(#[from] DbError),
}

impl PlaceError {
    fn full(bound: Bound, held: i64) -> PlaceError {
        PlaceError::Full(NoPlace {
            bound,
            held: usize::try_from(held).unwrap_or(usize::MAX),
        })
    }
}

impl From<diesel::result::Error> for PlaceError {
    fn from(error: diesel::result::Error) -> Self {
        PlaceError::Db(error.into())
    }
}

impl UnitError for PlaceError {
    fn refusal(self) -> Result<Self, DbError> {
        match self {
            PlaceError::Db(error) => Err(error),
            full @ PlaceError::Full(_) => Ok(full),
        }
    }
}

#[derive(diesel::QueryableByName)]
struct Count {
    #[diesel(sql_type = BigInt)]
    held: i64,
}

#[derive(diesel::QueryableByName)]
struct Id {
    #[diesel(sql_type = BigInt)]
    id: i64,
}

/// Takes a place for `claim` when its project and its person are both under their bounds;
/// returns the place's id, or which bound is reached ([`PlaceError::Full`]).
pub(crate) fn take(conn: &mut Conn, claim: &PlaceClaim) -> Result<i64, PlaceError> {
    write_transaction(conn, |conn| {
        lock_places(conn)?;
        if claim.per_project > 0 {
            let held = statement("SELECT COUNT(*) AS held FROM loop_places WHERE project_id = ?")
                .bind::<BigInt, _>(claim.project)
                .get_result::<Count>(conn)?
                .held;
            if reached(held, claim.per_project) {
                return Err(PlaceError::full(Bound::Project, held));
            }
        }
        if let (Some(person), true) = (&claim.person, claim.per_person > 0) {
            let held = statement("SELECT COUNT(*) AS held FROM loop_places WHERE person = ?")
                .bind::<Text, _>(person.clone())
                .get_result::<Count>(conn)?
                .held;
            if reached(held, claim.per_person) {
                return Err(PlaceError::full(Bound::Person(person.clone()), held));
            }
        }
        let place = statement(
            "INSERT INTO loop_places (instance_id, project_id, person) VALUES (?, ?, ?)
             RETURNING id",
        )
        .bind::<Text, _>(claim.instance.clone())
        .bind::<BigInt, _>(claim.project)
        .bind::<Nullable<Text>, _>(claim.person.clone())
        .get_result::<Id>(conn)?;
        Ok(place.id)
    })
}

/// Gives place `id` back (nothing when it is already gone with its instance).
pub(crate) fn give_back(conn: &mut Conn, id: i64) -> Result<(), DbError> {
    statement("DELETE FROM loop_places WHERE id = ?")
        .bind::<BigInt, _>(id)
        .execute(conn)?;
    Ok(())
}

/// Whether `held` places leave none under `bound`.
fn reached(held: i64, bound: usize) -> bool {
    usize::try_from(held).map_or(true, |held| held >= bound)
}

/// Makes the counting and taking of places follow that of every other instance: PostgreSQL's
/// advisory lock, held until the unit of work ends. A SQLite store has one writer, whose
/// transactions already follow one another.
fn lock_places(conn: &mut Conn) -> Result<(), DbError> {
    if let Conn::Postgres(_) = conn {
        statement("SELECT pg_advisory_xact_lock(?)")
            .bind::<BigInt, _>(PLACES_LOCK)
            .execute(conn)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::queries::instances;
    use crate::db::testing::{project_with_run, TestDb};

    /// The bound a claim was refused on; `None` when it took a place. The store's
    /// failure fails the test.
    fn refusal(taken: Result<i64, PlaceError>) -> Option<NoPlace> {
        match taken {
            Ok(_) => None,
            Err(PlaceError::Full(no_place)) => Some(no_place),
            Err(PlaceError::Db(error)) => panic!("{error}"),
        }
    }

    fn claim(instance: &str, project: ProjectId, person: Option<&str>) -> PlaceClaim {
        PlaceClaim {
            instance: instance.to_owned(),
            project,
            per_project: 2,
            person: person.map(str::to_owned),
            per_person: 1,
        }
    }

    #[test]
    fn places_are_counted_per_project_and_person_across_instances_and_go_with_their_instance() {
        let mut db = TestDb::new();
        let project = project_with_run(&mut db.conn, None).unwrap().project_id;
        for instance in ["a", "b"] {
            instances::join(&mut db.conn, instance, i64::MAX).unwrap();
        }
        let alice = take(&mut db.conn, &claim("a", project, Some("alice"))).unwrap();
        assert_eq!(
            refusal(take(&mut db.conn, &claim("b", project, Some("alice")))),
            Some(NoPlace {
                bound: Bound::Person("alice".into()),
                held: 1
            }),
            "alice's place on a counts on b"
        );
        take(&mut db.conn, &claim("b", project, None)).unwrap();
        assert_eq!(
            refusal(take(&mut db.conn, &claim("b", project, Some("bob")))),
            Some(NoPlace {
                bound: Bound::Project,
                held: 2
            })
        );
        give_back(&mut db.conn, alice).unwrap();
        let bob = take(&mut db.conn, &claim("b", project, Some("bob")));
        assert!(bob.is_ok(), "a place given back is free");
        instances::release(&mut db.conn, instances::Gone::This("b")).unwrap();
        let unbounded = PlaceClaim {
            per_project: 0,
            per_person: 0,
            ..claim("a", project, Some("bob"))
        };
        for _ in 0..3 {
            take(&mut db.conn, &unbounded).unwrap();
        }
        assert!(
            refusal(take(&mut db.conn, &claim("a", project, Some("carol")))).is_some(),
            "unbounded places count against a bounded claim"
        );
        instances::release(&mut db.conn, instances::Gone::This("a")).unwrap();
        assert!(
            matches!(
                take(&mut db.conn, &claim("c", project, Some("carol"))),
                Err(PlaceError::Db(_))
            ),
            "a gone instance holds no places (and takes none: its row is gone)"
        );
        instances::join(&mut db.conn, "c", i64::MAX).unwrap();
        assert!(take(&mut db.conn, &claim("c", project, Some("carol"))).is_ok());
    }

    #[test]
    fn instances_taking_the_last_place_at_once_get_it_once() {
        let mut db = TestDb::new();
        let project = project_with_run(&mut db.conn, None).unwrap().project_id;
        instances::join(&mut db.conn, "a", i64::MAX).unwrap();
        let takers = 8;
        let start = std::sync::Barrier::new(takers);
        let taken = std::thread::scope(|scope| {
            let attempts: Vec<_> = (0..takers)
                .map(|_| {
                    let mut conn = db.connect();
                    let start = &start;
                    scope.spawn(move || {
                        let last = PlaceClaim {
                            per_project: 1,
                            per_person: 0,
                            ..claim("a", project, None)
                        };
                        start.wait();
                        refusal(take(&mut conn, &last)).is_none()
                    })
                })
                .collect();
            attempts
                .into_iter()
                .map(|attempt| attempt.join().unwrap())
                .filter(|taken| *taken)
                .count()
        });
        assert_eq!(taken, 1, "the count and the insert follow one another");
    }
}
