use super::*;
use crate::db::events::{discard_staged, take_staged};
use crate::db::models::run::RunCreateForm;
use crate::db::queries::runs;
use crate::db::testing::{sample_run, TestDb};

/// A frame naming `tag`; every one numbered from the clock has the same length.
fn frame(tag: &str) -> Unnumbered {
    Unnumbered {
        before: format!(r#"{{"tag":"{tag}","seq":"#),
        after: "}",
    }
}

fn unbounded() -> EventBounds {
    EventBounds::default()
}

/// Another run of `project`.
fn another_run(conn: &mut Conn, project: ProjectId) -> RunId {
    let create = RunCreateForm {
        project_id: project,
        model: "m".into(),
        temperature: None,
        persona: None,
        context_limit: None,
        created_by: None,
    };
    runs::create_run(conn, &create, 2_000).unwrap().id
}

/// The seqs `run` keeps, oldest first.
fn kept(conn: &mut Conn, run: RunId) -> Vec<i64> {
    run_events::table
        .filter(run_events::run_id.eq(run))
        .order(run_events::seq)
        .select(run_events::seq)
        .load(conn)
        .unwrap()
}

#[test]
fn a_run_is_numbered_from_the_clock_then_one_by_one_and_each_run_apart() {
    let mut db = TestDb::new();
    let conn = &mut db.conn;
    let run = sample_run(conn);
    let other = another_run(conn, run.project_id);
    discard_staged();
    let before = now_micros();
    let first = append(
        conn,
        &unbounded(),
        run.project_id,
        run.id,
        &[frame("a"), frame("b")],
    )
    .unwrap();
    let start = first[0].seq as i64;
    assert!(start > before, "numbered from the clock: {start}");
    assert_eq!(first[1].seq, first[0].seq + 1);
    assert_eq!(
        &*first[1].text,
        format!(r#"{{"tag":"b","seq":{}}}"#, start + 1)
    );
    let next = append(conn, &unbounded(), run.project_id, run.id, &[frame("c")]).unwrap();
    assert_eq!(next[0].seq, first[1].seq + 1, "one more than the previous");
    let apart = append(conn, &unbounded(), run.project_id, other, &[frame("x")]).unwrap();
    assert!(apart[0].seq as i64 > before);
    assert_eq!(
        seqs(conn, run.id).unwrap(),
        Some(RunSeqs {
            first_seq: start,
            last_seq: start + 2
        })
    );
    let silent = another_run(conn, run.project_id);
    assert_eq!(seqs(conn, silent).unwrap(), None);
    let stored = frames(conn, run.id, start + 1, start + 2).unwrap();
    assert_eq!(
        stored,
        [
            (start + 1, first[1].text.to_string()),
            (start + 2, next[0].text.to_string())
        ]
    );
    let staged: Vec<u64> = take_staged().iter().map(|event| event.seq).collect();
    assert_eq!(
        staged,
        [first[0].seq, first[1].seq, next[0].seq, apart[0].seq],
        "staged to be sent, in order"
    );
    assert!(take_staged().is_empty(), "taken once");
    assert_eq!(
        append(conn, &unbounded(), run.project_id, run.id, &[]).unwrap(),
        []
    );
}

#[test]
fn a_run_keeps_its_latest_frames_and_its_numbering_through_any_prune() {
    let mut db = TestDb::new();
    let conn = &mut db.conn;
    let run = sample_run(conn);
    let bounds = EventBounds {
        per_run: 16,
        ..unbounded()
    };
    let mut last = 0;
    for count in 1..=20 {
        let appended = append(conn, &bounds, run.project_id, run.id, &[frame("f")]).unwrap();
        last = appended[0].seq as i64;
        // Pruned at every second frame (an eighth of 16): 16 kept, one more in between.
        let expected = match count {
            1..=16 => count,
            odd if odd % 2 == 1 => 17,
            _ => 16,
        };
        assert_eq!(kept(conn, run.id).len(), expected, "after {count}");
    }
    assert_eq!(kept(conn, run.id), (last - 15..=last).collect::<Vec<_>>());
    let all_gone = EventBounds {
        keep_ms: 1,
        ..unbounded()
    };
    prune_all(conn, &all_gone, i64::MAX / 2).unwrap();
    assert!(kept(conn, run.id).is_empty());
    let after = append(conn, &unbounded(), run.project_id, run.id, &[frame("g")]).unwrap();
    assert_eq!(
        after[0].seq as i64,
        last + 1,
        "never numbered again from the clock"
    );
    discard_staged();
}

#[test]
fn the_bytes_bounds_drop_a_runs_oldest_frames_and_then_the_oldest_of_all() {
    let mut db = TestDb::new();
    let conn = &mut db.conn;
    let run = sample_run(conn);
    let other = another_run(conn, run.project_id);
    let size = append(conn, &unbounded(), run.project_id, run.id, &[frame("f")]).unwrap()[0]
        .text
        .len() as u64;
    // Bounded by bytes alone, the run is pruned every 32 frames: of 40, pruned at the 32nd
    // to the 24 newest, whose bytes fit, and 8 more since.
    let by_bytes = EventBounds {
        run_bytes: size * 24,
        ..unbounded()
    };
    for _ in 1..40 {
        append(conn, &by_bytes, run.project_id, run.id, &[frame("f")]).unwrap();
    }
    let kept_now = kept(conn, run.id);
    assert_eq!(kept_now.len(), 24 + 8, "24 at the prune, 8 since");
    assert_eq!(kept_bytes(conn).unwrap(), size * 32);
    append(conn, &unbounded(), run.project_id, other, &[frame("f")]).unwrap();
    let total = EventBounds {
        total_bytes: size * 10,
        ..unbounded()
    };
    prune_all(conn, &total, 0).unwrap();
    assert_eq!(kept_bytes(conn).unwrap(), size * 10);
    assert_eq!(kept(conn, other).len(), 1, "the newest of all stays");
    assert_eq!(
        kept(conn, run.id),
        kept_now[23..].to_vec(),
        "its newest nine"
    );
    discard_staged();
}

#[test]
fn frames_older_than_the_keep_go_and_the_rest_stay() {
    let mut db = TestDb::new();
    let conn = &mut db.conn;
    let run = sample_run(conn);
    append(conn, &unbounded(), run.project_id, run.id, &[frame("old")]).unwrap();
    let written: i64 = run_events::table
        .select(run_events::created_ms)
        .first(conn)
        .unwrap();
    let keep = EventBounds {
        keep_ms: 60_000,
        ..unbounded()
    };
    assert_eq!(prune_all(conn, &keep, written + 59_999).unwrap(), 0);
    assert_eq!(prune_all(conn, &keep, written + 60_001).unwrap(), 1);
    assert!(kept(conn, run.id).is_empty());
    discard_staged();
}

#[test]
fn every_run_is_pruned_each_time_the_writer_has_numbered_another_thousand_frames() {
    let mut db = TestDb::new();
    let conn = &mut db.conn;
    let run = sample_run(conn);
    let tight = EventBounds {
        total_bytes: 1,
        ..unbounded()
    };
    discard_staged();
    // Where this thread's count stands is the test's business only: find the next prune.
    let mut appended = 0;
    while kept(conn, run.id).len() == appended {
        append(conn, &tight, run.project_id, run.id, &[frame("f")]).unwrap();
        appended += 1;
        assert!(appended as u64 <= PRUNE_ALL_EVERY, "no prune of every run");
    }
    let since = kept(conn, run.id).len();
    assert_eq!(since, 0, "a byte at most: everything went");
    for _ in 1..PRUNE_ALL_EVERY {
        append(conn, &tight, run.project_id, run.id, &[frame("f")]).unwrap();
    }
    assert_eq!(kept(conn, run.id).len() as u64, PRUNE_ALL_EVERY - 1);
    append(conn, &tight, run.project_id, run.id, &[frame("f")]).unwrap();
    assert!(kept(conn, run.id).is_empty(), "the next thousand");
    discard_staged();
}
