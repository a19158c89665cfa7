use super::*;
use crate::db::enums::EntryStatus;
use crate::db::models::entry::EntryUpsertForm;
use crate::db::queries::{entries, loops};
use crate::db::testing::{sample_loop, sample_run, TestDb};
use crate::db::Conn;

fn create(conn: &mut Conn, project_id: ProjectId, now_ms: i64) -> RunRow {
    let create = RunCreateForm {
        project_id,
        model: "grok".into(),
        temperature: Some(0.5),
        persona: None,
        context_limit: None,
        created_by: Some("alice".into()),
    };
    create_run(conn, &create, now_ms).unwrap()
}

#[test]
fn aliases_get_a_suffix_on_collision() {
    let mut db = TestDb::new();
    let project = sample_run(&mut db.conn).project_id;
    let aliases: Vec<String> = (0..3)
        .map(|_| create(&mut db.conn, project, 42).alias)
        .collect();
    assert_eq!(aliases, ["grok_42", "grok_42_2", "grok_42_3"]);
    let run = find_run(&mut db.conn, project, "grok_42_2")
        .unwrap()
        .unwrap();
    assert_eq!(
        (run.status, run.temperature, run.created_by.as_deref()),
        (RunStatus::Queued, Some(0.5), Some("alice"))
    );
}

#[test]
fn concurrent_creators_on_separate_connections_all_succeed() {
    let db = TestDb::new();
    let project = {
        let mut conn = db.connect();
        sample_run(&mut conn).project_id
    };
    let threads: Vec<_> = (0..16)
        .map(|_| {
            let mut conn = db.connect();
            std::thread::spawn(move || {
                (0..5)
                    .map(|_| create(&mut conn, project, 7).alias)
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    let mut aliases: Vec<String> = threads
        .into_iter()
        .flat_map(|t| t.join().unwrap())
        .collect();
    aliases.sort();
    aliases.dedup();
    assert_eq!(aliases.len(), 80);
}

#[test]
fn rename_checks_the_name_and_its_uniqueness() {
    let mut db = TestDb::new();
    let run = sample_run(&mut db.conn);
    let other = create(&mut db.conn, run.project_id, 5);
    assert_eq!(
        rename_run(&mut db.conn, run.id, "custom_name")
            .unwrap()
            .alias,
        "custom_name"
    );
    assert!(matches!(
        rename_run(&mut db.conn, other.id, "custom_name"),
        Err(DbError::Conflict(_))
    ));
    assert!(matches!(
        rename_run(&mut db.conn, other.id, "bad-name"),
        Err(DbError::Invalid(_))
    ));
    assert!(matches!(
        rename_run(&mut db.conn, RunId(999), "x"),
        Err(DbError::NotFound(_))
    ));
}

#[test]
fn config_updates_only_given_fields_within_bounds() {
    let mut db = TestDb::new();
    let run = sample_run(&mut db.conn);
    let persona = RunConfigUpdateForm {
        persona: Some("pirate".into()),
        ..Default::default()
    };
    update_run_config(&mut db.conn, run.id, &persona).unwrap();
    let limit = RunConfigUpdateForm {
        context_limit: Some(2048),
        ..Default::default()
    };
    let updated = update_run_config(&mut db.conn, run.id, &limit).unwrap();
    assert_eq!(
        (updated.persona.as_deref(), updated.context_limit),
        (Some("pirate"), Some(2048))
    );
    assert_eq!(
        update_run_config(&mut db.conn, run.id, &RunConfigUpdateForm::default()).unwrap(),
        updated
    );
    let hot = RunConfigUpdateForm {
        temperature: Some(3.0),
        ..Default::default()
    };
    assert!(matches!(
        update_run_config(&mut db.conn, run.id, &hot),
        Err(DbError::Invalid(_))
    ));
    let small = RunConfigUpdateForm {
        context_limit: Some(10),
        ..Default::default()
    };
    assert!(matches!(
        update_run_config(&mut db.conn, run.id, &small),
        Err(DbError::Invalid(_))
    ));
}

#[test]
fn fork_copies_settings_store_and_turn_counter() {
    let mut db = TestDb::new();
    let conn = &mut db.conn;
    let parent = sample_run(conn);
    assert_eq!(
        (
            take_turn_number(conn, parent.id).unwrap(),
            take_turn_number(conn, parent.id).unwrap()
        ),
        (1, 2)
    );
    let entry = EntryUpsertForm {
        run_id: parent.id,
        loop_id: None,
        turn: 2,
        path: "known://fact".into(),
        body: "sky is blue".into(),
        status: EntryStatus::Ok,
        fidelity: None,
        hash: None,
        attributes: Some(serde_json::json!({"summary": "sky"})),
    };
    entries::upsert_entry(conn, &entry).unwrap();
    let child = fork_run(conn, parent.id, Some("bob".into()), 9).unwrap();
    assert_eq!(
        (child.parent_run_id, child.next_turn, child.status),
        (Some(parent.id), 3, RunStatus::Queued)
    );
    assert_eq!(
        child.created_by.as_deref(),
        Some("bob"),
        "the forker made it"
    );
    let copied = entries::get_entry(conn, child.id, "known://fact")
        .unwrap()
        .unwrap();
    assert_eq!(
        (copied.body.as_str(), copied.turn, copied.loop_id),
        ("sky is blue", 2, None)
    );
    assert_eq!(
        copied.attributes.to_value(),
        serde_json::json!({"summary": "sky"})
    );
    assert!(matches!(
        fork_run(conn, RunId(999), None, 9),
        Err(DbError::NotFound(_))
    ));
}

#[test]
fn listing_and_restart_recovery() {
    let mut db = TestDb::new();
    let conn = &mut db.conn;
    let first = sample_run(conn);
    let second = create(conn, first.project_id, 2_000);
    let summary = EntryUpsertForm {
        run_id: first.id,
        loop_id: None,
        turn: 1,
        path: "summarize://done".into(),
        body: "4".into(),
        status: EntryStatus::Ok,
        fidelity: None,
        hash: None,
        attributes: None,
    };
    entries::upsert_entry(conn, &summary).unwrap();
    let listed = list_runs(conn, first.project_id, None, None).unwrap();
    let names: Vec<&str> = listed.iter().map(|s| s.run.alias.as_str()).collect();
    assert_eq!(names, [second.alias.as_str(), first.alias.as_str()]);
    assert_eq!(listed.get(1).and_then(|s| s.summary.as_deref()), Some("4"));
    assert_eq!(
        latest_run(conn, first.project_id).unwrap().map(|r| r.id),
        Some(second.id)
    );

    sample_loop(conn, first.id, "go");
    loops::claim_next_loop(conn, first.id, "here").unwrap();
    set_run_status(conn, first.id, RunStatus::Running).unwrap();
    let finished = create(conn, first.project_id, 3_000);
    set_run_status(conn, finished.id, RunStatus::Running).unwrap();
    set_run_status(conn, finished.id, RunStatus::Completed).unwrap();
    assert_eq!(recover_after_restart(conn).unwrap(), 2);
    let status = |conn: &mut Conn, id| get_run(conn, id).unwrap().unwrap().status;
    assert_eq!(status(conn, first.id), RunStatus::Aborted);
    assert_eq!(status(conn, second.id), RunStatus::Aborted);
    assert_eq!(status(conn, finished.id), RunStatus::Completed);
    assert_eq!(loops::pending_loops(conn, first.id).unwrap().len(), 1);
    assert_eq!(loops::active_loop(conn, first.id).unwrap(), None);
}

#[test]
fn a_delegated_run_names_its_parent_and_starts_empty() {
    let mut db = TestDb::new();
    let conn = &mut db.conn;
    let project = sample_run(conn).project_id;
    let mut parent = create(conn, project, 7);
    parent.persona = Some("a pirate".into());
    take_turn_number(conn, parent.id).unwrap();
    let entry = EntryUpsertForm::new(parent.id, None, 1, "known://fact", "sky is blue");
    entries::upsert_entry(conn, &entry).unwrap();
    let child = create_delegated_run(conn, &parent, 8).unwrap();
    assert_eq!(
        (
            child.delegated_by,
            child.parent_run_id,
            child.next_turn,
            child.persona.as_deref(),
            child.temperature,
            child.created_by.as_deref(),
        ),
        (Some(parent.id), None, 1, None, Some(0.5), Some("alice"))
    );
    assert_eq!(child.alias, "grok_8");
    assert!(entries::get_entry(conn, child.id, "known://fact")
        .unwrap()
        .is_none());
    assert_eq!(alias_of(conn, parent.id).unwrap(), Some(parent.alias));
    let summaries = list_runs(conn, project, None, None).unwrap();
    let delegated: Vec<Option<&str>> = summaries
        .iter()
        .map(|summary| summary.delegated_by.as_deref())
        .collect();
    assert_eq!(delegated, [Some("grok_7"), None, None], "newest first");
}
