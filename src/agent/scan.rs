//! At the start of a loop the project's files become bare-path entries: the project's actor
//! scans the tree, then new and changed files are written (SHA-256 change detection), a
//! changed file's outline dropped (`agent::outlines` makes a new one when needed), deleted
//! and newly ignored ones removed. What the scan loads at full fidelity passes the
//! run's write gate ([`RunBudget`]), as a model command's writes do. A changed file the model had in view (full or
//! summary fidelity) is marked with the turn it changed for ([`CHANGED_ON_DISK`]), so that
//! turn's `<progress>` says so, once.

use std::path::Path;

use serde_json::json;

use crate::agent::error::LoopError;
use crate::agent::run_budget::RunBudget;
use crate::agent::AgentContext;
use crate::budget::{BudgetGuard, WriteIntent};
use crate::config::Settings;
use crate::db::enums::{EntryStatus, Fidelity};
use crate::db::ids::{LoopId, RunId};
use crate::db::models::entry::{EntryUpsertForm, Selector};
use crate::db::models::run::RunRow;
use crate::db::queries::{constraints, context, entries};
use crate::db::{Conn, DbError};
use crate::plugins::bundled::sections::CHANGED_ON_DISK;
use crate::project::{FileChange, FileFidelity, FileKind, ScanOptions, ScanReport};
use crate::project_actor::ScanFiles;
use diesel::Connection;

/// Scans the project root (when it exists on this machine) into the run's store. What the
/// scan loads at full fidelity (files a constraint pins, changed files the model has in
/// view) passes the run's write gate under `budget`; what does not fit is listed at index.
pub(crate) async fn sync_project_files(
    agent: &AgentContext,
    run: &RunRow,
    root: &Path,
    loop_id: LoopId,
    budget: RunBudget,
) -> Result<(), LoopError> {
    let run_id = run.id;
    let project_id = run.project_id;
    let (stored_constraints, previous) = agent
        .db
        .call(move |conn| {
            let stored = constraints::list_constraints(conn, project_id)?;
            let files = entries::file_hashes(conn, run_id)?;
            Ok((stored, files))
        })
        .await?;
    let scanning = ScanFiles {
        constraints: stored_constraints
            .into_iter()
            .map(|row| (row.pattern, row.visibility.as_str().to_string()))
            .collect(),
        previous: previous.into_iter().collect(),
        options: scan_options(&agent.settings),
    };
    let report = agent
        .projects
        .scan(project_id, root.to_path_buf(), scanning)
        .await
        .map_err(|_| LoopError::Stopping("the project actor"))??;
    let Some(report) = report else {
        return Ok(());
    };
    for warning in &report.warnings {
        tracing::warn!(run.id = %run_id, warning, "project scan");
    }
    let turn = run.next_turn;
    agent
        .db
        .call(move |conn| write_scan(conn, run_id, Some(loop_id), turn, report, &budget))
        .await?;
    Ok(())
}

/// How the settings bound a scan: the largest file read.
pub(crate) fn scan_options(settings: &Settings) -> ScanOptions {
    ScanOptions {
        max_file_bytes: settings.scan.max_file_bytes,
        ..ScanOptions::default()
    }
}

/// Writes a scan's report into the run's store at `turn`: gone and newly ignored files
/// removed, new and changed ones written (new ones at index fidelity unless pinned), what
/// loads at full fidelity under the run's write gate (`budget`). `loop_id` is the loop that
/// scanned, `None` for a file a client gave.
pub(crate) fn write_scan(
    conn: &mut Conn,
    run_id: RunId,
    loop_id: Option<LoopId>,
    turn: i32,
    report: ScanReport,
    budget: &RunBudget,
) -> Result<(), DbError> {
    for gone in report.deleted.iter().chain(report.ignored.iter()) {
        entries::delete_entries(conn, run_id, &Selector::Path(gone.clone()))?;
    }
    let mut guard = budget.guard(conn)?;
    for file in report.files {
        let path = file.path.as_str().to_string();
        let pinned = file.fidelity() == FileFidelity::Full;
        if file.change == FileChange::Unchanged {
            if pinned {
                // A promotion that does not fit leaves the file listed at index.
                admitted(conn, run_id, guard.as_mut(), |conn| {
                    entries::promote_if_index(conn, run_id, &path, turn)
                })?;
            }
            continue;
        }
        let kind = match file.kind {
            FileKind::Text => "text",
            FileKind::Binary => "binary",
            FileKind::TooLarge => "too_large",
        };
        // `symbols: null` removes the outline of the content this one replaces.
        let mut attributes = json!({"size": file.size, "kind": kind, "symbols": null});
        if !file.is_editable() {
            attributes["readonly"] = json!(true);
        }
        let in_view = match file.change {
            FileChange::Changed => entries::get_entry(conn, run_id, &path)?
                .is_some_and(|entry| matches!(entry.fidelity, Fidelity::Full | Fidelity::Summary)),
            _ => false,
        };
        if in_view {
            attributes[CHANGED_ON_DISK] = json!(turn);
        }
        let form = EntryUpsertForm {
            run_id,
            loop_id,
            turn,
            path,
            body: file.body.unwrap_or_default(),
            status: EntryStatus::Ok,
            fidelity: match (file.change, pinned) {
                (_, true) => Some(Fidelity::Full),
                (FileChange::New, false) => Some(Fidelity::Index),
                _ => None,
            },
            hash: Some(file.hash),
            attributes: Some(attributes),
        };
        if !pinned && !in_view {
            entries::write_entry(conn, &form)?;
            continue;
        }
        let fits = admitted(conn, run_id, guard.as_mut(), |conn| {
            entries::write_entry(conn, &form).map(drop)
        })?;
        if !fits {
            // The new content does not fit the window: listed, not loaded.
            entries::write_entry(
                conn,
                &EntryUpsertForm {
                    fidelity: Some(Fidelity::Index),
                    ..form
                },
            )?;
        }
    }
    Ok(())
}

/// Why a gated scan write did not commit.
enum Refusal {
    Db(DbError),
    /// The run's write gate refused the write's growth.
    Gate,
}

impl From<diesel::result::Error> for Refusal {
    fn from(error: diesel::result::Error) -> Self {
        Refusal::Db(error.into())
    }
}

/// Runs `write` in a savepoint and keeps it when `guard` admits its growth of what the
/// model sees (always without a guard); `false` when it was refused and rolled back.
fn admitted(
    conn: &mut Conn,
    run_id: RunId,
    guard: Option<&mut BudgetGuard>,
    write: impl FnOnce(&mut Conn) -> Result<(), DbError>,
) -> Result<bool, DbError> {
    let Some(guard) = guard else {
        write(conn)?;
        return Ok(true);
    };
    let outcome = conn.transaction::<_, Refusal, _>(|conn| {
        let before = context::visible_tokens(conn, run_id).map_err(Refusal::Db)?;
        write(conn).map_err(Refusal::Db)?;
        let after = context::visible_tokens(conn, run_id).map_err(Refusal::Db)?;
        guard
            .check_alone(&WriteIntent {
                tokens_delta: after - before,
                status: EntryStatus::Ok,
                fidelity: Fidelity::Full,
                is_audit: false,
            })
            .map_err(|_| Refusal::Gate)
    });
    match outcome {
        Ok(()) => Ok(true),
        Err(Refusal::Gate) => Ok(false),
        Err(Refusal::Db(error)) => Err(error),
    }
}
