use super::*;
use crate::db::models::entry::EntryUpsertForm;
use crate::db::models::run::RunActionForm;
use crate::db::queries::{entries, instances, run_actions};
use crate::db::testing::{sample_run, TestDb};

const COMMAND: &str = "sh://turn_1/make";
const EDIT: &str = "set://a.txt";

/// A run with two pending proposals, and an instance `i` alive.
fn proposing(db: &mut TestDb) -> RunId {
    let run = sample_run(&mut db.conn).id;
    for path in [COMMAND, EDIT] {
        let form = EntryUpsertForm {
            status: EntryStatus::Proposed,
            ..EntryUpsertForm::new(run, None, 1, path, "body")
        };
        entries::write_entry(&mut db.conn, &form).unwrap();
    }
    instances::join(&mut db.conn, "i", i64::MAX).unwrap();
    run
}

#[test]
fn a_claimed_proposal_is_pending_only_for_its_claimant_until_released() {
    let mut db = TestDb::new();
    let run = proposing(&mut db);
    let conn = &mut db.conn;
    assert!(claim(conn, run, COMMAND, "i", Some("ann")).unwrap());
    assert!(
        !claim(conn, run, COMMAND, "i", None).unwrap(),
        "claimed once"
    );
    assert!(pending(conn, run, COMMAND, false).unwrap().is_none());
    assert!(pending(conn, run, COMMAND, true).unwrap().is_some());
    assert!(pending(conn, run, EDIT, false).unwrap().is_some());
    let found = found(conn, run, COMMAND).unwrap();
    assert_eq!(found.claimed_by, Some(Some("ann".to_owned())));
    assert!(!release(conn, run, COMMAND).unwrap());
    assert!(pending(conn, run, COMMAND, false).unwrap().is_some());
    assert!(
        !claim(conn, run, "sh://turn_1/never", "i", None).unwrap(),
        "only a pending proposal is claimed"
    );
}

#[test]
fn a_proposal_is_resolved_once() {
    let mut db = TestDb::new();
    let run = proposing(&mut db);
    let conn = &mut db.conn;
    assert!(resolve(conn, run, EDIT, EntryStatus::Ok, "done").unwrap());
    assert!(!resolve(conn, run, EDIT, EntryStatus::Forbidden, "no").unwrap());
    let stored = entries::get_entry(conn, run, EDIT).unwrap().unwrap();
    assert_eq!(
        (stored.status, stored.body.as_str()),
        (EntryStatus::Ok, "done")
    );
}

#[test]
fn an_abort_withdraws_what_waits_and_marks_what_is_carried_out() {
    let mut db = TestDb::new();
    let run = proposing(&mut db);
    let conn = &mut db.conn;
    assert!(claim(conn, run, COMMAND, "i", None).unwrap());
    assert_eq!(withdraw(conn, run).unwrap(), vec![EDIT.to_owned()]);
    let edit = entries::get_entry(conn, run, EDIT).unwrap().unwrap();
    assert_eq!(
        (edit.status, edit.body.as_str()),
        (EntryStatus::Withdrawn, WITHDRAWN)
    );
    let command = entries::get_entry(conn, run, COMMAND).unwrap().unwrap();
    assert_eq!(
        command.status,
        EntryStatus::Proposed,
        "its acceptance records it"
    );
    assert!(
        release(conn, run, COMMAND).unwrap(),
        "the claim says it was aborted"
    );
    run_actions::record(
        conn,
        &RunActionForm {
            run_id: run,
            loop_id: None,
            person: Some("bo".into()),
            action: RunAction::Abort,
            path: None,
        },
    )
    .unwrap();
    let found = found(conn, run, EDIT).unwrap();
    assert_eq!(
        found,
        Found {
            status: Some(EntryStatus::Withdrawn),
            claimed_by: None,
            action: Some((RunAction::Abort, Some("bo".into()))),
        }
    );
    assert_eq!(
        found_nothing(conn, run),
        Found {
            status: None,
            claimed_by: None,
            action: None,
        }
    );
}

fn found_nothing(conn: &mut Conn, run: RunId) -> Found {
    found(conn, run, "sh://turn_9/nothing").unwrap()
}

#[test]
fn a_claim_goes_with_its_instance() {
    let mut db = TestDb::new();
    let run = proposing(&mut db);
    let conn = &mut db.conn;
    assert!(claim(conn, run, COMMAND, "i", None).unwrap());
    instances::forget_all(conn).unwrap();
    assert!(pending(conn, run, COMMAND, false).unwrap().is_some());
}
