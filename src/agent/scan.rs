//! At the start of a loop the project's files become bare-path entries: the project's actor
//! scans the tree, then new and changed files are written (SHA-256 change detection), each
//! with its outline as the `symbols` attribute (or none: a stale one is dropped), deleted
//! and newly ignored ones removed.

use std::path::Path;
use std::time::Duration;

use serde_json::json;

use crate::agent::error::LoopError;
use crate::agent::AgentContext;
use crate::db::enums::{EntryStatus, Fidelity};
use crate::db::ids::LoopId;
use crate::db::models::entry::{EntryUpsertForm, Selector};
use crate::db::models::run::RunRow;
use crate::db::queries::{constraints, entries};
use crate::db::DbError;
use crate::project::outline::OutlineLimits;
use crate::project::{FileChange, FileFidelity, FileKind, ScanOptions, ScanReport};
use crate::project_actor::ScanFiles;

/// Scans the project root (when it exists on this machine) into the run's store.
pub async fn sync_project_files(
    agent: &AgentContext,
    run: &RunRow,
    root: &Path,
    loop_id: LoopId,
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
        options: ScanOptions {
            max_file_bytes: agent.settings.scan.max_file_bytes,
            outline: OutlineLimits {
                max_bytes: agent.settings.scan.outline_max_bytes,
                timeout: Duration::from_millis(agent.settings.scan.outline_timeout_ms),
            },
            ..ScanOptions::default()
        },
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
        .call(move |conn| write_scan(conn, run_id, Some(loop_id), turn, report))
        .await?;
    Ok(())
}

/// Writes a scan's report into the run's store at `turn`: gone and newly ignored files
/// removed, new and changed ones written (new ones at index fidelity unless pinned).
/// `loop_id` is the loop that scanned, `None` for a file a client gave.
pub fn write_scan(
    conn: &mut crate::db::Conn,
    run_id: crate::db::ids::RunId,
    loop_id: Option<LoopId>,
    turn: i32,
    report: ScanReport,
) -> Result<(), DbError> {
    for gone in report.deleted.iter().chain(report.ignored.iter()) {
        entries::delete_entries(conn, run_id, &Selector::Path(gone.clone()))?;
    }
    for file in report.files {
        let pinned = file.fidelity() == FileFidelity::Full;
        if file.change == FileChange::Unchanged {
            if pinned {
                entries::promote_if_index(conn, run_id, file.path.as_str(), turn)?;
            }
            continue;
        }
        let kind = match file.kind {
            FileKind::Text => "text",
            FileKind::Binary => "binary",
            FileKind::TooLarge => "too_large",
        };
        let mut attributes = json!({"size": file.size, "kind": kind, "symbols": file.outline});
        if !file.is_editable() {
            attributes["readonly"] = json!(true);
        }
        entries::write_entry(
            conn,
            &EntryUpsertForm {
                run_id,
                loop_id,
                turn,
                path: file.path.as_str().to_string(),
                body: file.body.unwrap_or_default(),
                status: EntryStatus::Ok,
                fidelity: match (file.change, pinned) {
                    (_, true) => Some(Fidelity::Full),
                    (FileChange::New, false) => Some(Fidelity::Index),
                    _ => None,
                },
                hash: Some(file.hash),
                attributes: Some(attributes),
            },
        )?;
    }
    Ok(())
}
