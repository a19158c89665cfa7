//! Memory across runs: durable facts per project and server-wide, the history of the facts
//! they replaced (kept by the trigger `trg_memory_fact_replaced`) and of runs' session
//! narratives (`record_narrative`), the per-project switch,
//! and recall, ranked by SQLite FTS5's bm25 (the one SQLite-only query here: `recall_facts`
//! and `recall_history` read the `memory_*_fts` tables).

use diesel::prelude::*;
use diesel::sql_types::{BigInt, Bool, Double, Nullable, Text};

use crate::db::ids::{MemoryFactId, MemoryHistoryId, ProjectId, RunId};
use crate::db::models::memory::{
    MemoryFactForm, MemoryFactRow, MemoryHistoryRow, MemoryLayer, RecalledItem,
};
use crate::db::schema::{memory_disabled, memory_facts, memory_history};
use crate::db::statement::statement;
use crate::db::{Conn, DbError};

/// Most distinct words of a text a recall searches for.
const MAX_QUERY_WORDS: usize = 32;
/// Shortest word a recall searches for, in characters.
const MIN_QUERY_WORD_CHARS: usize = 3;
/// Most items of one index a recall scores: its rarest words are searched for as long as
/// the items holding them stay within this.
const MAX_POSTINGS: i64 = 2_000;

/// The history's `reason` of a run's session narrative.
const NARRATIVE: &str = "narrative";

/// What writing a fact did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Written {
    /// No fact had its topic.
    Created,
    /// The fact of its topic had another body, now in the history.
    Replaced,
    /// The fact of its topic already said this.
    Unchanged,
}

/// A topic as it is stored: trimmed, lower case, runs of white space as one space.
pub fn normalize_topic(topic: &str) -> String {
    topic
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase()
}

/// Writes `form` as the fact of its topic in its layer: a new fact, or the replacement of
/// the one with that topic (whose body the trigger keeps in the history).
pub fn write_fact(
    conn: &mut Conn,
    form: &MemoryFactForm,
) -> Result<(MemoryFactRow, Written), DbError> {
    let topic = normalize_topic(&form.topic);
    let existing = layer_facts(form.project_id)
        .filter(memory_facts::topic.eq(&topic))
        .select(MemoryFactRow::as_select())
        .first(conn)
        .optional()?;
    let (id, written) = match existing {
        Some(fact) if fact.body == form.body => return Ok((fact, Written::Unchanged)),
        Some(fact) => {
            diesel::update(memory_facts::table.find(fact.id))
                .set((
                    memory_facts::body.eq(&form.body),
                    memory_facts::run_id.eq(form.run_id),
                    memory_facts::person.eq(&form.person),
                    memory_facts::updated_at.eq(diesel::dsl::sql::<Text>("CURRENT_TIMESTAMP")),
                ))
                .execute(conn)?;
            (fact.id, Written::Replaced)
        }
        None => {
            let id = diesel::insert_into(memory_facts::table)
                .values((
                    memory_facts::project_id.eq(form.project_id),
                    memory_facts::topic.eq(&topic),
                    memory_facts::body.eq(&form.body),
                    memory_facts::run_id.eq(form.run_id),
                    memory_facts::person.eq(&form.person),
                ))
                .returning(memory_facts::id)
                .get_result::<MemoryFactId>(conn)?;
            (id, Written::Created)
        }
    };
    let fact = memory_facts::table
        .find(id)
        .select(MemoryFactRow::as_select())
        .first(conn)?;
    Ok((fact, written))
}

/// The facts of one layer: `project`'s, or the server-wide ones for `None`.
fn layer_facts(
    project: Option<ProjectId>,
) -> memory_facts::BoxedQuery<'static, diesel::sqlite::Sqlite> {
    match project {
        Some(project) => memory_facts::table
            .filter(memory_facts::project_id.eq(project))
            .into_boxed(),
        None => memory_facts::table
            .filter(memory_facts::project_id.is_null())
            .into_boxed(),
    }
}

/// The history of one layer.
fn layer_history(
    project: Option<ProjectId>,
) -> memory_history::BoxedQuery<'static, diesel::sqlite::Sqlite> {
    match project {
        Some(project) => memory_history::table
            .filter(memory_history::project_id.eq(project))
            .into_boxed(),
        None => memory_history::table
            .filter(memory_history::project_id.is_null())
            .into_boxed(),
    }
}

/// The facts of a layer, by topic.
pub fn list_facts(
    conn: &mut Conn,
    project: Option<ProjectId>,
) -> Result<Vec<MemoryFactRow>, DbError> {
    Ok(layer_facts(project)
        .order(memory_facts::topic)
        .select(MemoryFactRow::as_select())
        .load(conn)?)
}

/// The fact `id` of a layer.
pub fn get_fact(
    conn: &mut Conn,
    project: Option<ProjectId>,
    id: MemoryFactId,
) -> Result<Option<MemoryFactRow>, DbError> {
    Ok(layer_facts(project)
        .filter(memory_facts::id.eq(id))
        .select(MemoryFactRow::as_select())
        .first(conn)
        .optional()?)
}

/// The history of a layer, newest first.
pub fn list_history(
    conn: &mut Conn,
    project: Option<ProjectId>,
) -> Result<Vec<MemoryHistoryRow>, DbError> {
    Ok(layer_history(project)
        .order(memory_history::id.desc())
        .select(MemoryHistoryRow::as_select())
        .load(conn)?)
}

/// Erases the fact `id` of a layer (it is not kept in the history); whether there was one.
pub fn delete_fact(
    conn: &mut Conn,
    project: Option<ProjectId>,
    id: MemoryFactId,
) -> Result<bool, DbError> {
    let ids = layer_facts(project)
        .filter(memory_facts::id.eq(id))
        .select(memory_facts::id);
    let deleted =
        diesel::delete(memory_facts::table.filter(memory_facts::id.eq_any(ids))).execute(conn)?;
    Ok(deleted > 0)
}

/// Erases the history item `id` of a layer; whether there was one.
pub fn delete_history(
    conn: &mut Conn,
    project: Option<ProjectId>,
    id: MemoryHistoryId,
) -> Result<bool, DbError> {
    let ids = layer_history(project)
        .filter(memory_history::id.eq(id))
        .select(memory_history::id);
    let deleted = diesel::delete(memory_history::table.filter(memory_history::id.eq_any(ids)))
        .execute(conn)?;
    Ok(deleted > 0)
}

/// Whether memory is on for `project` (it is unless switched off).
pub fn is_enabled(conn: &mut Conn, project: ProjectId) -> Result<bool, DbError> {
    let off = memory_disabled::table
        .find(project)
        .count()
        .get_result::<i64>(conn)?;
    Ok(off == 0)
}

/// Switches memory on or off for `project`; `person` is who switched it off.
pub fn set_enabled(
    conn: &mut Conn,
    project: ProjectId,
    enabled: bool,
    person: Option<&str>,
) -> Result<(), DbError> {
    if enabled {
        diesel::delete(memory_disabled::table.find(project)).execute(conn)?;
    } else {
        diesel::insert_into(memory_disabled::table)
            .values((
                memory_disabled::project_id.eq(project),
                memory_disabled::person.eq(person),
            ))
            .on_conflict_do_nothing()
            .execute(conn)?;
    }
    Ok(())
}

/// The distinct words of `text` a recall looks for: each of at least
/// [`MIN_QUERY_WORD_CHARS`] characters, lower case, at most [`MAX_QUERY_WORDS`] of them.
pub fn query_words(text: &str) -> Vec<String> {
    let mut words: Vec<String> = Vec::new();
    for word in text.split(|c: char| !c.is_alphanumeric()) {
        if word.chars().count() < MIN_QUERY_WORD_CHARS {
            continue;
        }
        let word = word.to_lowercase();
        if !words.contains(&word) {
            words.push(word);
        }
        if words.len() == MAX_QUERY_WORDS {
            break;
        }
    }
    words
}

#[derive(QueryableByName)]
struct WordCount {
    #[diesel(sql_type = BigInt)]
    doc: i64,
}

/// The FTS5 query for the words of `text` in one index, where `count` (a `SELECT count(*)
/// AS doc` of the items matching `?`, at most `?` of them) counts the items holding a word:
/// the rarest words first, as long as the items they are in number at most
/// [`MAX_POSTINGS`] (scoring more would make recall slow, and words that common tell
/// little), any of them; `None` when no word qualifies. A count stops past the bound, so a
/// common word costs no more than a rare one.
fn expression(conn: &mut Conn, count: &'static str, text: &str) -> Result<Option<String>, DbError> {
    let mut counted: Vec<(i64, String)> = Vec::new();
    for word in query_words(text) {
        let quoted = format!("\"{word}\"");
        let rows: Vec<WordCount> = statement(count)
            .bind::<Text, _>(quoted.as_str())
            .bind::<BigInt, _>(MAX_POSTINGS + 1)
            .load(conn)?;
        if let Some(found) = rows.first().filter(|found| found.doc > 0) {
            counted.push((found.doc, quoted));
        }
    }
    counted.sort();
    let mut postings = 0;
    let mut kept = Vec::new();
    for (count, quoted) in counted {
        if postings + count > MAX_POSTINGS {
            break;
        }
        postings += count;
        kept.push(quoted);
    }
    Ok((!kept.is_empty()).then(|| kept.join(" OR ")))
}

#[derive(QueryableByName)]
struct RecalledRow {
    #[diesel(sql_type = Bool)]
    shared: bool,
    /// A history item that is a run's narrative, not a replaced fact.
    #[diesel(sql_type = Bool)]
    narrative: bool,
    #[diesel(sql_type = Text)]
    topic: String,
    #[diesel(sql_type = Text)]
    body: String,
    #[diesel(sql_type = Text)]
    dated: String,
    #[diesel(sql_type = Double)]
    score: f64,
}

/// Keeps `body` as `run`'s session narrative in `project`'s history under `topic`, in
/// place of the one the run kept before (a run has one narrative: its latest).
pub fn record_narrative(
    conn: &mut Conn,
    project: ProjectId,
    run: RunId,
    topic: &str,
    body: &str,
) -> Result<(), DbError> {
    diesel::delete(
        memory_history::table
            .filter(memory_history::project_id.eq(project))
            .filter(memory_history::run_id.eq(run))
            .filter(memory_history::reason.eq(NARRATIVE)),
    )
    .execute(conn)?;
    diesel::insert_into(memory_history::table)
        .values((
            memory_history::project_id.eq(project),
            memory_history::topic.eq(normalize_topic(topic)),
            memory_history::body.eq(body),
            memory_history::reason.eq(NARRATIVE),
            memory_history::run_id.eq(run),
            memory_history::written_at.eq(diesel::dsl::sql::<Text>("CURRENT_TIMESTAMP")),
        ))
        .execute(conn)?;
    Ok(())
}

/// The facts `project` may recall that share words with `text`: its own, then the
/// server-wide ones, each best first by bm25 (a topic weighs twice a body), at most
/// `limit`.
pub fn recall_facts(
    conn: &mut Conn,
    project: ProjectId,
    text: &str,
    limit: i64,
) -> Result<Vec<RecalledItem>, DbError> {
    let count = "SELECT count(*) AS doc FROM (SELECT rowid FROM memory_facts_fts \
                 WHERE memory_facts_fts MATCH ? LIMIT ?)";
    let Some(expression) = expression(conn, count, text)? else {
        return Ok(Vec::new());
    };
    let rows: Vec<RecalledRow> = statement(
        "SELECT f.project_id IS NULL AS shared, 0 AS narrative, f.topic, f.body, f.updated_at AS dated, \
                bm25(memory_facts_fts, 2.0, 1.0) AS score \
         FROM memory_facts_fts JOIN memory_facts AS f ON f.id = memory_facts_fts.rowid \
         WHERE memory_facts_fts MATCH ? AND (f.project_id = ? OR f.project_id IS NULL) \
         ORDER BY shared, score LIMIT ?",
    )
    .bind::<Text, _>(expression.as_str())
    .bind::<Nullable<BigInt>, _>(Some(project.0))
    .bind::<BigInt, _>(limit)
    .load(conn)?;
    Ok(rows
        .into_iter()
        .map(|row| RecalledItem {
            layer: if row.shared {
                MemoryLayer::Server
            } else {
                MemoryLayer::Project
            },
            topic: row.topic,
            body: row.body,
            dated: row.dated,
            score: row.score,
        })
        .collect())
}

/// The history items (replaced facts and runs' narratives) `project` may recall (its own
/// and the server-wide ones) that share words with `text`, best first, at most `limit`.
pub fn recall_history(
    conn: &mut Conn,
    project: ProjectId,
    text: &str,
    limit: i64,
) -> Result<Vec<RecalledItem>, DbError> {
    let count = "SELECT count(*) AS doc FROM (SELECT rowid FROM memory_history_fts \
                 WHERE memory_history_fts MATCH ? LIMIT ?)";
    let Some(expression) = expression(conn, count, text)? else {
        return Ok(Vec::new());
    };
    let rows: Vec<RecalledRow> = statement(
        "SELECT h.project_id IS NULL AS shared, h.reason = 'narrative' AS narrative, h.topic, h.body, h.archived_at AS dated, \
                bm25(memory_history_fts, 2.0, 1.0) AS score \
         FROM memory_history_fts JOIN memory_history AS h ON h.id = memory_history_fts.rowid \
         WHERE memory_history_fts MATCH ? AND (h.project_id = ? OR h.project_id IS NULL) \
         ORDER BY score LIMIT ?",
    )
    .bind::<Text, _>(expression.as_str())
    .bind::<Nullable<BigInt>, _>(Some(project.0))
    .bind::<BigInt, _>(limit)
    .load(conn)?;
    Ok(rows
        .into_iter()
        .map(|row| RecalledItem {
            layer: if row.narrative {
                MemoryLayer::Narrative
            } else {
                MemoryLayer::History
            },
            topic: row.topic,
            body: row.body,
            dated: row.dated,
            score: row.score,
        })
        .collect())
}

#[cfg(test)]
mod tests;
