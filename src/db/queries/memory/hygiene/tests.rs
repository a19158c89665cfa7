use super::*;
use crate::db::ids::RunId;
use crate::db::models::memory::MemoryFactForm;
use crate::db::models::run::{RunCreateForm, RunRow};
use crate::db::queries::memory::{list_facts, list_history, record_narrative, write_fact};
use crate::db::queries::runs;
use crate::db::testing::{sample_run, TestDb};

fn bounds(per_topic: usize, items: usize) -> HistoryBounds {
    HistoryBounds { per_topic, items }
}

fn fact(project: Option<ProjectId>, run: Option<RunId>, topic: &str, body: &str) -> MemoryFactForm {
    MemoryFactForm {
        project_id: project,
        topic: topic.into(),
        body: body.into(),
        run_id: run,
        person: None,
        by_person: false,
        transient: false,
    }
}

fn transient(project: ProjectId, run: RunId, topic: &str, body: &str) -> MemoryFactForm {
    MemoryFactForm {
        transient: true,
        ..fact(Some(project), Some(run), topic, body)
    }
}

/// A layer's history, newest first, as `(topic, body, folded)`.
fn history(conn: &mut Conn, layer: Option<ProjectId>) -> Vec<(String, String, i32)> {
    list_history(conn, layer)
        .unwrap()
        .into_iter()
        .map(|item| (item.topic, item.body, item.folded))
        .collect()
}

fn kept(topic: &str, body: &str, folded: i32) -> (String, String, i32) {
    (topic.to_owned(), body.to_owned(), folded)
}

/// A new run of `project`.
fn run_in(conn: &mut Conn, project: ProjectId) -> RunRow {
    let form = RunCreateForm {
        project_id: project,
        model: "m".into(),
        temperature: None,
        persona: None,
        context_limit: None,
        created_by: None,
    };
    runs::create_run(conn, &form, 2_000).unwrap()
}

/// Another project, `q`.
fn other_project(conn: &mut Conn) -> ProjectId {
    crate::db::queries::projects::upsert_project(
        conn,
        &crate::db::models::ProjectInsertForm {
            name: "q".into(),
            project_root: Some("/q".into()),
        },
    )
    .unwrap()
    .id
}

fn topics(conn: &mut Conn, project: ProjectId) -> Vec<String> {
    list_facts(conn, Some(project))
        .unwrap()
        .into_iter()
        .map(|fact| fact.topic)
        .collect()
}

#[test]
fn a_topic_keeps_its_newest_items_and_folds_the_older_into_the_oldest_that_stays() {
    let mut db = TestDb::new();
    let conn = &mut db.conn;
    let p = sample_run(conn).project_id;
    let two = bounds(2, 100);
    write_fact(conn, &fact(Some(p), None, "other", "o1"), two).unwrap();
    write_fact(conn, &fact(Some(p), None, "other", "o2"), two).unwrap();
    for n in 1..=5 {
        write_fact(conn, &fact(Some(p), None, "build", &format!("v{n}")), two).unwrap();
    }
    assert_eq!(
        history(conn, Some(p)),
        [
            kept("build", "v4", 0),
            kept("build", "v3", 2),
            kept("other", "o1", 0)
        ],
        "v1 and v2 folded into v3"
    );
    write_fact(conn, &fact(Some(p), None, "build", "v6"), two).unwrap();
    assert_eq!(
        history(conn, Some(p)),
        [
            kept("build", "v5", 0),
            kept("build", "v4", 3),
            kept("other", "o1", 0)
        ],
        "v3 and what it carried folded into v4"
    );
    let one = bounds(1, 100);
    write_fact(conn, &fact(Some(p), None, "build", "v7"), one).unwrap();
    assert_eq!(
        history(conn, Some(p)),
        [kept("build", "v6", 5), kept("other", "o1", 0)]
    );
}

#[test]
fn a_layer_keeps_its_newest_items_and_folds_the_oldest_into_their_own_topic() {
    let mut db = TestDb::new();
    let conn = &mut db.conn;
    let p = sample_run(conn).project_id;
    let three = bounds(10, 3);
    for body in ["a1", "b1", "a2", "b2", "a3", "b3"] {
        write_fact(conn, &fact(Some(p), None, &body[..1], body), three).unwrap();
    }
    assert_eq!(
        history(conn, Some(p)),
        [kept("b", "b2", 0), kept("a", "a2", 1), kept("b", "b1", 0)],
        "a1 folded into a2"
    );
    for body in ["c1", "c2"] {
        write_fact(conn, &fact(Some(p), None, "c", body), three).unwrap();
    }
    assert_eq!(
        history(conn, Some(p)),
        [kept("c", "c1", 0), kept("b", "b2", 1), kept("a", "a2", 1)],
        "b1 folded into b2"
    );
    for body in ["d1", "d2"] {
        write_fact(conn, &fact(Some(p), None, "d", body), bounds(10, 1)).unwrap();
    }
    assert_eq!(
        history(conn, Some(p)),
        [kept("d", "d1", 0)],
        "no item of their topics stays: dropped"
    );
}

#[test]
fn folding_one_layer_leaves_the_others_as_they_are() {
    let mut db = TestDb::new();
    let conn = &mut db.conn;
    let run = sample_run(conn);
    let p = run.project_id;
    let q = other_project(conn);
    let roomy = bounds(10, 10);
    for layer in [None, Some(q)] {
        for body in ["x1", "x2", "x3"] {
            write_fact(conn, &fact(layer, None, "x", body), roomy).unwrap();
        }
    }
    for body in ["x1", "x2", "x3"] {
        write_fact(conn, &fact(Some(p), None, "x", body), bounds(1, 1)).unwrap();
    }
    assert_eq!(history(conn, Some(p)), [kept("x", "x2", 1)]);
    for layer in [None, Some(q)] {
        assert_eq!(
            history(conn, layer),
            [kept("x", "x2", 0), kept("x", "x1", 0)]
        );
    }
}

#[test]
fn narratives_fold_by_title_and_a_run_s_newer_narrative_keeps_the_count() {
    let mut db = TestDb::new();
    let conn = &mut db.conn;
    let first = sample_run(conn);
    let p = first.project_id;
    let one = bounds(1, 100);
    record_narrative(conn, p, first.id, "Fix login", "tried cookies", one).unwrap();
    let second = run_in(conn, p);
    record_narrative(conn, p, second.id, "Fix login", "tried JWT", one).unwrap();
    assert_eq!(history(conn, Some(p)), [kept("fix login", "tried JWT", 1)]);
    record_narrative(conn, p, second.id, "Fix login", "JWT works", one).unwrap();
    assert_eq!(
        history(conn, Some(p)),
        [kept("fix login", "JWT works", 1)],
        "the run's newer narrative keeps what its older one carried"
    );
    record_narrative(conn, p, first.id, "Fix login", "gave up", bounds(5, 100)).unwrap();
    record_narrative(conn, p, second.id, "Ship it", "shipped", bounds(5, 100)).unwrap();
    assert_eq!(
        history(conn, Some(p)),
        [
            kept("ship it", "shipped", 0),
            kept("fix login", "gave up", 1)
        ],
        "a renamed narrative hands its count to the oldest item of its old title"
    );
}

#[test]
fn a_transient_fact_goes_once_its_project_started_so_many_runs_after_the_one_that_wrote_it() {
    let mut db = TestDb::new();
    let conn = &mut db.conn;
    let writer = sample_run(conn);
    let p = writer.project_id;
    let roomy = bounds(10, 10);
    write_fact(
        conn,
        &transient(p, writer.id, "wip", "halfway through the migration"),
        roomy,
    )
    .unwrap();
    write_fact(
        conn,
        &fact(Some(p), Some(writer.id), "style", "tabs"),
        roomy,
    )
    .unwrap();
    let person = MemoryFactForm {
        person: Some("ada".into()),
        by_person: true,
        ..transient(p, writer.id, "deploy", "fridays never")
    };
    let (persons, _) = write_fact(conn, &person, roomy).unwrap();
    assert!(!persons.transient, "a person's fact is never transient");
    let (lasting, _) = write_fact(conn, &transient(p, writer.id, "style", "tabs"), roomy).unwrap();
    assert!(
        !lasting.transient,
        "the same text marked transient stays lasting"
    );
    assert_eq!(prune_transient(conn, p, 2).unwrap(), 0);

    runs::create_delegated_run(conn, &writer, 3_000).unwrap();
    let q = other_project(conn);
    run_in(conn, q);
    run_in(conn, q);
    run_in(conn, p);
    assert_eq!(
        prune_transient(conn, p, 2).unwrap(),
        0,
        "one run started since: a sub-agent's run and another project's do not count"
    );
    run_in(conn, p);
    assert_eq!(prune_transient(conn, p, 0).unwrap(), 0, "0 keeps them");
    assert_eq!(prune_transient(conn, p, 2).unwrap(), 1);
    assert_eq!(topics(conn, p), ["deploy", "style"]);

    let (renewed, _) =
        write_fact(conn, &transient(p, writer.id, "wip", "step two"), roomy).unwrap();
    assert!(renewed.transient);
    run_in(conn, p);
    let latest = run_in(conn, p);
    let (same, written) =
        write_fact(conn, &transient(p, latest.id, "wip", "step two"), roomy).unwrap();
    assert_eq!(
        (same.run_id, written),
        (
            Some(latest.id),
            crate::db::queries::memory::Written::Unchanged
        )
    );
    assert_eq!(
        prune_transient(conn, p, 2).unwrap(),
        0,
        "written again: it counts from then"
    );
    let (lasting, _) = write_fact(
        conn,
        &fact(Some(p), Some(latest.id), "wip", "step two"),
        roomy,
    )
    .unwrap();
    assert!(!lasting.transient, "written again as lasting, it lasts");
    run_in(conn, p);
    run_in(conn, p);
    assert_eq!(prune_transient(conn, p, 1).unwrap(), 0);
    assert_eq!(topics(conn, p), ["deploy", "style", "wip"]);
}

#[test]
fn a_transient_fact_whose_run_is_gone_goes_and_another_project_s_stays() {
    let mut db = TestDb::new();
    let conn = &mut db.conn;
    let writer = sample_run(conn);
    let p = writer.project_id;
    let roomy = bounds(10, 10);
    write_fact(conn, &transient(p, writer.id, "wip", "halfway"), roomy).unwrap();
    let other = other_project(conn);
    let (theirs, _) = write_fact(
        conn,
        &MemoryFactForm {
            run_id: None,
            ..transient(other, writer.id, "wip", "theirs")
        },
        roomy,
    )
    .unwrap();
    assert!(theirs.transient);
    statement("UPDATE memory_facts SET run_id = NULL WHERE project_id = ?")
        .bind::<BigInt, _>(p.0)
        .execute(conn)
        .unwrap();
    assert_eq!(prune_transient(conn, p, 5).unwrap(), 1);
    assert!(topics(conn, p).is_empty());
    assert_eq!(topics(conn, other), ["wip"]);
}
