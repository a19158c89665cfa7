//! The snapshot stored as differences: every turn's snapshot rebuilt from the store is the
//! projection that turn computed, through rows added, rewritten, demoted and promoted,
//! removed and added again, turns prepared again, an actor that starts over, and turns
//! another instance's actor prepared meanwhile.

use super::*;
use crate::context::snapshot::{snapshot_rows, LatestSnapshot};
use crate::db::queries::entries::delete_entries;
use crate::db::schema::turn_context as stored;
use diesel::{ExpressionMethods, QueryDsl};

/// One step between two turns.
#[derive(Debug, Clone)]
enum Step {
    /// Writes (adds or rewrites) entry `entry` of kind `kind` with `body`.
    Write(usize, usize, String),
    /// Sets entry `entry`'s fidelity (archive: it leaves the context).
    Fidelity(usize, u8),
    /// Deletes entry `entry`.
    Delete(usize),
}

fn step_strategy() -> impl Strategy<Value = Step> {
    prop_oneof![
        3 => (0usize..6, 0usize..7, "[a-z ]{0,12}").prop_map(|(entry, kind, body)| Step::Write(entry, kind, body)),
        2 => (0usize..6, 0u8..4).prop_map(|(entry, code)| Step::Fidelity(entry, code)),
        1 => (0usize..6).prop_map(Step::Delete),
    ]
}

/// How a turn is prepared.
#[derive(Debug, Clone, Copy)]
enum Preparing {
    /// Its first preparation, with what the actor holds.
    First,
    /// Its first preparation by an actor that holds nothing (a restart).
    Restarted,
    /// Its first preparation, then another (a paused turn taken up) after one entry was
    /// written and another deleted.
    Twice,
    /// Its first preparation by another instance's actor: what this actor holds stays as
    /// it was, noted on an earlier turn.
    Elsewhere,
}

fn preparing_strategy() -> impl Strategy<Value = Preparing> {
    prop_oneof![
        6 => Just(Preparing::First),
        1 => Just(Preparing::Restarted),
        1 => Just(Preparing::Twice),
        1 => Just(Preparing::Elsewhere),
    ]
}

fn path_of(entry: usize, kind: usize) -> String {
    entry_path(kind, entry, i32::try_from(entry).unwrap())
}

fn stored_rows(conn: &mut Conn, run: RunId) -> i64 {
    stored::table
        .filter(stored::run_id.eq(run))
        .count()
        .get_result(conn)
        .unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    #[test]
    fn every_turns_snapshot_is_rebuilt_as_it_was_projected(
        turns in proptest::collection::vec(
            (proptest::collection::vec(step_strategy(), 0..5), preparing_strategy()),
            1..12,
        ),
    ) {
        let mut db = database();
        let mut held = LatestSnapshot::default();
        let mut kinds = [0usize; 6];
        let mut projected = Vec::new();
        for (index, (steps, preparing)) in turns.iter().enumerate() {
            let turn = i32::try_from(index + 1).unwrap();
            for step in steps {
                match step {
                    Step::Write(entry, kind, body) => {
                        kinds[*entry] = *kind;
                        let summary = json!({"summary": format!("s {body}")});
                        db.write_with(&path_of(*entry, *kind), body, turn, EntryStatus::Ok, Some(summary));
                    }
                    Step::Fidelity(entry, code) => {
                        db.fidelity(&path_of(*entry, kinds[*entry]), fidelity_of(*code));
                    }
                    Step::Delete(entry) => {
                        let path = path_of(*entry, kinds[*entry]);
                        delete_entries(&mut db.conn, db.run, &Selector::Path(path)).unwrap();
                    }
                }
            }
            if matches!(preparing, Preparing::Restarted) {
                held = LatestSnapshot::default();
            }
            let elsewhere = LatestSnapshot::default();
            let holder = if matches!(preparing, Preparing::Elsewhere) { &elsewhere } else { &held };
            let first = Snapshot::First { latest: (turn > 1).then_some(turn - 1), held: holder };
            let mut opened = materialize_turn(&mut db.conn, target(db.run, turn), first, &HeadingViews, TOKENS).unwrap();
            if matches!(preparing, Preparing::Twice) {
                holder.note(turn, opened.snapshot);
                db.write(&path_of(0, 3), "asked again", turn);
                let gone = path_of(1, kinds[1]);
                delete_entries(&mut db.conn, db.run, &Selector::Path(gone)).unwrap();
                opened = materialize_turn(&mut db.conn, target(db.run, turn), Snapshot::Again, &HeadingViews, TOKENS).unwrap();
            }
            prop_assert_eq!(&opened.snapshot, &snapshot_rows(&opened.rows));
            holder.note(turn, opened.snapshot);
            projected.push(snapshot_rows(&opened.rows));
        }
        for (index, rows) in projected.iter().enumerate() {
            let turn = i32::try_from(index + 1).unwrap();
            let rebuilt = turn_context(&mut db.conn, db.run, turn).unwrap();
            prop_assert_eq!(&rebuilt, rows, "turn {}", turn);
        }
        let written = stored_rows(&mut db.conn, db.run);
        let whole: usize = projected.iter().map(Vec::len).sum();
        prop_assert!(written <= i64::try_from(whole + projected.iter().map(Vec::len).max().unwrap_or(0) * projected.len()).unwrap());
    }
}

/// A turn whose context did not change stores nothing, and its snapshot is the one before.
#[test]
fn an_unchanged_turn_stores_no_row() {
    let mut db = database();
    db.write("known://fact", "water is wet", 1);
    db.write("prompt://1", "Do it", 1);
    let held = LatestSnapshot::default();
    let first = Snapshot::First {
        latest: None,
        held: &held,
    };
    let one = materialize_turn(
        &mut db.conn,
        target(db.run, 1),
        first,
        &HeadingViews,
        TOKENS,
    )
    .unwrap();
    let rows = snapshot_rows(&one.rows);
    held.note(1, one.snapshot);
    assert_eq!(stored_rows(&mut db.conn, db.run), 2);
    let second = Snapshot::First {
        latest: Some(1),
        held: &held,
    };
    materialize_turn(
        &mut db.conn,
        target(db.run, 2),
        second,
        &HeadingViews,
        TOKENS,
    )
    .unwrap();
    assert_eq!(stored_rows(&mut db.conn, db.run), 2);
    assert_eq!(turn_context(&mut db.conn, db.run, 2).unwrap(), rows);

    db.write("known://other", "a second fact", 3);
    let restarted = LatestSnapshot::default();
    let third = Snapshot::First {
        latest: Some(2),
        held: &restarted,
    };
    let three = materialize_turn(
        &mut db.conn,
        target(db.run, 3),
        third,
        &HeadingViews,
        TOKENS,
    )
    .unwrap();
    assert_eq!(
        stored_rows(&mut db.conn, db.run),
        3,
        "one new row, read against the store"
    );
    assert_eq!(
        turn_context(&mut db.conn, db.run, 3).unwrap(),
        snapshot_rows(&three.rows)
    );
}
