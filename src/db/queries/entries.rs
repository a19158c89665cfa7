//! The store's core operations: upsert with merge semantics, reads, pattern listings, and
//! fidelity, status and attribute changes on selected entries.

use std::borrow::Cow;
use std::collections::HashMap;

use crate::db::backend::per_backend;
use crate::db::statement::{statement, Statement};
use crate::db::Conn;
use diesel::dsl::sql;
use diesel::prelude::*;
use diesel::sql_types::{BigInt, Integer, Nullable, Text};

use crate::db::connection::write_transaction;
use crate::db::enums::{Category, EntryStatus, Fidelity};
use crate::db::functions::body_search;
use crate::db::ids::{EntryId, RunId};
use crate::db::models::entry::{EntryRow, EntryUpsertForm, RunLogRow, Selector, UnresolvedRow};
use crate::db::paths::{normalize_path, pattern_form};
use crate::db::schema::{known_entries, schemes};
use crate::db::DbError;
use crate::hedberg::{self, budget};

mod archived;

pub(crate) use archived::write_archived;

/// Ids per `IN (...)` list, well under SQLite's bind limit.
const IDS_PER_STATEMENT: usize = 5_000;

/// Bodies read at once while a body pattern is searched: bodies can be large.
const BODIES_PER_READ: usize = 64;

/// The upsert of one entry, without its `RETURNING` clause: a new path is inserted, an existing
/// one keeps what [`EntryUpsertForm`] leaves out.
macro_rules! upsert_sql {
    () => {
        "INSERT INTO known_entries (run_id, loop_id, turn, path, body, status, fidelity, hash, attributes)
         VALUES (?, ?, ?, ?, ?, ?, COALESCE(?, 'full'), ?, json_patch('{}', COALESCE(?, '{}')))
         ON CONFLICT (run_id, path) DO UPDATE SET
             loop_id = excluded.loop_id,
             turn = excluded.turn,
             body = excluded.body,
             status = excluded.status,
             fidelity = COALESCE(?, known_entries.fidelity),
             hash = COALESCE(excluded.hash, known_entries.hash),
             attributes = CASE WHEN ? IS NULL THEN known_entries.attributes
                               ELSE json_patch(known_entries.attributes, ?) END,
             write_count = known_entries.write_count + 1,
             updated_at = datetime('now')"
    };
}

/// Writes an entry (see [`EntryUpsertForm`] for what is kept and what replaced) and returns it.
pub(crate) fn upsert_entry(conn: &mut Conn, entry: &EntryUpsertForm) -> Result<EntryRow, DbError> {
    Ok(bind_upsert(statement(concat!(upsert_sql!(), " RETURNING *")), entry)?.get_result(conn)?)
}

/// Writes an entry like [`upsert_entry`] without reading it back (SQLite buffers returned
/// rows, and an entry's body can be large).
pub(crate) fn write_entry(conn: &mut Conn, entry: &EntryUpsertForm) -> Result<(), DbError> {
    bind_upsert(statement(upsert_sql!()), entry)?.execute(conn)?;
    Ok(())
}

fn bind_upsert<'a>(
    upsert: Statement<'a>,
    entry: &'a EntryUpsertForm,
) -> Result<Statement<'a>, DbError> {
    let attributes = attributes_patch(entry.attributes.as_ref())?;
    Ok(upsert
        .bind::<BigInt, _>(entry.run_id)
        .bind::<Nullable<BigInt>, _>(entry.loop_id)
        .bind::<Integer, _>(entry.turn)
        .bind::<Text, _>(normalize_path(&entry.path))
        .bind::<Text, _>(&entry.body)
        .bind::<Integer, _>(entry.status)
        .bind::<Nullable<Text>, _>(entry.fidelity)
        .bind::<Nullable<Text>, _>(&entry.hash)
        .bind::<Nullable<Text>, _>(attributes.clone())
        .bind::<Nullable<Text>, _>(entry.fidelity)
        .bind::<Nullable<Text>, _>(attributes.clone())
        .bind::<Nullable<Text>, _>(attributes))
}

/// A JSON merge patch as text; only objects are attributes.
fn attributes_patch(patch: Option<&serde_json::Value>) -> Result<Option<String>, DbError> {
    match patch {
        None => Ok(None),
        Some(object @ serde_json::Value::Object(_)) => Ok(Some(object.to_string())),
        Some(other) => Err(DbError::Invalid(format!(
            "attributes must be a JSON object, not {other}"
        ))),
    }
}

/// The entry at `path` (normalised).
pub(crate) fn get_entry(
    conn: &mut Conn,
    run_id: RunId,
    path: &str,
) -> Result<Option<EntryRow>, DbError> {
    Ok(
        statement("SELECT * FROM known_entries WHERE run_id = ? AND path = ?")
            .bind::<BigInt, _>(run_id)
            .bind::<Text, _>(normalize_path(path))
            .get_result(conn)
            .optional()?,
    )
}

/// The selected entries ordered by path, paged. A pattern whose work ran past the
/// thread's budget is [`DbError::WorkLimit`] (its matches would be incomplete).
pub(crate) fn list_entries(
    conn: &mut Conn,
    run_id: RunId,
    selector: &Selector,
    limit: Option<i64>,
    offset: Option<i64>,
) -> Result<Vec<EntryRow>, DbError> {
    let mut selected = selected(conn, run_id, selector)?;
    selected.sort_by(|(_, left), (_, right)| left.cmp(right));
    // As SQL's LIMIT and OFFSET: a negative limit is none, a negative offset is 0.
    let limit = limit
        .and_then(|limit| usize::try_from(limit).ok())
        .unwrap_or(usize::MAX);
    let offset = offset
        .and_then(|offset| usize::try_from(offset).ok())
        .unwrap_or(0);
    let page: Vec<EntryId> = selected
        .into_iter()
        .skip(offset)
        .take(limit)
        .map(|(id, _)| id)
        .collect();
    let mut rows = Vec::with_capacity(page.len());
    for chunk in page.chunks(IDS_PER_STATEMENT) {
        rows.extend(
            known_entries::table
                .filter(known_entries::id.eq_any(chunk))
                .select(EntryRow::as_select())
                .load(conn)?,
        );
    }
    rows.sort_by(|left, right| left.path.cmp(&right.path));
    Ok(rows)
}

/// The rows a pattern query returned, unless its pattern work ran out of budget meanwhile
/// (the patterns then match nothing more).
fn within_budget<T>(rows: T) -> Result<T, DbError> {
    match budget::current().exceeded() {
        Some(limit) => Err(DbError::WorkLimit(limit)),
        None => Ok(rows),
    }
}

/// The scheme a pattern is confined to when it starts with a literal `scheme://`, so the
/// `(run_id, scheme, status)` index narrows the read before the pattern runs.
fn literal_scheme(pattern: &str) -> Option<&str> {
    let (scheme, _) = pattern.split_once("://")?;
    let plain = !scheme.is_empty()
        && scheme
            .bytes()
            .all(|byte| byte.is_ascii_lowercase() || byte.is_ascii_digit() || byte == b'_');
    plain.then_some(scheme)
}

/// The ids and paths of the selected entries, in creation order (budgeted as
/// [`list_entries`]). Patterns are evaluated here, in Rust, on either backend: the run's
/// paths (of the pattern's literal scheme) are read and matched, then the bodies of the
/// matching ones are read a few at a time and searched.
pub(crate) fn selected(
    conn: &mut Conn,
    run_id: RunId,
    selector: &Selector,
) -> Result<Vec<(EntryId, String)>, DbError> {
    let query = known_entries::table
        .filter(known_entries::run_id.eq(run_id))
        .order(known_entries::id)
        .select((known_entries::id, known_entries::path))
        .into_boxed();
    let (path, body) = match selector {
        Selector::Path(path) => {
            return Ok(query
                .filter(known_entries::path.eq(normalize_path(path)))
                .load(conn)?)
        }
        Selector::Pattern { path, body } => (path, body),
    };
    let query = match literal_scheme(path) {
        Some(scheme) => query.filter(known_entries::scheme.eq(scheme.to_owned())),
        None => query,
    };
    let mut rows: Vec<(EntryId, String)> = query.load(conn)?;
    let pattern = match hedberg::Pattern::compile(path).map(|pattern| pattern.kind()) {
        Ok(hedberg::PatternKind::Glob | hedberg::PatternKind::Literal) => pattern_form(path),
        _ => Cow::Borrowed(path.as_str()),
    };
    rows.retain(|(_, candidate)| {
        hedberg::pattern_match(&pattern, &pattern_form(candidate)).unwrap_or(false)
    });
    if let Some(body) = body {
        rows = with_body_match(conn, rows, body)?;
    }
    within_budget(rows)
}

/// The `rows` whose body has a match for `pattern` (see [`body_search`]).
fn with_body_match(
    conn: &mut Conn,
    rows: Vec<(EntryId, String)>,
    pattern: &str,
) -> Result<Vec<(EntryId, String)>, DbError> {
    let mut kept = Vec::new();
    for chunk in rows.chunks(BODIES_PER_READ) {
        let ids: Vec<EntryId> = chunk.iter().map(|(id, _)| *id).collect();
        let bodies: HashMap<EntryId, String> = known_entries::table
            .filter(known_entries::id.eq_any(&ids))
            .select((known_entries::id, known_entries::body))
            .load::<(EntryId, String)>(conn)?
            .into_iter()
            .collect();
        kept.extend(
            chunk
                .iter()
                .filter(|(id, _)| {
                    bodies
                        .get(id)
                        .is_some_and(|text| body_search(pattern, text))
                })
                .cloned(),
        );
    }
    Ok(kept)
}

/// Runs `change` on the selected entries' ids, chunked; returns the changed paths.
fn change_selected(
    conn: &mut Conn,
    run_id: RunId,
    selector: &Selector,
    change: impl Fn(&mut Conn, &[EntryId]) -> QueryResult<usize>,
) -> Result<Vec<String>, DbError> {
    write_transaction(conn, |conn| {
        let rows = selected(conn, run_id, selector)?;
        let ids: Vec<EntryId> = rows.iter().map(|(id, _)| *id).collect();
        for chunk in ids.chunks(IDS_PER_STATEMENT) {
            change(conn, chunk)?;
        }
        Ok(rows.into_iter().map(|(_, path)| path).collect())
    })
}

fn current_timestamp() -> diesel::expression::SqlLiteral<Text> {
    sql::<Text>("datetime('now')")
}

/// Sets the fidelity of the selected entries (tokens follow); the turn is not touched.
pub(crate) fn set_fidelity(
    conn: &mut Conn,
    run_id: RunId,
    selector: &Selector,
    fidelity: Fidelity,
) -> Result<Vec<String>, DbError> {
    change_selected(conn, run_id, selector, |conn, ids| {
        diesel::update(known_entries::table.filter(known_entries::id.eq_any(ids)))
            .set((
                known_entries::fidelity.eq(fidelity),
                known_entries::updated_at.eq(current_timestamp()),
            ))
            .execute(conn)
    })
}

/// Brings the selected entries to full fidelity and marks them touched at `turn`.
#[cfg(test)]
pub(crate) fn promote(
    conn: &mut Conn,
    run_id: RunId,
    selector: &Selector,
    turn: i32,
) -> Result<Vec<String>, DbError> {
    change_selected(conn, run_id, selector, |conn, ids| {
        diesel::update(known_entries::table.filter(known_entries::id.eq_any(ids)))
            .set((
                known_entries::fidelity.eq(Fidelity::Full),
                known_entries::turn.eq(turn),
                known_entries::updated_at.eq(current_timestamp()),
            ))
            .execute(conn)
    })
}

/// Archives the selected entries: invisible to the model, still retrievable.
pub(crate) fn demote(
    conn: &mut Conn,
    run_id: RunId,
    selector: &Selector,
) -> Result<Vec<String>, DbError> {
    set_fidelity(conn, run_id, selector, Fidelity::Archive)
}

/// Deletes the selected entries; returns their paths.
pub(crate) fn delete_entries(
    conn: &mut Conn,
    run_id: RunId,
    selector: &Selector,
) -> Result<Vec<String>, DbError> {
    change_selected(conn, run_id, selector, |conn, ids| {
        diesel::delete(known_entries::table.filter(known_entries::id.eq_any(ids))).execute(conn)
    })
}

/// Sets an entry's status and, when given, its body (a proposal's resolution).
pub(crate) fn resolve_entry(
    conn: &mut Conn,
    run_id: RunId,
    path: &str,
    status: EntryStatus,
    body: Option<&str>,
) -> Result<EntryRow, DbError> {
    let path = normalize_path(path);
    let target = known_entries::table
        .filter(known_entries::run_id.eq(run_id))
        .filter(known_entries::path.eq(&path));
    let updated = match body {
        Some(body) => per_backend!(conn, |conn| diesel::update(target)
            .set((
                known_entries::status.eq(status),
                known_entries::body.eq(body),
                known_entries::updated_at.eq(current_timestamp()),
            ))
            .returning(EntryRow::as_returning())
            .get_result(conn)),
        None => per_backend!(conn, |conn| diesel::update(target)
            .set((
                known_entries::status.eq(status),
                known_entries::updated_at.eq(current_timestamp()),
            ))
            .returning(EntryRow::as_returning())
            .get_result(conn)),
    };
    updated
        .optional()?
        .ok_or_else(|| DbError::NotFound(format!("entry {path}")))
}

/// Merges `patch` into an entry's attributes (JSON merge patch: `null` removes a key).
pub(crate) fn update_attributes(
    conn: &mut Conn,
    run_id: RunId,
    path: &str,
    patch: &serde_json::Value,
) -> Result<EntryRow, DbError> {
    let patch = attributes_patch(Some(patch))?.unwrap_or_default();
    let path = normalize_path(path);
    per_backend!(conn, |conn| diesel::update(
        known_entries::table
            .filter(known_entries::run_id.eq(run_id))
            .filter(known_entries::path.eq(&path)),
    )
    .set((
        known_entries::attributes.eq(sql::<Text>("json_patch(attributes, ")
            .bind::<Text, _>(patch)
            .sql(")")),
        known_entries::updated_at.eq(current_timestamp()),
    ))
    .returning(EntryRow::as_returning())
    .get_result(conn))
    .optional()?
    .ok_or_else(|| DbError::NotFound(format!("entry {path}")))
}

/// The run's pending proposals (status 202), oldest first.
pub(crate) fn unresolved(conn: &mut Conn, run_id: RunId) -> Result<Vec<UnresolvedRow>, DbError> {
    Ok(
        statement("SELECT * FROM v_unresolved WHERE run_id = ? ORDER BY id")
            .bind::<BigInt, _>(run_id)
            .load(conn)?,
    )
}

/// The run's client-facing history (`v_run_log`), oldest first: what `run/state` carries
/// (`agent::state::CarriedState`) and the latest log entries are checked against.
#[cfg(test)]
pub(crate) fn run_log(conn: &mut Conn, run_id: RunId) -> Result<Vec<RunLogRow>, DbError> {
    Ok(
        statement("SELECT * FROM v_run_log WHERE run_id = ? ORDER BY id")
            .bind::<BigInt, _>(run_id)
            .load(conn)?,
    )
}

/// The run's latest `count` entries of its client-facing history (`v_run_log`), oldest
/// first: found by their ids alone, then only they are read whole.
pub(crate) fn latest_run_log(
    conn: &mut Conn,
    run_id: RunId,
    count: usize,
) -> Result<Vec<RunLogRow>, DbError> {
    Ok(statement(
        "SELECT * FROM v_run_log WHERE id IN \
         (SELECT id FROM v_run_log WHERE run_id = ? ORDER BY id DESC LIMIT ?) ORDER BY id",
    )
    .bind::<BigInt, _>(run_id)
    .bind::<BigInt, _>(i64::try_from(count).unwrap_or(i64::MAX))
    .load(conn)?)
}

/// The run's entries of one scheme, oldest first (`reasoning`, `content`, `skill`, ...).
pub(crate) fn entries_of_scheme(
    conn: &mut Conn,
    run_id: RunId,
    scheme: &str,
) -> Result<Vec<EntryRow>, DbError> {
    Ok(
        statement("SELECT * FROM known_entries WHERE run_id = ? AND scheme = ? ORDER BY id")
            .bind::<BigInt, _>(run_id)
            .bind::<Text, _>(scheme)
            .load(conn)?,
    )
}

/// The run's newest entry of one scheme (latest `prompt`, latest `summarize`).
pub(crate) fn latest_entry_of_scheme(
    conn: &mut Conn,
    run_id: RunId,
    scheme: &str,
) -> Result<Option<EntryRow>, DbError> {
    Ok(statement(
        "SELECT * FROM known_entries WHERE run_id = ? AND scheme = ? ORDER BY id DESC LIMIT 1",
    )
    .bind::<BigInt, _>(run_id)
    .bind::<Text, _>(scheme)
    .get_result(conn)
    .optional()?)
}

/// The run's non-file entries whose scheme is not audit (pending proposals included), in
/// creation order: `getRun`'s history.
pub(crate) fn run_history(conn: &mut Conn, run_id: RunId) -> Result<Vec<EntryRow>, DbError> {
    Ok(known_entries::table
        .inner_join(schemes::table.on(schemes::name.nullable().eq(known_entries::scheme)))
        .filter(known_entries::run_id.eq(run_id))
        .filter(schemes::category.ne(Category::Audit))
        .order(known_entries::id)
        .select(EntryRow::as_select())
        .load(conn)?)
}

/// Path and content hash of every scanned file entry of a run (for change detection).
pub(crate) fn file_hashes(
    conn: &mut Conn,
    run_id: RunId,
) -> Result<Vec<(String, String)>, DbError> {
    let rows: Vec<(String, Option<String>)> = known_entries::table
        .filter(known_entries::run_id.eq(run_id))
        .filter(known_entries::scheme.is_null())
        .select((known_entries::path, known_entries::hash))
        .load(conn)?;
    Ok(rows
        .into_iter()
        .filter_map(|(path, hash)| Some((path, hash?)))
        .collect())
}

/// The run's file entries at summary fidelity that have no outline yet (no `symbols`
/// string: new, or changed since one was made), among the paths `outlinable` accepts.
pub(crate) fn unoutlined_summaries(
    conn: &mut Conn,
    run_id: RunId,
    outlinable: impl Fn(&str) -> bool,
) -> Result<Vec<EntryRow>, DbError> {
    #[derive(QueryableByName)]
    struct Summarized {
        #[diesel(sql_type = Text)]
        path: String,
        #[diesel(sql_type = Text)]
        attributes: String,
    }
    let summarized: Vec<Summarized> = statement(
        "SELECT path, attributes FROM known_entries \
         WHERE run_id = ? AND scheme IS NULL AND fidelity = ?",
    )
    .bind::<BigInt, _>(run_id)
    .bind::<Text, _>(Fidelity::Summary)
    .load(conn)?;
    let paths: Vec<String> = summarized
        .into_iter()
        .filter(|row| outlinable(&row.path) && !has_symbols(&row.attributes))
        .map(|row| row.path)
        .collect();
    if paths.is_empty() {
        return Ok(Vec::new());
    }
    Ok(known_entries::table
        .filter(known_entries::run_id.eq(run_id))
        .filter(known_entries::path.eq_any(&paths))
        .order(known_entries::path)
        .select(EntryRow::as_select())
        .load(conn)?)
}

fn has_symbols(attributes: &str) -> bool {
    serde_json::from_str::<serde_json::Value>(attributes)
        .is_ok_and(|attributes| attributes.get("symbols").is_some_and(|s| s.is_string()))
}

/// Sets a file entry's outline (`symbols`; empty when it has none), unless its content
/// changed (its hash is no longer `hash`) since the outline was made.
pub(crate) fn set_symbols(
    conn: &mut Conn,
    run_id: RunId,
    path: &str,
    hash: Option<&str>,
    symbols: &str,
) -> Result<(), DbError> {
    write_transaction(conn, |conn| {
        let current = get_entry(conn, run_id, path)?;
        if current.is_some_and(|entry| entry.hash.as_deref() == hash) {
            update_attributes(
                conn,
                run_id,
                path,
                &serde_json::json!({ "symbols": symbols }),
            )?;
        }
        Ok(())
    })
}

/// Brings a pinned file shown at index fidelity back to full.
pub(crate) fn promote_if_index(
    conn: &mut Conn,
    run_id: RunId,
    path: &str,
    turn: i32,
) -> Result<(), DbError> {
    diesel::update(
        known_entries::table
            .filter(known_entries::run_id.eq(run_id))
            .filter(known_entries::path.eq(path))
            .filter(known_entries::fidelity.eq(Fidelity::Index)),
    )
    .set((
        known_entries::fidelity.eq(Fidelity::Full),
        known_entries::turn.eq(turn),
    ))
    .execute(conn)?;
    Ok(())
}

/// Whether a proposal made at `turn` was rejected by the client (status 403 on an entry of
/// one of the `proposing` schemes).
pub(crate) fn rejected_at_turn(
    conn: &mut Conn,
    run_id: RunId,
    turn: i32,
    proposing: &[&str],
) -> Result<bool, DbError> {
    let found: i64 = known_entries::table
        .filter(known_entries::run_id.eq(run_id))
        .filter(known_entries::turn.eq(turn))
        .filter(known_entries::status.eq(EntryStatus::Forbidden))
        .filter(known_entries::scheme.eq_any(proposing))
        .count()
        .get_result(conn)?;
    Ok(found > 0)
}

/// Archives the prompt entries one loop wrote; returns how many.
pub(crate) fn archive_loop_prompts(
    conn: &mut Conn,
    run_id: RunId,
    loop_id: crate::db::ids::LoopId,
) -> Result<usize, DbError> {
    Ok(diesel::update(
        known_entries::table
            .filter(known_entries::run_id.eq(run_id))
            .filter(known_entries::loop_id.eq(loop_id))
            .filter(known_entries::scheme.eq("prompt")),
    )
    .set(known_entries::fidelity.eq(Fidelity::Archive))
    .execute(conn)?)
}

/// The path of the newest prompt entry a loop wrote.
pub(crate) fn loop_prompt_path(
    conn: &mut Conn,
    run_id: RunId,
    loop_id: crate::db::ids::LoopId,
) -> Result<Option<String>, DbError> {
    Ok(known_entries::table
        .filter(known_entries::run_id.eq(run_id))
        .filter(known_entries::loop_id.eq(loop_id))
        .filter(known_entries::scheme.eq("prompt"))
        .order(known_entries::id.desc())
        .select(known_entries::path)
        .first(conn)
        .optional()?)
}

pub(crate) use super::free_paths::{free_path, FreePaths};

#[cfg(test)]
mod tests;
