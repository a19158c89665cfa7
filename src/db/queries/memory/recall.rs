//! Recall: the facts and the history's items (replaced facts, runs' narratives) that share
//! words with a text (the words of `words.rs`, CJK text as pairs of characters), through each backend's full-text index ([`FullText`]: the only SQL of
//! memory written per backend):
//! SQLite's FTS5 tables `memory_*_fts` ranked by bm25, PostgreSQL's `search` tsvector
//! columns ranked by ts_rank weighted by each word's rarity as bm25 weighs it, so on both a
//! topic outweighs a body and a rare word a common one. How many items hold a word, which
//! picks the words searched for and weighs them, FTS5 counts through its index; on
//! PostgreSQL triggers keep the counts (`memory_word_counts`, `memory_item_counts`), as
//! counting through the GIN index takes milliseconds per common word at 100k items.

use diesel::prelude::*;
use diesel::sql_types::{BigInt, Bool, Double, Nullable, Text};

use crate::db::ids::ProjectId;
use crate::db::models::memory::{MemoryLayer, RecalledItem};
use crate::db::statement::statement;
use crate::db::{Conn, DbError};

use super::words::query_words;

/// Most items of one index a recall scores: its rarest words are searched for as long as
/// the items holding them stay within this.
pub(super) const MAX_POSTINGS: i64 = 2_000;

/// One full-text index, the facts' or the history's, as each backend holds it: SQLite an
/// FTS5 table, PostgreSQL a `search` tsvector column. Each recall statement reads the
/// columns of [`RecalledRow`] of the items `project` may recall (`f.project_id = ? OR
/// f.project_id IS NULL`), ordered by `shared` (facts) or not, then `score`, at most `?`.
struct FullText {
    /// FTS5: the items holding the quoted word `?` as `doc`, at most `?` of them.
    fts5_count: &'static str,
    /// FTS5: binds the FTS5 query `?`, then the project and the limit; scored by bm25.
    fts5_recall: &'static str,
    /// tsvector: binds bare words (space-separated): each `word` and the items holding it
    /// as `doc` (0 when no item holds it, or when the parser splits it into several
    /// lexemes), in one statement: a key lookup per word, whatever the table's statistics.
    tsvector_count: &'static str,
    /// tsvector: binds the searched words and the number of items holding each (both
    /// space-separated), the tsquery `?` matching any of them, then the project and the
    /// limit; scored as bm25 scores, lower is better: the sum over the words of their
    /// inverse document frequency (bm25's) times their ts_rank in the item. Each word's
    /// tsquery and weight are computed once (`w`), not for each item.
    tsvector_recall: &'static str,
}

const FACTS: FullText = FullText {
    fts5_count: "SELECT count(*) AS doc FROM (SELECT rowid FROM memory_facts_fts \
                 WHERE memory_facts_fts MATCH ? LIMIT ?)",
    fts5_recall: "SELECT f.project_id IS NULL AS shared, FALSE AS narrative, f.topic, f.body, \
                         f.updated_at AS dated, \
                         bm25(memory_facts_fts, 2.0, 1.0) AS score \
                  FROM memory_facts_fts JOIN memory_facts AS f ON f.id = memory_facts_fts.rowid \
                  WHERE memory_facts_fts MATCH ? AND (f.project_id = ? OR f.project_id IS NULL) \
                  ORDER BY shared, score LIMIT ?",
    tsvector_count: "SELECT w.word, COALESCE((SELECT c.items FROM memory_word_counts AS c \
                            WHERE c.source = 'memory_facts' AND c.word = array_to_string(\
                                  tsvector_to_array(to_tsvector('simple', w.word)), ' ')), 0) AS doc \
                     FROM unnest(string_to_array(?, ' ')) AS w(word)",
    tsvector_recall: "WITH w AS MATERIALIZED (SELECT to_tsquery('simple', word) AS query, \
                             greatest(ln((t.items - u.items + 0.5) / (u.items + 0.5)), 1e-6) AS idf \
                             FROM memory_item_counts AS t, \
                                  unnest(string_to_array(?, ' '), \
                                         string_to_array(?, ' ')::float8[]) AS u(word, items) \
                             WHERE t.source = 'memory_facts') \
                      SELECT f.project_id IS NULL AS shared, FALSE AS narrative, f.topic, f.body, \
                             f.updated_at AS dated, \
                             -(SELECT sum(w.idf * ts_rank('{0, 0, 0.5, 1}', f.search, w.query, 1)) \
                               FROM w)::float8 AS score \
                      FROM memory_facts AS f \
                      WHERE f.search @@ to_tsquery('simple', ?) \
                        AND (f.project_id = ? OR f.project_id IS NULL) \
                      ORDER BY shared, score LIMIT ?",
};

const HISTORY: FullText = FullText {
    fts5_count: "SELECT count(*) AS doc FROM (SELECT rowid FROM memory_history_fts \
                 WHERE memory_history_fts MATCH ? LIMIT ?)",
    fts5_recall: "SELECT f.project_id IS NULL AS shared, f.reason = 'narrative' AS narrative, \
                         f.topic, f.body, f.archived_at AS dated, \
                         bm25(memory_history_fts, 2.0, 1.0) AS score \
                  FROM memory_history_fts JOIN memory_history AS f ON f.id = memory_history_fts.rowid \
                  WHERE memory_history_fts MATCH ? AND (f.project_id = ? OR f.project_id IS NULL) \
                  ORDER BY score LIMIT ?",
    tsvector_count: "SELECT w.word, COALESCE((SELECT c.items FROM memory_word_counts AS c \
                            WHERE c.source = 'memory_history' AND c.word = array_to_string(\
                                  tsvector_to_array(to_tsvector('simple', w.word)), ' ')), 0) AS doc \
                     FROM unnest(string_to_array(?, ' ')) AS w(word)",
    tsvector_recall: "WITH w AS MATERIALIZED (SELECT to_tsquery('simple', word) AS query, \
                             greatest(ln((t.items - u.items + 0.5) / (u.items + 0.5)), 1e-6) AS idf \
                             FROM memory_item_counts AS t, \
                                  unnest(string_to_array(?, ' '), \
                                         string_to_array(?, ' ')::float8[]) AS u(word, items) \
                             WHERE t.source = 'memory_history') \
                      SELECT f.project_id IS NULL AS shared, f.reason = 'narrative' AS narrative, \
                             f.topic, f.body, f.archived_at AS dated, \
                             -(SELECT sum(w.idf * ts_rank('{0, 0, 0.5, 1}', f.search, w.query, 1)) \
                               FROM w)::float8 AS score \
                      FROM memory_history AS f \
                      WHERE f.search @@ to_tsquery('simple', ?) \
                        AND (f.project_id = ? OR f.project_id IS NULL) \
                      ORDER BY score LIMIT ?",
};

#[derive(QueryableByName)]
struct WordCount {
    #[diesel(sql_type = BigInt)]
    doc: i64,
}

#[derive(QueryableByName)]
struct CountedWord {
    #[diesel(sql_type = Text)]
    word: String,
    #[diesel(sql_type = BigInt)]
    doc: i64,
}

/// A word a recall searches for, and how many items of the index hold it.
struct SearchedWord {
    word: String,
    items: i64,
}

/// The words of `text` a recall searches for in `index`: the rarest first, as long as the
/// items they are in number at most [`MAX_POSTINGS`] (scoring more would make recall slow,
/// and words that common tell little); none when no word qualifies. On SQLite a count stops
/// past the bound, so a common word costs no more than a rare one.
fn searched_words(
    conn: &mut Conn,
    index: &FullText,
    text: &str,
) -> Result<Vec<SearchedWord>, DbError> {
    let words = query_words(text);
    let mut counted = Vec::new();
    match conn {
        Conn::Sqlite(_) => {
            for word in words {
                let rows: Vec<WordCount> = statement(index.fts5_count)
                    .bind::<Text, _>(fts5_phrase(&word))
                    .bind::<BigInt, _>(MAX_POSTINGS + 1)
                    .load(conn)?;
                if let Some(found) = rows.first() {
                    counted.push(SearchedWord {
                        word,
                        items: found.doc,
                    });
                }
            }
        }
        Conn::Postgres(_) => {
            let rows: Vec<CountedWord> = statement(index.tsvector_count)
                .bind::<Text, _>(words.join(" "))
                .load(conn)?;
            counted.extend(rows.into_iter().map(|row| SearchedWord {
                word: row.word,
                items: row.doc,
            }));
        }
    }
    counted.retain(|searched| searched.items > 0);
    counted.sort_by(|a, b| (a.items, &a.word).cmp(&(b.items, &b.word)));
    let mut postings = 0;
    Ok(counted
        .into_iter()
        .take_while(|searched| {
            postings += searched.items;
            postings <= MAX_POSTINGS
        })
        .collect())
}

/// `word` as an FTS5 phrase (query words are alphanumeric: nothing inside needs escaping).
fn fts5_phrase(word: &str) -> String {
    format!("\"{word}\"")
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

/// The items of `index` that `project` may recall and that share words with `text`, in
/// the index's recall order, at most `limit`.
fn recall(
    conn: &mut Conn,
    index: &FullText,
    project: ProjectId,
    text: &str,
    limit: i64,
) -> Result<Vec<RecalledRow>, DbError> {
    let words = searched_words(conn, index, text)?;
    if words.is_empty() {
        return Ok(Vec::new());
    }
    let join = |separator: &str, each: &dyn Fn(&SearchedWord) -> String| {
        words.iter().map(each).collect::<Vec<_>>().join(separator)
    };
    let query = match conn {
        Conn::Sqlite(_) => statement(index.fts5_recall)
            .bind::<Text, _>(join(" OR ", &|searched| fts5_phrase(&searched.word))),
        Conn::Postgres(_) => statement(index.tsvector_recall)
            .bind::<Text, _>(join(" ", &|searched| searched.word.clone()))
            .bind::<Text, _>(join(" ", &|searched| searched.items.to_string()))
            .bind::<Text, _>(join(" | ", &|searched| searched.word.clone())),
    };
    Ok(query
        .bind::<Nullable<BigInt>, _>(Some(project.0))
        .bind::<BigInt, _>(limit)
        .load(conn)?)
}

/// The facts `project` may recall that share words with `text`: its own, then the
/// server-wide ones, each best first (a topic weighs twice a body), at most `limit`.
pub(crate) fn recall_facts(
    conn: &mut Conn,
    project: ProjectId,
    text: &str,
    limit: i64,
) -> Result<Vec<RecalledItem>, DbError> {
    Ok(recall(conn, &FACTS, project, text, limit)?
        .into_iter()
        .map(|row| {
            let layer = if row.shared {
                MemoryLayer::Server
            } else {
                MemoryLayer::Project
            };
            row.into_item(layer)
        })
        .collect())
}

/// The history items (replaced facts and runs' narratives) `project` may recall (its own
/// and the server-wide ones) that share words with `text`, best first, at most `limit`.
pub(crate) fn recall_history(
    conn: &mut Conn,
    project: ProjectId,
    text: &str,
    limit: i64,
) -> Result<Vec<RecalledItem>, DbError> {
    Ok(recall(conn, &HISTORY, project, text, limit)?
        .into_iter()
        .map(|row| {
            let layer = if row.narrative {
                MemoryLayer::Narrative
            } else {
                MemoryLayer::History
            };
            row.into_item(layer)
        })
        .collect())
}

impl RecalledRow {
    fn into_item(self, layer: MemoryLayer) -> RecalledItem {
        RecalledItem {
            layer,
            topic: self.topic,
            body: self.body,
            dated: self.dated,
            score: self.score,
        }
    }
}
