//! Group commit against a real store: the writer is held in a unit of its own while the test
//! queues others, so what it takes next is known.

use std::future::Future;
use std::pin::Pin;
use std::sync::{mpsc, Arc};

use diesel::connection::SimpleConnection;
use diesel::sql_types::BigInt;
use diesel::{QueryableByName, RunQueryDsl};

use super::GROUP_LIMIT;
use crate::db::actor::{start_db, WriterOptions};
use crate::db::connection::{open_connection, ConnectionSetup};
use crate::db::models::ProjectInsertForm;
use crate::db::queries::projects;
use crate::db::testing::TestDb;
use crate::db::writer::Writer;
use crate::db::{Conn, DbError, DbWatch, Store};
use crate::hedberg::budget::Limits;
use crate::metrics::{StatementsOn, WorkCounters};

type Call = Pin<Box<dyn Future<Output = Result<(), DbError>>>>;

fn options(work: &Arc<WorkCounters>) -> WriterOptions {
    WriterOptions {
        setup: ConnectionSetup::default(),
        limits: Limits::default(),
        watch: DbWatch::default(),
        entry_changes: None,
        events: None,
        work: Arc::clone(work),
    }
}

/// A unit that makes the project `name`.
fn insert(name: &str) -> impl FnOnce(&mut Conn) -> Result<(), DbError> + Send + 'static {
    let form = ProjectInsertForm {
        name: name.to_owned(),
        project_root: None,
    };
    move |conn| projects::upsert_project(conn, &form).map(|_| ())
}

fn queue(
    db: &Writer,
    work: impl FnOnce(&mut Conn) -> Result<(), DbError> + Send + 'static,
) -> Call {
    Box::pin(db.call(work))
}

/// Whether the project `name` is committed: read on a connection of its own.
fn committed(store: &Store, name: &str) -> bool {
    let mut conn = open_connection(store, ConnectionSetup::default()).unwrap();
    projects::find_project(&mut conn, name).unwrap().is_some()
}

/// The writer held in a unit until the sender is used or dropped, and that unit's call.
async fn hold(db: &Writer) -> (mpsc::Sender<()>, Call) {
    let (release, held) = mpsc::channel::<()>();
    let (entered, inside) = tokio::sync::oneshot::channel();
    let mut call = queue(db, move |_| {
        let _ = entered.send(());
        let _ = held.recv();
        Ok(())
    });
    tokio::select! {
        biased;
        _ = inside => {}
        outcome = &mut call => panic!("the holding unit ended early: {outcome:?}"),
    }
    (release, call)
}

/// The writer's units, transactions and statements so far.
fn counts(work: &WorkCounters) -> (u64, u64, u64) {
    let count = work.count();
    (
        count.units,
        count.transactions,
        count.statements_on(StatementsOn::Writer),
    )
}

/// The units and transactions from `before` to `after`.
fn since(before: (u64, u64, u64), after: (u64, u64, u64)) -> (u64, u64) {
    (after.0 - before.0, after.1 - before.1)
}

#[actix::test]
async fn units_queued_while_the_writer_is_busy_share_its_next_transaction() {
    let test_db = TestDb::new();
    let store = test_db.store();
    let work = Arc::<WorkCounters>::default();
    let db = start_db(&store, options(&work)).unwrap();
    let statements = || work.count().statements_on(StatementsOn::Writer);
    let lone = statements();
    db.call(insert("lone")).await.unwrap();
    let per_unit = statements() - lone;

    let (release, held) = hold(&db).await;
    let before = counts(&work);
    let names: Vec<String> = (0..8).map(|n| format!("p{n}")).collect();
    let calls: Vec<Call> = names.iter().map(|name| queue(&db, insert(name))).collect();
    release.send(()).unwrap();
    held.await.unwrap();
    for (name, call) in names.iter().zip(calls) {
        call.await.unwrap();
        assert!(
            committed(&store, name),
            "{name}: answered before its commit"
        );
    }
    let after = counts(&work);
    assert_eq!(since(before, after), (8, 1), "eight units, one transaction");
    assert_eq!(
        after.2 - before.2,
        1 + 8 * per_unit,
        "the held unit's COMMIT, then each unit's statements as many as alone"
    );

    let before = counts(&work);
    db.call(insert("alone again")).await.unwrap();
    assert_eq!(since(before, counts(&work)), (1, 1), "a lone unit, its own");
}

#[actix::test]
async fn a_transaction_holds_at_most_its_limit_and_the_units_keep_their_order() {
    let test_db = TestDb::new();
    let work = Arc::<WorkCounters>::default();
    let db = start_db(&test_db.store(), options(&work)).unwrap();
    db.call(|conn| {
        Ok(conn
            .batch_execute("CREATE TABLE queued (position BIGINT NOT NULL, n BIGINT NOT NULL)")?)
    })
    .await
    .unwrap();
    let (release, held) = hold(&db).await;
    let before = counts(&work);
    let count = 2 * GROUP_LIMIT + 3;
    let calls: Vec<Call> = (0..count)
        .map(|n| {
            queue(&db, move |conn| {
                // Its position: how many ran before it.
                let insert =
                    format!("INSERT INTO queued (position, n) SELECT COUNT(*), {n} FROM queued");
                Ok(conn.batch_execute(&insert)?)
            })
        })
        .collect();
    release.send(()).unwrap();
    held.await.unwrap();
    for call in calls {
        call.await.unwrap();
    }
    assert_eq!(since(before, counts(&work)), (count as u64, 3));

    #[derive(QueryableByName)]
    struct Queued {
        #[diesel(sql_type = BigInt)]
        n: i64,
    }
    let order = db
        .call(|conn| {
            let rows: Vec<Queued> =
                diesel::sql_query("SELECT n FROM queued ORDER BY position").load(conn)?;
            Ok(rows.into_iter().map(|row| row.n).collect::<Vec<_>>())
        })
        .await;
    let expected: Vec<i64> = (0..count as i64).collect();
    assert_eq!(order.unwrap(), expected, "run in the order queued");
}

#[actix::test]
async fn a_failing_unit_is_rolled_back_alone_and_only_its_caller_told() {
    let test_db = TestDb::new();
    let store = test_db.store();
    let work = Arc::<WorkCounters>::default();
    let db = start_db(&store, options(&work)).unwrap();
    let (release, held) = hold(&db).await;
    let before = counts(&work);
    let kept = queue(&db, insert("kept"));
    let refused = queue(&db, |conn| {
        insert("refused")(conn)?;
        Err(DbError::Invalid("refused".into()))
    });
    let panicked = queue(&db, |conn| {
        insert("panicked")(conn)?;
        // Inside a savepoint of its own too, which the panic leaves open.
        crate::db::connection::write_transaction(conn, |conn| -> Result<(), DbError> {
            insert("panicked inside")(conn)?;
            panic!("a bug")
        })
    });
    let after = queue(&db, insert("after"));
    release.send(()).unwrap();
    held.await.unwrap();
    assert!(kept.await.is_ok());
    assert!(matches!(refused.await, Err(DbError::Invalid(_))));
    assert!(matches!(panicked.await, Err(DbError::Internal(_))));
    assert!(after.await.is_ok());
    assert_eq!(since(before, counts(&work)), (4, 1), "one transaction");
    for (name, kept) in [
        ("kept", true),
        ("refused", false),
        ("panicked", false),
        ("panicked inside", false),
        ("after", true),
    ] {
        assert_eq!(committed(&store, name), kept, "{name}");
    }
}

#[actix::test]
async fn a_failing_first_unit_leaves_the_rest_to_a_transaction_of_their_own() {
    let test_db = TestDb::new();
    let store = test_db.store();
    let work = Arc::<WorkCounters>::default();
    let db = start_db(&store, options(&work)).unwrap();
    let (release, held) = hold(&db).await;
    let before = counts(&work);
    let refused = queue(&db, |conn| {
        insert("refused")(conn)?;
        Err(DbError::Invalid("refused".into()))
    });
    let panicked = queue(&db, |conn| {
        insert("panicked")(conn)?;
        panic!("a bug")
    });
    let next = queue(&db, insert("next"));
    let last = queue(&db, insert("last"));
    release.send(()).unwrap();
    held.await.unwrap();
    assert!(matches!(refused.await, Err(DbError::Invalid(_))));
    assert!(matches!(panicked.await, Err(DbError::Internal(_))));
    assert!(next.await.is_ok());
    assert!(last.await.is_ok());
    assert_eq!(
        since(before, counts(&work)),
        (4, 3),
        "each failed first unit its own"
    );
    for (name, kept) in [
        ("refused", false),
        ("panicked", false),
        ("next", true),
        ("last", true),
    ] {
        assert_eq!(committed(&store, name), kept, "{name}");
    }
}

#[actix::test]
async fn a_unit_that_loses_the_transaction_leaves_the_units_after_it_to_a_new_one() {
    let test_db = TestDb::new();
    let store = test_db.store();
    let work = Arc::<WorkCounters>::default();
    let db = start_db(&store, options(&work)).unwrap();
    let (release, held) = hold(&db).await;
    let lost = queue(&db, insert("lost with the transaction"));
    // Ends the whole transaction behind the writer's back, so its savepoint cannot be
    // rolled back to.
    let breaking = queue(&db, |conn| {
        conn.batch_execute("ROLLBACK")?;
        Err(DbError::Invalid("broke the transaction".into()))
    });
    let after = queue(&db, insert("after"));
    release.send(()).unwrap();
    held.await.unwrap();
    assert!(lost.await.is_err(), "its transaction never committed");
    assert!(breaking.await.is_err());
    after
        .await
        .expect("a unit after the one that lost the transaction runs in a new one");
    assert!(!committed(&store, "lost with the transaction"));
    assert!(committed(&store, "after"));
}

#[actix::test]
async fn nobody_is_answered_before_the_transaction_commits() {
    let test_db = TestDb::new();
    let store = test_db.store();
    let work = Arc::<WorkCounters>::default();
    let db = start_db(&store, options(&work)).unwrap();
    // A foreign key checked only at COMMIT: a unit that breaks it succeeds, its commit fails.
    db.call(|conn| {
        Ok(conn.batch_execute(
            "CREATE TABLE parent (id BIGINT PRIMARY KEY);
             CREATE TABLE child (parent BIGINT REFERENCES parent (id)
                 DEFERRABLE INITIALLY DEFERRED)",
        )?)
    })
    .await
    .unwrap();
    let (release, held) = hold(&db).await;
    let innocent = queue(&db, insert("innocent"));
    let dangling = queue(&db, |conn| {
        Ok(conn.batch_execute("INSERT INTO child (parent) VALUES (42)")?)
    });
    release.send(()).unwrap();
    held.await.unwrap();
    assert!(innocent.await.is_err(), "its transaction did not commit");
    assert!(dangling.await.is_err());
    assert!(!committed(&store, "innocent"));
    db.call(insert("later")).await.unwrap();
    assert!(committed(&store, "later"), "the writer goes on");
}
