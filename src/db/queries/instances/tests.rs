use super::*;
use crate::db::enums::RunStatus;
use crate::db::queries::runs::{get_run, set_run_status};
use crate::db::testing::{sample_loop, sample_run, TestDb};

fn loop_of(claim: Claim) -> LoopRow {
    match claim {
        Claim::Loop(row) => *row,
        other => panic!("expected a loop, got {other:?}"),
    }
}

#[test]
fn a_run_is_driven_by_one_instance_at_a_time_and_each_runs_its_own_loops() {
    let mut db = TestDb::new();
    let conn = &mut db.conn;
    join(conn, "a", 10_000).unwrap();
    join(conn, "b", 10_000).unwrap();
    let run = sample_run(conn);
    let first = sample_loop(conn, run.id, "for a");
    wait_for(conn, first.id, "a").unwrap();
    let second = sample_loop(conn, run.id, "for b");
    wait_for(conn, second.id, "b").unwrap();

    assert_eq!(holder(conn, run.id, 5_000).unwrap(), None);
    assert_eq!(loop_of(claim_loop(conn, run.id, "a").unwrap()).id, first.id);
    assert_eq!(holder(conn, run.id, 5_000).unwrap().as_deref(), Some("a"));
    assert_eq!(holder(conn, run.id, 50_000).unwrap(), None, "expired");
    assert_eq!(claim_loop(conn, run.id, "b").unwrap(), Claim::Elsewhere);
    loops::finish_loop(conn, first.id, RunStatus::Completed, None).unwrap();
    assert_eq!(
        claim_loop(conn, run.id, "a").unwrap(),
        Claim::Idle,
        "b's loop is not a's to run"
    );
    assert_eq!(
        loop_of(claim_loop(conn, run.id, "b").unwrap()).id,
        second.id
    );
    assert_eq!(claim_loop(conn, run.id, "a").unwrap(), Claim::Elsewhere);
}

#[test]
fn an_expired_instance_is_released_as_a_crash_is_recovered() {
    let mut db = TestDb::new();
    let conn = &mut db.conn;
    join(conn, "dead", 1_000).unwrap();
    join(conn, "live", 10_000).unwrap();
    let run = sample_run(conn);
    let running = sample_loop(conn, run.id, "cut short");
    wait_for(conn, running.id, "dead").unwrap();
    let queued = sample_loop(conn, run.id, "never started");
    wait_for(conn, queued.id, "dead").unwrap();
    loop_of(claim_loop(conn, run.id, "dead").unwrap());
    set_run_status(conn, run.id, RunStatus::Running).unwrap();
    let idle = sample_run(conn);
    assert_eq!(claim_loop(conn, run.id, "live").unwrap(), Claim::Elsewhere);

    assert!(any_alive(conn, 5_000).unwrap());
    assert!(!any_alive(conn, 50_000).unwrap());
    assert!(is_alive(conn, "live", 5_000).unwrap());
    assert!(!is_alive(conn, "dead", 5_000).unwrap(), "its row expired");
    assert!(!is_alive(conn, "live", 50_000).unwrap());
    assert!(!is_alive(conn, "unknown", 5_000).unwrap());
    assert_eq!(release(conn, Gone::ExpiredBefore(5_000)).unwrap().runs, 1);
    assert_eq!(
        get_run(conn, run.id).unwrap().unwrap().status,
        RunStatus::Aborted
    );
    assert_eq!(get_run(conn, idle.id).unwrap().unwrap().status, idle.status);
    assert_eq!(loops::active_loop(conn, run.id).unwrap(), None);
    assert!(!renew(conn, "dead", 20_000).unwrap(), "its row is gone");
    assert!(renew(conn, "live", 20_000).unwrap());
    assert_eq!(
        loop_of(claim_loop(conn, run.id, "live").unwrap()).id,
        running.id,
        "the interrupted loop is anyone's now, and first"
    );
}

#[test]
fn a_stopping_instance_releases_its_runs_and_nobody_elses() {
    let mut db = TestDb::new();
    let conn = &mut db.conn;
    join(conn, "stopping", 10_000).unwrap();
    join(conn, "staying", 10_000).unwrap();
    let mine = sample_run(conn);
    let theirs = sample_run(conn);
    for (run, instance) in [(&mine, "stopping"), (&theirs, "staying")] {
        let lp = sample_loop(conn, run.id, "go");
        wait_for(conn, lp.id, instance).unwrap();
        loop_of(claim_loop(conn, run.id, instance).unwrap());
        set_run_status(conn, run.id, RunStatus::Running).unwrap();
    }
    let waiting = sample_loop(conn, theirs.id, "queued at the stopping one");
    wait_for(conn, waiting.id, "stopping").unwrap();

    assert_eq!(release(conn, Gone::This("stopping")).unwrap().runs, 1);
    assert_eq!(
        get_run(conn, mine.id).unwrap().unwrap().status,
        RunStatus::Aborted
    );
    assert_eq!(
        get_run(conn, theirs.id).unwrap().unwrap().status,
        RunStatus::Running
    );
    assert!(loops::active_loop(conn, theirs.id).unwrap().is_some());
    assert_eq!(
        loops::pending_loops(conn, theirs.id).unwrap().len(),
        1,
        "its queued loop stays, for the run's owner to take"
    );
}
