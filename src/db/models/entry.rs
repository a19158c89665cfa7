//! Rows and forms for the store (`known_entries`), its views, and the per-turn context.

use diesel::prelude::*;

use crate::db::enums::{Category, EntryStatus, Fidelity};
use crate::db::ids::{EntryId, LoopId, RunId};
use crate::db::json::Attributes;
use crate::db::schema::{known_entries, turn_context, v_run_log};

mod named;

/// One entry of the store (read by name as [`named`] says).
#[derive(Debug, Clone, PartialEq, Queryable, Selectable)]
#[diesel(table_name = known_entries, check_for_backend(diesel::sqlite::Sqlite, diesel::pg::Pg))]
pub struct EntryRow {
    /// Row id: creation order.
    pub id: EntryId,
    pub run_id: RunId,
    /// The loop that last wrote it.
    pub loop_id: Option<LoopId>,
    /// The turn of the last touch.
    pub turn: i32,
    /// Normalised identity within the run.
    pub path: String,
    pub body: String,
    /// The scheme, `None` for bare paths (files).
    pub scheme: Option<String>,
    /// How the write went, or where its proposal stands.
    pub status: EntryStatus,
    /// How much of the entry the model sees.
    pub fidelity: Fidelity,
    /// SHA-256 of file content.
    pub hash: Option<String>,
    /// Handler workspace.
    #[diesel(
        select_expression = (known_entries::id, known_entries::attributes),
        select_expression_type = (known_entries::id, known_entries::attributes)
    )]
    pub attributes: Attributes,
    /// Display token count at the current fidelity.
    pub tokens: i32,
    /// Token count of the raw body.
    pub tokens_full: i32,
    /// Unused reference counter, kept for the reference schema.
    pub refs: i32,
    pub write_count: i32,
    /// `YYYY-MM-DD HH:MM:SS` UTC.
    pub created_at: String,
    /// `YYYY-MM-DD HH:MM:SS` UTC.
    pub updated_at: String,
}

/// A write to the store (insert, or update of the entry at `(run_id, path)`).
///
/// Semantics on an existing entry: body, status, loop and turn are replaced; `fidelity`
/// `None` keeps the stored fidelity (`full` for a new entry); `hash` `None` keeps the
/// stored hash; `attributes` `None` keeps the stored attributes, and an object is merged
/// into them as a JSON merge patch (a key set to `null` is removed).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct EntryUpsertForm {
    pub run_id: RunId,
    pub loop_id: Option<LoopId>,
    pub turn: i32,
    /// Entry path; normalised before writing.
    pub path: String,
    pub body: String,
    pub status: EntryStatus,
    /// Visibility; `None` keeps the stored one.
    pub fidelity: Option<Fidelity>,
    /// File hash; `None` keeps the stored one.
    pub hash: Option<String>,
    /// Merge patch for the attributes; `None` keeps them.
    pub attributes: Option<serde_json::Value>,
}

impl EntryUpsertForm {
    /// A plain write: [`EntryStatus::Ok`], stored fidelity, hash and attributes kept.
    pub(crate) fn new(
        run_id: RunId,
        loop_id: Option<LoopId>,
        turn: i32,
        path: impl Into<String>,
        body: impl Into<String>,
    ) -> EntryUpsertForm {
        EntryUpsertForm {
            run_id,
            loop_id,
            turn,
            path: path.into(),
            body: body.into(),
            status: EntryStatus::Ok,
            fidelity: None,
            hash: None,
            attributes: None,
        }
    }
}

/// Which entries of a run an operation applies to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Selector {
    /// One entry; the path is normalised first.
    Path(String),
    /// Every entry whose path matches `path` (`hedberg::pattern_match`, both compared in
    /// `paths::pattern_form`, decoded) and, when given, whose body contains a match for
    /// `body` (`pattern_search`).
    Pattern { path: String, body: Option<String> },
}

/// A proposal waiting for the client (`v_unresolved`), read by name as [`named`] says.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct UnresolvedRow {
    pub id: EntryId,
    pub run_id: RunId,
    pub path: String,
    /// The proposed content or command.
    pub body: String,
    pub attributes: Attributes,
    /// The turn that proposed it.
    pub turn: i32,
}

/// A row the model can see (`v_model_context`), in context order, read by name as
/// [`named`] says.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ModelContextRow {
    pub entry_id: EntryId,
    pub run_id: RunId,
    pub path: String,
    /// The scheme, `None` for files.
    pub scheme: Option<String>,
    /// Visible fidelity (never archive).
    pub fidelity: Fidelity,
    /// Never [`EntryStatus::Proposed`].
    pub status: EntryStatus,
    /// The body, empty at index fidelity.
    pub body: String,
    pub attributes: Attributes,
    /// Context section.
    pub category: Category,
    /// The turn of the last touch.
    pub turn: i32,
    /// 1-based position in the context.
    pub ordinal: i64,
    /// countTokens(body).
    pub tokens: i32,
}

/// A row of a run's client-facing history (`v_run_log`).
#[derive(Debug, Clone, PartialEq, QueryableByName)]
#[diesel(table_name = v_run_log, check_for_backend(diesel::sqlite::Sqlite, diesel::pg::Pg))]
pub(crate) struct RunLogRow {
    pub id: EntryId,
    pub run_id: RunId,
    pub path: String,
    pub body: String,
    pub status: EntryStatus,
    /// The entry's scheme.
    pub tool: String,
    /// The first of attributes.command/file/path/question, else "".
    pub target: String,
}

/// One row of what the model saw on a turn, as the snapshot's reader rebuilds it.
#[derive(Debug, Clone, PartialEq, Queryable, Selectable)]
#[diesel(table_name = turn_context, check_for_backend(diesel::sqlite::Sqlite, diesel::pg::Pg))]
pub(crate) struct SnapshotRow {
    /// The store entry it came from (`None` in snapshots written whole, before differences).
    pub entry_id: Option<EntryId>,
    /// Position in the context, 1-based (recomputed by the reader; as stored, the position
    /// the row had on the turn that wrote it).
    pub ordinal: i32,
    pub path: String,
    /// The scheme, `None` for files.
    pub scheme: Option<String>,
    pub status: EntryStatus,
    pub fidelity: Fidelity,
    /// The projected text.
    pub body: String,
    /// countTokens(projected text).
    pub tokens: i32,
    /// Attributes as JSON object text.
    pub attributes: String,
    /// Context section.
    pub category: Category,
    /// The turn the entry was last touched on.
    pub source_turn: i32,
}

impl SnapshotRow {
    /// Whether the model saw the same row in both (their positions aside).
    pub(crate) fn unchanged(&self, other: &SnapshotRow) -> bool {
        self.entry_id == other.entry_id
            && self.path == other.path
            && self.status == other.status
            && self.fidelity == other.fidelity
            && self.tokens == other.tokens
            && self.category == other.category
            && self.source_turn == other.source_turn
            && self.body == other.body
            && self.attributes == other.attributes
    }
}

/// Insert form for a `turn_context` row: one projected row of a turn's difference.
#[derive(Debug, Clone, PartialEq, Insertable)]
#[diesel(table_name = turn_context)]
pub struct TurnContextInsertForm {
    pub run_id: RunId,
    pub loop_id: Option<LoopId>,
    pub turn: i32,
    /// Position in the context.
    pub ordinal: i32,
    pub path: String,
    pub status: EntryStatus,
    /// Visible fidelity (not archive).
    pub fidelity: Fidelity,
    /// The projected text.
    pub body: String,
    /// countTokens(projected text).
    pub tokens: i32,
    /// Attributes as JSON object text.
    pub attributes: String,
    /// Context section.
    pub category: Category,
    /// The turn the entry was last touched on.
    pub source_turn: i32,
    /// `set` (new or changed since the run's previous snapshot) or `removed` (left the
    /// context); `whole` only in snapshots written before differences.
    pub change: String,
    /// The store entry it comes from.
    pub entry_id: Option<EntryId>,
}
