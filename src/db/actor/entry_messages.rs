//! Messages for the store, its views and the per-turn context.

use crate::db::enums::Fidelity;
use crate::db::ids::{LoopId, RunId};
use crate::db::models::entry::{
    EntryRow, EntryUpsert, ModelContextRow, RunLogRow, Selector, TurnContextInsertForm,
    TurnContextRow, UnresolvedRow,
};
use crate::db::queries::entry_moves::{self, EntryTransfer};
use crate::db::queries::{context, demotions, entries};

db_messages! {
    /// Writes an entry with merge semantics (see `EntryUpsert`).
    UpsertEntry { entry: EntryUpsert } -> EntryRow =
        |conn, message| entries::upsert_entry(conn, &message.entry);
    /// The entry at a path (normalised).
    GetEntry { run_id: RunId, path: String } -> Option<EntryRow> =
        |conn, message| entries::get_entry(conn, message.run_id, &message.path);
    /// `path` (normalised) if unused in the run, else the first free `path_N`.
    FreePath { run_id: RunId, path: String } -> String =
        |conn, message| entries::free_path(conn, message.run_id, &message.path);
    /// Selected entries by path, paged (`getEntries`).
    ListEntries { run_id: RunId, selector: Selector, limit: Option<i64>, offset: Option<i64> } -> Vec<EntryRow> =
        |conn, message| entries::list_entries(conn, message.run_id, &message.selector, message.limit, message.offset);
    /// Sets the fidelity of selected entries; returns their paths.
    SetFidelity { run_id: RunId, selector: Selector, fidelity: Fidelity } -> Vec<String> =
        |conn, message| entries::set_fidelity(conn, message.run_id, &message.selector, message.fidelity);
    /// Promotes selected entries to full at `turn` (`get`); returns their paths.
    Promote { run_id: RunId, selector: Selector, turn: i32 } -> Vec<String> =
        |conn, message| entries::promote(conn, message.run_id, &message.selector, message.turn);
    /// Archives selected entries (`store`); returns their paths.
    Demote { run_id: RunId, selector: Selector } -> Vec<String> =
        |conn, message| entries::demote(conn, message.run_id, &message.selector);
    /// Deletes selected entries; returns their paths.
    DeleteEntries { run_id: RunId, selector: Selector } -> Vec<String> =
        |conn, message| entries::delete_entries(conn, message.run_id, &message.selector);
    /// Sets an entry's status and optionally its body (a proposal's resolution).
    ResolveEntry { run_id: RunId, path: String, status: i32, body: Option<String> } -> EntryRow =
        |conn, message| entries::resolve_entry(conn, message.run_id, &message.path, message.status, message.body.as_deref());
    /// Merges a JSON merge patch into an entry's attributes.
    UpdateAttributes { run_id: RunId, path: String, patch: serde_json::Value } -> EntryRow =
        |conn, message| entries::update_attributes(conn, message.run_id, &message.path, &message.patch);
    /// Copies an entry within its run.
    CopyEntry { transfer: EntryTransfer } -> EntryRow =
        |conn, message| entry_moves::copy_entry(conn, &message.transfer);
    /// Moves an entry within its run.
    MoveEntry { transfer: EntryTransfer } -> EntryRow =
        |conn, message| entry_moves::move_entry(conn, &message.transfer);
    /// The run's pending proposals.
    ListUnresolved { run_id: RunId } -> Vec<UnresolvedRow> =
        |conn, message| entries::unresolved(conn, message.run_id);
    /// The run's client-facing history (`run/state`).
    GetRunLog { run_id: RunId } -> Vec<RunLogRow> =
        |conn, message| entries::run_log(conn, message.run_id);
    /// The run's non-audit scheme entries (`getRun` history).
    GetRunHistory { run_id: RunId } -> Vec<EntryRow> =
        |conn, message| entries::run_history(conn, message.run_id);
    /// The run's entries of one scheme, oldest first.
    EntriesOfScheme { run_id: RunId, scheme: String } -> Vec<EntryRow> =
        |conn, message| entries::entries_of_scheme(conn, message.run_id, &message.scheme);
    /// The run's newest entry of one scheme.
    LatestEntryOfScheme { run_id: RunId, scheme: String } -> Option<EntryRow> =
        |conn, message| entries::latest_entry_of_scheme(conn, message.run_id, &message.scheme);

    /// The rows the model can see, in context order.
    GetModelContext { run_id: RunId } -> Vec<ModelContextRow> =
        |conn, message| context::model_context(conn, message.run_id);
    /// Snapshots `v_model_context` (unprojected) as the context of a turn.
    MaterializeTurnContext { run_id: RunId, loop_id: Option<LoopId>, turn: i32 } -> usize =
        |conn, message| context::materialize_turn_context(conn, message.run_id, message.loop_id, message.turn);
    /// Stores the projected context of a turn, replacing any earlier snapshot.
    ReplaceTurnContext { run_id: RunId, turn: i32, rows: Vec<TurnContextInsertForm> } -> usize =
        |conn, message| context::replace_turn_context(conn, message.run_id, message.turn, &message.rows);
    /// The stored context of a turn.
    GetTurnContext { run_id: RunId, turn: i32 } -> Vec<TurnContextRow> =
        |conn, message| context::turn_context(conn, message.run_id, message.turn);
}

db_messages! {
    /// Loop start: the previous loops' full logging entries go to summary.
    DemotePreviousLoopLogging { run_id: RunId, loop_id: LoopId } -> Vec<String> =
        |conn, message| demotions::demote_previous_loop_logging(conn, message.run_id, message.loop_id);
    /// Overflow: full data entries touched on `turn` go to summary with status 413.
    DemoteTurnData { run_id: RunId, turn: i32 } -> Vec<String> =
        |conn, message| demotions::demote_turn_data(conn, message.run_id, message.turn);
    /// Summarised prompts go back to full.
    RestoreSummarizedPrompts { run_id: RunId } -> Vec<String> =
        |conn, message| demotions::restore_summarized_prompts(conn, message.run_id);
}
