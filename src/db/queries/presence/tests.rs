use super::*;
use crate::db::queries::instances::{self, join, release, Gone};
use crate::db::testing::{sample_run, TestDb};

fn entering(instance: &str, conn_id: i64, run: RunId, now: i64, acted: bool) -> Entering<'_> {
    Entering {
        instance,
        conn_id,
        run,
        person: Some("ada"),
        client_name: "rummy acp",
        client_kind: "editor",
        now,
        acted,
    }
}

#[test]
fn a_connection_is_in_one_run_at_a_time_since_it_entered_it() {
    let mut db = TestDb::new();
    let conn = &mut db.conn;
    join(conn, "a", 10_000).unwrap();
    let (one, two) = (sample_run(conn), sample_run(conn));

    assert_eq!(
        enter(conn, &entering("a", 1, one.id, 100, false)).unwrap(),
        None
    );
    assert_eq!(
        enter(conn, &entering("a", 1, one.id, 200, true)).unwrap(),
        None
    );
    let rows = of_run(conn, one.id, 5_000).unwrap();
    assert_eq!((rows[0].since_ms, rows[0].acted_ms), (100, Some(200)));

    assert_eq!(
        enter(conn, &entering("a", 1, two.id, 300, false)).unwrap(),
        Some(one.id),
        "watching another run leaves the first"
    );
    assert!(of_run(conn, one.id, 5_000).unwrap().is_empty());
    let rows = of_run(conn, two.id, 5_000).unwrap();
    assert_eq!((rows[0].since_ms, rows[0].acted_ms), (300, None));

    assert_eq!(
        leave(conn, "a", 1, Some(one.id)).unwrap(),
        None,
        "not in it"
    );
    assert_eq!(leave(conn, "a", 1, None).unwrap(), Some(two.id));
    assert!(of_run(conn, two.id, 5_000).unwrap().is_empty());
}

#[test]
fn an_expired_instance_s_connections_are_not_present_and_go_with_its_release() {
    let mut db = TestDb::new();
    let conn = &mut db.conn;
    join(conn, "dead", 1_000).unwrap();
    join(conn, "live", 10_000).unwrap();
    let run = sample_run(conn);
    enter(conn, &entering("dead", 1, run.id, 100, false)).unwrap();
    enter(conn, &entering("live", 1, run.id, 200, false)).unwrap();

    assert_eq!(of_run(conn, run.id, 500).unwrap().len(), 2);
    let present = of_run(conn, run.id, 5_000).unwrap();
    assert_eq!(present.len(), 1, "an expired instance's connection is gone");
    assert_eq!(present[0].instance_id, "live");

    let gone = Gone::ExpiredBefore(5_000);
    assert_eq!(
        instances::vacated(conn, gone).unwrap(),
        vec![(run.project_id, run.id)]
    );
    release(conn, gone).unwrap();
    assert!(instances::vacated(conn, gone).unwrap().is_empty());
    assert_eq!(of_run(conn, run.id, 500).unwrap().len(), 1, "the row went");
}
