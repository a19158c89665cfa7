//! Memory across runs: durable facts (a project's, or the server-wide layer's), the
//! history of the facts they replaced, and what one recall found.

use diesel::prelude::*;

use crate::db::ids::{MemoryFactId, MemoryHistoryId, ProjectId, RunId};
use crate::db::schema::{memory_facts, memory_history};

/// A durable fact.
#[derive(Debug, Clone, PartialEq, Queryable, Selectable)]
#[diesel(table_name = memory_facts, check_for_backend(diesel::sqlite::Sqlite, diesel::pg::Pg))]
pub(crate) struct MemoryFactRow {
    pub id: MemoryFactId,
    /// Its project; `None` in the server-wide layer.
    pub project_id: Option<ProjectId>,
    /// What it is about, normalised (trimmed, lower case, single spaces): unique per layer.
    pub topic: String,
    pub body: String,
    /// The run that learned it.
    pub run_id: Option<RunId>,
    /// Who wrote it through a method.
    pub person: Option<String>,
    /// `YYYY-MM-DD HH:MM:SS` UTC.
    pub created_at: String,
    /// When its body was last written.
    pub updated_at: String,
    /// A person set it: it stays until a person changes it.
    pub by_person: bool,
    /// It holds only while the work at hand lasts: pruned once its project started
    /// `RUMMY_MEMORY_TRANSIENT_RUNS` runs after the one that last wrote it
    /// (`queries::memory::prune_transient`). Never a person's.
    pub transient: bool,
}

/// A fact that a newer one replaced.
#[derive(Debug, Clone, PartialEq, Queryable, Selectable)]
#[diesel(table_name = memory_history, check_for_backend(diesel::sqlite::Sqlite, diesel::pg::Pg))]
pub(crate) struct MemoryHistoryRow {
    pub id: MemoryHistoryId,
    pub project_id: Option<ProjectId>,
    pub topic: String,
    pub body: String,
    /// Why it is in the history (`replaced`, or `narrative`: a run's session narrative).
    pub reason: String,
    pub run_id: Option<RunId>,
    /// When it was written.
    pub written_at: String,
    /// When it was replaced.
    pub archived_at: String,
    /// How many older items of its topic were folded into it (their text dropped) to keep
    /// the history within its bounds (`queries::memory::fold_history`).
    pub folded: i32,
}

/// A fact to write: it replaces the fact of the same topic in its layer.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct MemoryFactForm {
    /// Its project; `None` for the server-wide layer.
    pub project_id: Option<ProjectId>,
    /// What it is about (normalised on write).
    pub topic: String,
    pub body: String,
    pub run_id: Option<RunId>,
    pub person: Option<String>,
    /// A person writes it (a client's method), not a model or a loop's consolidation.
    pub by_person: bool,
    /// The model marks it as holding only while the work at hand lasts (ignored for a
    /// person's).
    pub transient: bool,
}

/// The layer a recalled item comes from, in the order recall prefers them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum MemoryLayer {
    /// The project's facts.
    Project,
    /// The facts every project shares.
    Server,
    /// Facts newer ones replaced.
    History,
    /// Earlier runs' session narratives (in the history).
    Narrative,
}

/// One item a recall found, best first within its layer.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RecalledItem {
    pub layer: MemoryLayer,
    pub topic: String,
    pub body: String,
    /// When it was written (history: when it was replaced).
    pub dated: String,
    /// The full-text rank: bm25 on SQLite, its likeness on PostgreSQL (lower is better).
    pub score: f64,
}
