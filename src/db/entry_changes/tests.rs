use diesel::connection::SimpleConnection;

use super::*;
use crate::db::connection::write_transaction;
use crate::db::enums::{EntryStatus, Fidelity};
use crate::db::models::entry::Selector;
use crate::db::queries::entries;
use crate::db::testing::{sample_run, write, TestDb};

fn logged(db: &mut TestDb) -> RunId {
    record(&mut db.conn).unwrap();
    sample_run(&mut db.conn).id
}

fn named(changes: Vec<EntryChange>) -> Vec<(String, &'static str)> {
    changes
        .into_iter()
        .map(|change| (change.path, change.change_type.as_str()))
        .collect()
}

fn path(path: &str) -> Selector {
    Selector::Path(path.into())
}

#[test]
fn each_kind_of_change_is_logged_once_in_order() {
    let mut db = TestDb::new();
    let run = logged(&mut db);
    let conn = &mut db.conn;
    entries::upsert_entry(conn, &write(run, "known://a", "one", 1)).unwrap();
    entries::upsert_entry(conn, &write(run, "known://a", "two", 1)).unwrap();
    entries::set_fidelity(conn, run, &path("known://a"), Fidelity::Summary).unwrap();
    entries::promote(conn, run, &path("known://a"), 2).unwrap();
    entries::demote(conn, run, &path("known://a")).unwrap();
    entries::resolve_entry(conn, run, "known://a", EntryStatus::Forbidden, Some("no")).unwrap();
    entries::update_attributes(conn, run, "known://a", &serde_json::json!({"k": 1})).unwrap();
    conn.batch_execute("UPDATE known_entries SET body = 'three' WHERE path = 'known://a'")
        .unwrap();
    conn.batch_execute("UPDATE known_entries SET path = 'known://b' WHERE path = 'known://a'")
        .unwrap();
    entries::delete_entries(conn, run, &path("known://b")).unwrap();
    assert_eq!(
        named(take(conn).unwrap()),
        [
            ("known://a".to_owned(), "upsert"),
            ("known://a".to_owned(), "upsert"),
            ("known://a".to_owned(), "fidelity"),
            ("known://a".to_owned(), "promote"),
            ("known://a".to_owned(), "demote"),
            ("known://a".to_owned(), "resolve"),
            ("known://a".to_owned(), "attributes"),
            ("known://a".to_owned(), "body"),
            ("known://a".to_owned(), "remove"),
            ("known://b".to_owned(), "upsert"),
            ("known://b".to_owned(), "remove"),
        ]
    );
    assert!(take(conn).unwrap().is_empty(), "taking empties the log");
}

#[test]
fn an_update_that_changes_nothing_the_model_sees_is_no_change() {
    let mut db = TestDb::new();
    let run = logged(&mut db);
    let conn = &mut db.conn;
    entries::upsert_entry(conn, &write(run, "known://a", "one", 1)).unwrap();
    take(conn).unwrap();
    conn.batch_execute("UPDATE known_entries SET refs = refs + 1, updated_at = 'later'")
        .unwrap();
    entries::promote(conn, run, &path("known://a"), 1).unwrap();
    assert_eq!(take(conn).unwrap(), []);
}

#[test]
fn a_rolled_back_savepoint_drops_its_changes_and_keeps_the_others() {
    let mut db = TestDb::new();
    let run = logged(&mut db);
    let changes = write_transaction(&mut db.conn, |conn| {
        entries::upsert_entry(conn, &write(run, "known://kept", "k", 1))?;
        let failed: Result<(), DbError> = write_transaction(conn, |conn| {
            entries::upsert_entry(conn, &write(run, "known://dropped", "d", 1))?;
            entries::delete_entries(conn, run, &path("known://kept"))?;
            Err(DbError::Invalid("undone".into()))
        });
        assert!(failed.is_err());
        take(conn)
    })
    .unwrap();
    assert_eq!(named(changes), [("known://kept".to_owned(), "upsert")]);
}

#[test]
fn a_rolled_back_transaction_leaves_nothing_to_take() {
    let mut db = TestDb::new();
    let run = logged(&mut db);
    let failed: Result<(), DbError> = write_transaction(&mut db.conn, |conn| {
        entries::upsert_entry(conn, &write(run, "known://a", "a", 1))?;
        Err(DbError::Invalid("undone".into()))
    });
    assert!(failed.is_err());
    assert_eq!(take(&mut db.conn).unwrap(), []);
}

#[test]
fn removing_a_run_removes_each_of_its_entries() {
    let mut db = TestDb::new();
    let run = logged(&mut db);
    let conn = &mut db.conn;
    entries::upsert_entry(conn, &write(run, "known://a", "a", 1)).unwrap();
    take(conn).unwrap();
    conn.batch_execute(&format!("DELETE FROM runs WHERE id = {}", run.0))
        .unwrap();
    assert_eq!(
        named(take(conn).unwrap()),
        [("known://a".to_owned(), "remove")]
    );
}

#[test]
fn a_connection_that_does_not_record_logs_nothing() {
    let mut db = TestDb::new();
    let run = sample_run(&mut db.conn).id;
    entries::upsert_entry(&mut db.conn, &write(run, "known://a", "a", 1)).unwrap();
    record(&mut db.conn).unwrap();
    record(&mut db.conn).unwrap();
    assert_eq!(take(&mut db.conn).unwrap(), [], "from when it records on");
}

#[test]
fn a_change_names_its_entrys_row_and_turn_a_removed_one_as_it_was() {
    let mut db = TestDb::new();
    let run = logged(&mut db);
    let conn = &mut db.conn;
    let first = entries::upsert_entry(conn, &write(run, "update://a", "a", 2)).unwrap();
    let second = entries::upsert_entry(conn, &write(run, "update://b", "b", 3)).unwrap();
    entries::delete_entries(conn, run, &path("update://a")).unwrap();
    let named: Vec<_> = take(conn)
        .unwrap()
        .into_iter()
        .map(|change| (change.entry_id, change.turn, change.change_type.as_str()))
        .collect();
    assert_eq!(
        named,
        [
            (first.id, 2, "upsert"),
            (second.id, 3, "upsert"),
            (first.id, 2, "remove"),
        ]
    );
}
