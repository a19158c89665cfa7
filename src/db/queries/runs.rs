//! Runs: creation with a unique alias, lookup, rename, settings, the status state machine,
//! the turn counter, forking and recovery after a restart.

use diesel::prelude::*;

use crate::db::enums::RunStatus;
use crate::db::ids::{ProjectId, RunId};
use crate::db::models::run::{RunConfigUpdateForm, RunCreate, RunInsertForm, RunRow, RunSummary};
use crate::db::schema::{known_entries, loops, runs, turns};
use crate::db::DbError;

/// How many suffixes are tried before alias generation gives up.
const ALIAS_ATTEMPTS: u32 = 10_000;

/// Creates an idle run (status 100) named `<model>_<now_ms>`; when that alias is taken
/// (same model, same millisecond) `_2`, `_3`, ... are appended until one is free.
pub fn create_run(
    conn: &mut SqliteConnection,
    create: &RunCreate,
    now_ms: i64,
) -> Result<RunRow, DbError> {
    let form = RunInsertForm {
        project_id: create.project_id,
        parent_run_id: None,
        model: Some(create.model.clone()),
        alias: String::new(),
        temperature: create.temperature,
        persona: create.persona.clone(),
        context_limit: create.context_limit,
        next_turn: 1,
    };
    insert_with_unique_alias(conn, form, &create.model, now_ms)
}

fn insert_with_unique_alias(
    conn: &mut SqliteConnection,
    mut form: RunInsertForm,
    model: &str,
    now_ms: i64,
) -> Result<RunRow, DbError> {
    for attempt in 1..=ALIAS_ATTEMPTS {
        form.alias = match attempt {
            1 => format!("{model}_{now_ms}"),
            n => format!("{model}_{now_ms}_{n}"),
        };
        let inserted = diesel::insert_into(runs::table)
            .values(&form)
            .on_conflict_do_nothing()
            .returning(RunRow::as_returning())
            .get_result(conn)
            .optional()?;
        if let Some(run) = inserted {
            return Ok(run);
        }
    }
    Err(DbError::Conflict(format!(
        "no free run alias for {model}_{now_ms}"
    )))
}

/// The run with this id.
pub fn get_run(conn: &mut SqliteConnection, id: RunId) -> Result<Option<RunRow>, DbError> {
    Ok(runs::table
        .find(id)
        .select(RunRow::as_select())
        .first(conn)
        .optional()?)
}

/// The run with this alias.
pub fn find_run(conn: &mut SqliteConnection, alias: &str) -> Result<Option<RunRow>, DbError> {
    Ok(runs::table
        .filter(runs::alias.eq(alias))
        .select(RunRow::as_select())
        .first(conn)
        .optional()?)
}

/// The most recently created run of a project.
pub fn latest_run(
    conn: &mut SqliteConnection,
    project_id: ProjectId,
) -> Result<Option<RunRow>, DbError> {
    Ok(runs::table
        .filter(runs::project_id.eq(project_id))
        .order(runs::id.desc())
        .select(RunRow::as_select())
        .first(conn)
        .optional()?)
}

/// A project's runs, newest first, with their turn counts and latest summaries.
pub fn list_runs(
    conn: &mut SqliteConnection,
    project_id: ProjectId,
    limit: Option<i64>,
    offset: Option<i64>,
) -> Result<Vec<RunSummary>, DbError> {
    let rows: Vec<RunRow> = runs::table
        .filter(runs::project_id.eq(project_id))
        .order(runs::id.desc())
        .limit(limit.unwrap_or(i64::MAX))
        .offset(offset.unwrap_or(0))
        .select(RunRow::as_select())
        .load(conn)?;
    rows.into_iter()
        .map(|run| {
            let turns = turns::table
                .filter(turns::run_id.eq(run.id))
                .count()
                .get_result(conn)?;
            let summary = known_entries::table
                .filter(known_entries::run_id.eq(run.id))
                .filter(known_entries::scheme.eq("summarize"))
                .order(known_entries::id.desc())
                .select(known_entries::body)
                .first(conn)
                .optional()?;
            Ok(RunSummary {
                run,
                turns,
                summary,
            })
        })
        .collect()
}

/// Whether `name` may be a run alias: `[a-zA-Z0-9_]+`.
pub fn is_valid_alias(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || byte == b'_')
}

/// Renames a run. An invalid name is [`DbError::Invalid`]; a taken one [`DbError::Conflict`].
pub fn rename_run(conn: &mut SqliteConnection, id: RunId, name: &str) -> Result<RunRow, DbError> {
    if !is_valid_alias(name) {
        return Err(DbError::Invalid(format!(
            "run name {name:?} must match [a-zA-Z0-9_]+"
        )));
    }
    diesel::update(runs::table.find(id))
        .set(runs::alias.eq(name))
        .returning(RunRow::as_returning())
        .get_result(conn)
        .optional()
        .map_err(|error| match DbError::from(error) {
            DbError::Conflict(_) => DbError::Conflict(format!("run name {name} is already taken")),
            other => other,
        })?
        .ok_or_else(|| DbError::NotFound(format!("run {id}")))
}

/// Changes the fields given in `form` (temperature 0–2, context limit ≥ 1024).
pub fn update_run_config(
    conn: &mut SqliteConnection,
    id: RunId,
    form: &RunConfigUpdateForm,
) -> Result<RunRow, DbError> {
    let nothing_to_change = form.temperature.is_none()
        && form.persona.is_none()
        && form.context_limit.is_none()
        && form.model.is_none();
    if nothing_to_change {
        return get_run(conn, id)?.ok_or_else(|| DbError::NotFound(format!("run {id}")));
    }
    diesel::update(runs::table.find(id))
        .set(form)
        .returning(RunRow::as_returning())
        .get_result(conn)
        .optional()?
        .ok_or_else(|| DbError::NotFound(format!("run {id}")))
}

/// Moves a run to `status`. The migration's trigger is the state machine; an illegal move
/// is [`DbError::Invalid`] and changes nothing. Setting the current status is a no-op.
pub fn set_run_status(
    conn: &mut SqliteConnection,
    id: RunId,
    status: RunStatus,
) -> Result<RunRow, DbError> {
    conn.immediate_transaction(|conn| {
        let run = get_run(conn, id)?.ok_or_else(|| DbError::NotFound(format!("run {id}")))?;
        diesel::update(runs::table.find(id))
            .set(runs::status.eq(status))
            .returning(RunRow::as_returning())
            .get_result(conn)
            .map_err(|error| match DbError::from(error) {
                DbError::Invalid(_) => DbError::Invalid(format!(
                    "invalid run state transition {} -> {}",
                    run.status.code(),
                    status.code()
                )),
                other => other,
            })
    })
}

/// Takes the run's next turn number (returns it and advances the counter).
pub fn take_turn_number(conn: &mut SqliteConnection, id: RunId) -> Result<i32, DbError> {
    let next: i32 = diesel::update(runs::table.find(id))
        .set(runs::next_turn.eq(runs::next_turn + 1))
        .returning(runs::next_turn)
        .get_result(conn)
        .optional()?
        .ok_or_else(|| DbError::NotFound(format!("run {id}")))?;
    Ok(next - 1)
}

/// Creates a run (status 100) with the parent's settings and a copy of its store. The new
/// run continues the parent's turn numbering, so copied entries keep their place in time.
pub fn fork_run(
    conn: &mut SqliteConnection,
    parent_id: RunId,
    now_ms: i64,
) -> Result<RunRow, DbError> {
    conn.immediate_transaction(|conn| {
        let parent = get_run(conn, parent_id)?
            .ok_or_else(|| DbError::NotFound(format!("run {parent_id}")))?;
        let model = parent.model.clone().unwrap_or_else(|| "run".to_owned());
        let form = RunInsertForm {
            project_id: parent.project_id,
            parent_run_id: Some(parent.id),
            model: parent.model.clone(),
            alias: String::new(),
            temperature: parent.temperature,
            persona: parent.persona.clone(),
            context_limit: parent.context_limit,
            next_turn: parent.next_turn,
        };
        let child = insert_with_unique_alias(conn, form, &model, now_ms)?;
        super::entry_moves::copy_run_entries(conn, parent.id, child.id)?;
        Ok(child)
    })
}

/// How many runs are in each status, for `/metrics`.
pub fn count_by_status(conn: &mut SqliteConnection) -> Result<Vec<(RunStatus, i64)>, DbError> {
    Ok(runs::table
        .group_by(runs::status)
        .select((runs::status, diesel::dsl::count_star()))
        .load(conn)?)
}

/// Removes a run's persona (`persona/set` with neither name nor text).
pub fn clear_persona(conn: &mut SqliteConnection, id: RunId) -> Result<(), DbError> {
    diesel::update(runs::table.find(id))
        .set(runs::persona.eq(None::<String>))
        .execute(conn)?;
    Ok(())
}

/// After a restart: loops that were running go back to pending and runs that were running
/// become aborted (499). Returns the runs that have pending loops, oldest first.
pub fn recover_after_restart(conn: &mut SqliteConnection) -> Result<Vec<RunId>, DbError> {
    conn.immediate_transaction(|conn| {
        diesel::update(loops::table.filter(loops::status.eq(RunStatus::Running)))
            .set(loops::status.eq(RunStatus::Queued))
            .execute(conn)?;
        diesel::update(runs::table.filter(runs::status.eq(RunStatus::Running)))
            .set(runs::status.eq(RunStatus::Aborted))
            .execute(conn)?;
        Ok(loops::table
            .filter(loops::status.eq(RunStatus::Queued))
            .select(loops::run_id)
            .distinct()
            .order(loops::run_id)
            .load(conn)?)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::enums::{LoopMode, LoopPriority};
    use crate::db::models::entry::EntryUpsert;
    use crate::db::models::run::LoopEnqueue;
    use crate::db::queries::{entries, loops};
    use crate::db::testing::{sample_run, TestDb};

    fn create(conn: &mut SqliteConnection, project_id: ProjectId, now_ms: i64) -> RunRow {
        let create = RunCreate {
            project_id,
            model: "grok".into(),
            temperature: Some(0.5),
            persona: None,
            context_limit: None,
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
        let run = find_run(&mut db.conn, "grok_42_2").unwrap().unwrap();
        assert_eq!(
            (run.status, run.temperature),
            (RunStatus::Queued, Some(0.5))
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
    fn the_state_machine_allows_exactly_its_transitions() {
        use RunStatus::*;
        let all = [
            Queued, Running, Completed, Proposed, TooLarge, Aborted, Failed,
        ];
        let allowed = |from: RunStatus, to: RunStatus| match from {
            Queued => matches!(to, Running | Aborted),
            Running => matches!(to, Completed | Proposed | TooLarge | Aborted | Failed),
            Proposed => matches!(to, Running | Completed | Aborted),
            Completed | TooLarge | Failed => matches!(to, Running | Aborted),
            Aborted => to == Running,
        };
        let mut db = TestDb::new();
        let project = sample_run(&mut db.conn).project_id;
        let path_to = |status: RunStatus| -> Vec<RunStatus> {
            match status {
                Queued => vec![],
                Running => vec![Running],
                Aborted => vec![Aborted],
                other => vec![Running, other],
            }
        };
        for (index, from) in all.into_iter().enumerate() {
            for (offset, to) in all.into_iter().enumerate() {
                let run = create(
                    &mut db.conn,
                    project,
                    i64::try_from(index * 10 + offset).unwrap(),
                );
                for step in path_to(from) {
                    set_run_status(&mut db.conn, run.id, step).unwrap();
                }
                let outcome = set_run_status(&mut db.conn, run.id, to);
                let expected = from == to || allowed(from, to);
                assert_eq!(outcome.is_ok(), expected, "{from:?} -> {to:?}: {outcome:?}");
                if !expected {
                    assert!(matches!(outcome, Err(DbError::Invalid(_))));
                    assert_eq!(get_run(&mut db.conn, run.id).unwrap().unwrap().status, from);
                }
            }
        }
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
        let entry = EntryUpsert {
            run_id: parent.id,
            loop_id: None,
            turn: 2,
            path: "known://fact".into(),
            body: "sky is blue".into(),
            status: 200,
            fidelity: None,
            hash: None,
            attributes: Some(serde_json::json!({"summary": "sky"})),
        };
        entries::upsert_entry(conn, &entry).unwrap();
        let child = fork_run(conn, parent.id, 9).unwrap();
        assert_eq!(
            (child.parent_run_id, child.next_turn, child.status),
            (Some(parent.id), 3, RunStatus::Queued)
        );
        let copied = entries::get_entry(conn, child.id, "known://fact")
            .unwrap()
            .unwrap();
        assert_eq!(
            (copied.body.as_str(), copied.turn, copied.loop_id),
            ("sky is blue", 2, None)
        );
        assert_eq!(
            copied.attributes_json().unwrap(),
            serde_json::json!({"summary": "sky"})
        );
        assert!(matches!(
            fork_run(conn, RunId(999), 9),
            Err(DbError::NotFound(_))
        ));
    }

    #[test]
    fn listing_and_restart_recovery() {
        let mut db = TestDb::new();
        let conn = &mut db.conn;
        let first = sample_run(conn);
        let second = create(conn, first.project_id, 2_000);
        let summary = EntryUpsert {
            run_id: first.id,
            loop_id: None,
            turn: 1,
            path: "summarize://done".into(),
            body: "4".into(),
            status: 200,
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

        let enqueue = LoopEnqueue {
            run_id: first.id,
            mode: LoopMode::Act,
            model: None,
            prompt: "go".into(),
            priority: LoopPriority::Normal,
            config: serde_json::json!({}),
        };
        loops::enqueue_loop(conn, &enqueue).unwrap();
        loops::claim_next_loop(conn, first.id).unwrap();
        set_run_status(conn, first.id, RunStatus::Running).unwrap();
        assert_eq!(recover_after_restart(conn).unwrap(), [first.id]);
        assert_eq!(
            get_run(conn, first.id).unwrap().unwrap().status,
            RunStatus::Aborted
        );
        assert_eq!(
            get_run(conn, second.id).unwrap().unwrap().status,
            RunStatus::Queued
        );
        assert_eq!(loops::pending_loops(conn, first.id).unwrap().len(), 1);
    }
}
