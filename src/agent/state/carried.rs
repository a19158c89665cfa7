//! The entries `run/state` reports (its history, unknowns, proposals and latest summary),
//! carried from turn to turn with the run's revision they reflect: each read merges the
//! entries written since (the store's triggers stamp every write), and reads the whole run
//! again when nothing is carried, or the run lost entries, or a scheme was registered,
//! since. A carried state is kept only once the unit of work that read it commits.

use std::collections::BTreeMap;
use std::sync::{Mutex, PoisonError};

use serde_json::Value;

use crate::db::enums::EntryStatus;
use crate::db::ids::{EntryId, RunId};
use crate::db::json::Attributes;
use crate::db::models::entry::UnresolvedRow;
use crate::db::queries::entry_revisions::{self, ChangedEntry, EntryChanges, UNLOGGED};
use crate::db::{Conn, DbError};
use crate::hub::notifications::{HistoryEntry, UnknownEntry};

/// The attributes a log row's target is the first of.
const TARGET_KEYS: [&str; 4] = ["command", "file", "path", "question"];

/// A run's reported entries as of a revision of its entries.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct CarriedState {
    run: RunId,
    revision: i64,
    removed: i64,
    schemes: i64,
    rows: BTreeMap<EntryId, ToldRow>,
}

/// One entry `run/state` reports in one of its parts.
#[derive(Debug, Clone, PartialEq)]
struct ToldRow {
    path: String,
    body: String,
    scheme: Option<String>,
    status: EntryStatus,
    /// Whether it is in the run's log, and what the log says it acted on.
    logged: Option<String>,
    attributes: Attributes,
    turn: i32,
}

impl ToldRow {
    /// The entry as reported, `None` when `run/state` reports it nowhere.
    fn of(entry: ChangedEntry) -> Option<ToldRow> {
        let logged = in_log(entry.scheme.as_deref(), entry.status, entry.registered)
            .then(|| target(&entry.attributes));
        let scheme = entry.scheme.as_deref();
        let reported = logged.is_some()
            || entry.status == EntryStatus::Proposed
            || matches!(scheme, Some("unknown" | "summarize"));
        reported.then_some(ToldRow {
            path: entry.path,
            body: entry.body,
            scheme: entry.scheme,
            status: entry.status,
            logged,
            attributes: entry.attributes,
            turn: entry.turn,
        })
    }
}

/// Whether an entry is in the run's log (`v_run_log`): not a pending proposal, of a
/// registered scheme, and not an audit copy.
fn in_log(scheme: Option<&str>, status: EntryStatus, registered: bool) -> bool {
    status != EntryStatus::Proposed
        && registered
        && scheme.is_some_and(|scheme| !UNLOGGED.contains(&scheme))
}

/// What a log row acted on: the first of its attributes command, file, path and question
/// that is there and not null, as text (a string as itself, `true`/`false` as SQLite's
/// `json_extract` gives them, 1 and 0, anything else as its JSON), else "".
pub(crate) fn target(attributes: &Attributes) -> String {
    TARGET_KEYS
        .iter()
        .find_map(|key| match attributes.get(*key)? {
            Value::Null => None,
            Value::String(text) => Some(text.clone()),
            Value::Bool(flag) => Some(if *flag { "1" } else { "0" }.to_owned()),
            other => Some(other.to_string()),
        })
        .unwrap_or_default()
}

impl CarriedState {
    /// Run `run`'s reported entries now, from `carried` (when it is that run's) and what
    /// changed since, or read whole.
    pub(crate) fn read(
        conn: &mut Conn,
        run: RunId,
        carried: Option<CarriedState>,
    ) -> Result<CarriedState, DbError> {
        if let Some(mut carried) = carried.filter(|carried| carried.run == run) {
            let changes = entry_revisions::changed_since(conn, run, carried.revision)?;
            if changes.removed == carried.removed && changes.schemes == carried.schemes {
                carried.merge(changes);
                return Ok(carried);
            }
        }
        let mut read = CarriedState {
            run,
            revision: 0,
            removed: 0,
            schemes: 0,
            rows: BTreeMap::new(),
        };
        read.merge(entry_revisions::all_told(conn, run)?);
        Ok(read)
    }

    /// Takes in `changes`: an entry reported nowhere now leaves, any other is replaced or
    /// inserted in id order.
    fn merge(&mut self, changes: EntryChanges) {
        self.revision = changes.revision;
        self.removed = changes.removed;
        self.schemes = changes.schemes;
        for entry in changes.entries {
            let id = entry.id;
            match ToldRow::of(entry) {
                Some(row) => {
                    self.rows.insert(id, row);
                }
                None => {
                    self.rows.remove(&id);
                }
            }
        }
    }

    /// The run's log, oldest first.
    pub(crate) fn history(&self) -> Vec<HistoryEntry> {
        self.rows
            .values()
            .filter_map(|row| {
                let target = row.logged.as_ref()?;
                Some(HistoryEntry {
                    tool: row.scheme.clone().unwrap_or_default(),
                    target: target.clone(),
                    status: row.status,
                    path: row.path.clone(),
                    body: row.body.clone(),
                })
            })
            .collect()
    }

    /// The run's `unknown` entries, oldest first.
    pub(crate) fn unknowns(&self) -> Vec<UnknownEntry> {
        self.of_scheme("unknown")
            .map(|row| UnknownEntry {
                path: row.path.clone(),
                body: row.body.clone(),
            })
            .collect()
    }

    /// The body of the run's latest `summarize` entry that went well.
    pub(crate) fn latest_summary(&self) -> Option<String> {
        self.of_scheme("summarize")
            .filter(|row| row.status == EntryStatus::Ok)
            .last()
            .map(|row| row.body.clone())
    }

    /// The run's pending proposals, oldest first.
    pub(crate) fn unresolved(&self) -> Vec<UnresolvedRow> {
        self.rows
            .iter()
            .filter(|(_, row)| row.status == EntryStatus::Proposed)
            .map(|(id, row)| UnresolvedRow {
                id: *id,
                run_id: self.run,
                path: row.path.clone(),
                body: row.body.clone(),
                attributes: row.attributes.clone(),
                turn: row.turn,
            })
            .collect()
    }

    fn of_scheme<'a>(&'a self, scheme: &'a str) -> impl Iterator<Item = &'a ToldRow> + 'a {
        self.rows
            .values()
            .filter(move |row| row.scheme.as_deref() == Some(scheme))
    }
}

/// Where a loop keeps its run's carried state between its turns (one turn of a run runs at
/// a time): taken by a turn's unit of work, kept again once that unit committed.
#[derive(Default)]
pub(crate) struct CarriedSlot(Mutex<Option<CarriedState>>);

impl CarriedSlot {
    /// The carried state, leaving none (a turn that fails leaves the next to read whole).
    pub(crate) fn take(&self) -> Option<CarriedState> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).take()
    }

    /// Keeps `state` for the next turn.
    pub(crate) fn keep(&self, state: Option<CarriedState>) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = state;
    }
}

#[cfg(test)]
mod tests;
