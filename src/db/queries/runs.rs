//! Runs: creation with a unique alias, lookup, rename, settings, the status state machine,
//! the turn counter, forking and recovery after a restart.

use crate::db::backend::per_backend;
use crate::db::Conn;
use diesel::prelude::*;
use diesel::result::{DatabaseErrorKind, Error as DieselError};
use diesel::sql_types::{BigInt, Integer};

use crate::db::connection::write_transaction;
use crate::db::enums::RunStatus;
use crate::db::ids::{ProjectId, RunId};
use crate::db::models::run::{
    RunConfigUpdateForm, RunCreateForm, RunInsertForm, RunRow, RunSummary,
};
use crate::db::schema::{known_entries, loops, runs, turns};
use crate::db::statement::statement;
use crate::db::DbError;

/// How many suffixes are tried before alias generation gives up.
const ALIAS_ATTEMPTS: u32 = 10_000;

/// Milliseconds since the epoch, for run aliases.
pub(crate) fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|elapsed| i64::try_from(elapsed.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// Creates an idle run (status 100) named `<model>_<now_ms>`; when that alias is taken in
/// its project (same model, same millisecond) `_2`, `_3`, ... are appended until one is free.
pub(crate) fn create_run(
    conn: &mut Conn,
    create: &RunCreateForm,
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
        created_by: create.created_by.clone(),
        delegated_by: None,
        title: None,
        title_by: None,
    };
    insert_with_unique_alias(conn, form, &create.model, now_ms)
}

/// Creates an idle run (status 100) for a sub-task of `parent`, with its model, temperature
/// and context cap, no persona and an empty store.
pub(crate) fn create_delegated_run(
    conn: &mut Conn,
    parent: &RunRow,
    now_ms: i64,
) -> Result<RunRow, DbError> {
    let model = parent.model.clone().unwrap_or_else(|| "run".to_owned());
    let form = RunInsertForm {
        project_id: parent.project_id,
        parent_run_id: None,
        model: parent.model.clone(),
        alias: String::new(),
        temperature: parent.temperature,
        persona: None,
        context_limit: parent.context_limit,
        next_turn: 1,
        created_by: parent.created_by.clone(),
        delegated_by: Some(parent.id),
        title: None,
        title_by: None,
    };
    insert_with_unique_alias(conn, form, &model, now_ms)
}

/// The alias of the run with this id.
pub(crate) fn alias_of(conn: &mut Conn, id: RunId) -> Result<Option<String>, DbError> {
    Ok(runs::table
        .find(id)
        .select(runs::alias)
        .first(conn)
        .optional()?)
}

fn insert_with_unique_alias(
    conn: &mut Conn,
    mut form: RunInsertForm,
    model: &str,
    now_ms: i64,
) -> Result<RunRow, DbError> {
    for attempt in 1..=ALIAS_ATTEMPTS {
        form.alias = match attempt {
            1 => format!("{model}_{now_ms}"),
            n => format!("{model}_{now_ms}_{n}"),
        };
        // In a savepoint: on PostgreSQL a failed statement spoils its whole transaction.
        let inserted = conn.transaction(|conn| {
            per_backend!(conn, |conn| diesel::insert_into(runs::table)
                .values(&form)
                .returning(RunRow::as_returning())
                .get_result(conn))
        });
        match inserted {
            Ok(run) => return Ok(run),
            Err(DieselError::DatabaseError(DatabaseErrorKind::UniqueViolation, _)) => {}
            Err(error) => return Err(error.into()),
        }
    }
    Err(DbError::Conflict(format!(
        "no free run alias for {model}_{now_ms}"
    )))
}

/// The run with this id.
pub(crate) fn get_run(conn: &mut Conn, id: RunId) -> Result<Option<RunRow>, DbError> {
    Ok(statement("SELECT * FROM runs WHERE id = ?")
        .bind::<BigInt, _>(id)
        .get_result(conn)
        .optional()?)
}

/// The run of `project` with this alias (an alias is unique within its project only).
pub(crate) fn find_run(
    conn: &mut Conn,
    project: ProjectId,
    alias: &str,
) -> Result<Option<RunRow>, DbError> {
    Ok(runs::table
        .filter(runs::project_id.eq(project))
        .filter(runs::alias.eq(alias))
        .select(RunRow::as_select())
        .first(conn)
        .optional()?)
}

/// The most recently created run of a project.
pub(crate) fn latest_run(
    conn: &mut Conn,
    project_id: ProjectId,
) -> Result<Option<RunRow>, DbError> {
    Ok(runs::table
        .filter(runs::project_id.eq(project_id))
        .order(runs::id.desc())
        .select(RunRow::as_select())
        .first(conn)
        .optional()?)
}

/// Most characters of a run's first prompt [`list_runs`] reads.
pub(crate) const ASKED_CHARS: usize = 300;

/// A project's runs, newest first, with their turn counts, latest notification's time, first
/// prompts (cut to [`ASKED_CHARS`]) and latest summaries.
pub(crate) fn list_runs(
    conn: &mut Conn,
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
            let last_event_ms = super::run_events::last_event_ms(conn, run.id)?;
            let asked = loops::table
                .filter(loops::run_id.eq(run.id))
                .order(loops::sequence.asc())
                .select(diesel::dsl::sql::<diesel::sql_types::Text>(&format!(
                    "substr(prompt, 1, {ASKED_CHARS})"
                )))
                .first(conn)
                .optional()?;
            let summary = known_entries::table
                .filter(known_entries::run_id.eq(run.id))
                .filter(known_entries::scheme.eq("summarize"))
                .order(known_entries::id.desc())
                .select(known_entries::body)
                .first(conn)
                .optional()?;
            let delegated_by = match run.delegated_by {
                Some(parent) => alias_of(conn, parent)?,
                None => None,
            };
            Ok(RunSummary {
                run,
                turns,
                last_event_ms,
                asked,
                summary,
                delegated_by,
            })
        })
        .collect()
}

/// Whether `name` may be a run alias: `[a-zA-Z0-9_]+`.
pub(crate) fn is_valid_alias(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || byte == b'_')
}

/// Renames a run. An invalid name is [`DbError::Invalid`]; one taken in the run's project
/// [`DbError::Conflict`] (another project's names are no obstacle, and never told).
pub(crate) fn rename_run(conn: &mut Conn, id: RunId, name: &str) -> Result<RunRow, DbError> {
    if !is_valid_alias(name) {
        return Err(DbError::Invalid(format!(
            "run name {name:?} must match [a-zA-Z0-9_]+"
        )));
    }
    per_backend!(conn, |conn| diesel::update(runs::table.find(id))
        .set(runs::alias.eq(name))
        .returning(RunRow::as_returning())
        .get_result(conn))
    .optional()
    .map_err(|error| match DbError::from(error) {
        DbError::Conflict(_) => DbError::Conflict(format!("run name {name} is already taken")),
        other => other,
    })?
    .ok_or_else(|| DbError::NotFound(format!("run {id}")))
}

/// Changes the fields given in `form` (temperature 0–2, context limit ≥ 1024).
pub(crate) fn update_run_config(
    conn: &mut Conn,
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
    per_backend!(conn, |conn| diesel::update(runs::table.find(id))
        .set(form)
        .returning(RunRow::as_returning())
        .get_result(conn))
    .optional()?
    .ok_or_else(|| DbError::NotFound(format!("run {id}")))
}

/// Locks the run's row until the unit of work ends (PostgreSQL: `FOR UPDATE`; SQLite's one
/// writer already excludes every other unit). The verbs that decide from a run's state and
/// move it (an abort, a cancel, a resolution's record) take it first, so that on several
/// instances one waits for the other's unit and then reads what it wrote (a resolution's
/// loop queued, a proposal withdrawn) instead of deciding from what it read before.
pub(crate) fn lock(conn: &mut Conn, id: RunId) -> Result<(), DbError> {
    if let Conn::Postgres(_) = conn {
        statement("SELECT id FROM runs WHERE id = ? FOR UPDATE")
            .bind::<BigInt, _>(id)
            .execute(conn)?;
    }
    Ok(())
}

/// Moves a run to `status`. The migration's trigger is the state machine; an illegal move
/// is [`DbError::Invalid`] and changes nothing. Setting the current status is a no-op.
pub(crate) fn set_run_status(conn: &mut Conn, id: RunId, status: RunStatus) -> Result<(), DbError> {
    // In a savepoint: on PostgreSQL a refused statement spoils its whole transaction, and
    // the run is read again below.
    let updated = conn.transaction(|conn| {
        statement("UPDATE runs SET status = ? WHERE id = ?")
            .bind::<Integer, _>(status)
            .bind::<BigInt, _>(id)
            .execute(conn)
    });
    match updated.map_err(DbError::from) {
        Ok(0) => Err(DbError::NotFound(format!("run {id}"))),
        Ok(_) => Ok(()),
        Err(DbError::Invalid(_)) => {
            let from = get_run(conn, id)?.map_or(0, |run| run.status.code());
            Err(DbError::Invalid(format!(
                "invalid run state transition {from} -> {}",
                status.code()
            )))
        }
        Err(other) => Err(other),
    }
}

/// Takes the run's next turn number (returns it and advances the counter).
pub(crate) fn take_turn_number(conn: &mut Conn, id: RunId) -> Result<i32, DbError> {
    #[derive(QueryableByName)]
    struct Taken {
        #[diesel(sql_type = Integer)]
        next_turn: i32,
    }
    let taken: Taken =
        statement("UPDATE runs SET next_turn = next_turn + 1 WHERE id = ? RETURNING next_turn")
            .bind::<BigInt, _>(id)
            .get_result(conn)
            .optional()?
            .ok_or_else(|| DbError::NotFound(format!("run {id}")))?;
    Ok(taken.next_turn - 1)
}

/// Creates a run (status 100) with the parent's settings and a copy of its store, by
/// `person`. The new run continues the parent's turn numbering, so copied entries keep their
/// place in time.
pub(crate) fn fork_run(
    conn: &mut Conn,
    parent_id: RunId,
    person: Option<String>,
    now_ms: i64,
) -> Result<RunRow, DbError> {
    write_transaction(conn, |conn| {
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
            created_by: person,
            delegated_by: None,
            title: parent.title.clone(),
            title_by: parent.title_by,
        };
        let child = insert_with_unique_alias(conn, form, &model, now_ms)?;
        super::entry_moves::copy_run_entries(conn, parent.id, child.id)?;
        Ok(child)
    })
}

/// How many runs are in each status, for `/metrics`.
pub(crate) fn count_by_status(conn: &mut Conn) -> Result<Vec<(RunStatus, i64)>, DbError> {
    Ok(runs::table
        .group_by(runs::status)
        .select((runs::status, diesel::dsl::count_star()))
        .load(conn)?)
}

/// Removes a run's persona (`persona/set` with neither name nor text).
pub(crate) fn clear_persona(conn: &mut Conn, id: RunId) -> Result<(), DbError> {
    diesel::update(runs::table.find(id))
        .set(runs::persona.eq(None::<String>))
        .execute(conn)?;
    Ok(())
}

/// After a stop or a crash: loops that were running go back to pending, and runs left
/// created or running (100, 102) become aborted (499). Nothing is started: the pending loops
/// run first the next time a client drives their run. Returns how many runs were aborted.
pub(crate) fn recover_after_restart(conn: &mut Conn) -> Result<usize, DbError> {
    write_transaction(conn, |conn| {
        diesel::update(loops::table.filter(loops::status.eq(RunStatus::Running)))
            .set(loops::status.eq(RunStatus::Queued))
            .execute(conn)?;
        Ok(diesel::update(
            runs::table.filter(runs::status.eq_any([RunStatus::Queued, RunStatus::Running])),
        )
        .set(runs::status.eq(RunStatus::Aborted))
        .execute(conn)?)
    })
}

#[cfg(test)]
mod tests;
