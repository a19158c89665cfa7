use super::*;
use crate::db::queries::runs::set_run_status;
use crate::db::testing::{sample_loop, sample_run, TestDb};

fn settle(conn: &mut Conn, run: RunId, status: RunStatus) {
    set_run_status(conn, run, RunStatus::Running).unwrap();
    set_run_status(conn, run, status).unwrap();
}

#[test]
fn waiting_runs_are_those_on_proposals_and_the_asker_s_ended_ones_until_dismissed() {
    let mut db = TestDb::new();
    let conn = &mut db.conn;
    let (proposing, finished, running) = (sample_run(conn), sample_run(conn), sample_run(conn));
    for run in [&proposing, &finished, &running] {
        sample_loop(conn, run.id, "first");
    }
    sample_loop(conn, finished.id, "second");
    settle(conn, proposing.id, RunStatus::Proposed);
    settle(conn, finished.id, RunStatus::Completed);
    set_run_status(conn, running.id, RunStatus::Running).unwrap();

    let listed = |conn: &mut Conn, person| {
        let mut runs: Vec<RunId> = waiting(conn, person, None)
            .unwrap()
            .into_iter()
            .map(|row| row.run_id)
            .collect();
        runs.sort();
        runs
    };
    assert_eq!(listed(conn, None), vec![proposing.id, finished.id]);
    assert_eq!(
        listed(conn, Some("bob")),
        vec![proposing.id],
        "the operator's finished run is not bob's"
    );
    let row = &waiting(conn, None, Some(finished.id)).unwrap()[0];
    assert_eq!((row.first_prompt.as_str(), row.seq), ("first", 0));

    dismiss(conn, None, finished.id, 0).unwrap();
    assert_eq!(listed(conn, None), vec![proposing.id]);
    assert_eq!(
        listed(conn, Some("bob")),
        vec![proposing.id],
        "bob's inbox is his"
    );
}
