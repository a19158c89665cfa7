//! At the start of a loop the project's files become bare-path entries: new and changed
//! files are written (SHA-256 change detection), deleted and newly ignored ones removed.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use serde_json::json;

use crate::agent::run_loop::LoopError;
use crate::app::{blocking, AppState};
use crate::db::enums::Fidelity;
use crate::db::ids::LoopId;
use crate::db::models::entry::{EntryUpsert, Selector};
use crate::db::models::run::RunRow;
use crate::db::queries::{constraints, entries, projects};
use crate::db::DbError;
use crate::project::{
    scan, ConstraintPattern, ConstraintSet, FileChange, FileConstraint, FileFidelity, FileKind,
    ProjectRoot, ScanOptions, ScanReport, Visibility,
};

/// The root of the run's project, as `init` gave it.
pub async fn project_root(app: &AppState, run: &RunRow) -> Result<PathBuf, LoopError> {
    let project_id = run.project_id;
    let project = app
        .db_call(move |conn| projects::get_project(conn, project_id))
        .await?
        .ok_or_else(|| DbError::NotFound(format!("project {project_id}")))?;
    Ok(project.project_root.map(PathBuf::from).unwrap_or_default())
}

/// Scans the project root (when it exists on this machine) into the run's store.
pub async fn sync_project_files(
    app: &AppState,
    run: &RunRow,
    root: &Path,
    loop_id: LoopId,
) -> Result<(), LoopError> {
    let run_id = run.id;
    let project_id = run.project_id;
    let root = root.to_path_buf();
    let is_dir = {
        let root = root.clone();
        blocking(move || Ok(root.is_dir())).await?
    };
    if !is_dir {
        return Ok(());
    }
    let (stored_constraints, previous) = app
        .db_call(move |conn| {
            let stored = constraints::list_constraints(conn, project_id)?;
            let files = entries::file_hashes(conn, run_id)?;
            Ok((stored, files))
        })
        .await?;
    let max_file_bytes = app.settings.scan.max_file_bytes;
    let rules: Vec<(String, String)> = stored_constraints
        .into_iter()
        .map(|row| (row.pattern, row.visibility.as_str().to_string()))
        .collect();
    let report = blocking(move || {
        let root = ProjectRoot::new(&root)?;
        let constraints = ConstraintSet::new(rules.iter().filter_map(|(pattern, visibility)| {
            Some(FileConstraint {
                pattern: ConstraintPattern::normalize(&root, pattern).ok()?,
                visibility: visibility.parse::<Visibility>().ok()?,
            })
        }))?;
        let options = ScanOptions {
            max_file_bytes,
            ..ScanOptions::default()
        };
        let previous: HashMap<String, String> = previous.into_iter().collect();
        Ok(scan(&root, &constraints, &previous, &options)?)
    })
    .await?;
    for warning in &report.warnings {
        tracing::warn!(run.id = %run_id, warning, "project scan");
    }
    let turn = run.next_turn;
    app.db_call(move |conn| write_scan(conn, run_id, loop_id, turn, report))
        .await?;
    Ok(())
}

fn write_scan(
    conn: &mut diesel::SqliteConnection,
    run_id: crate::db::ids::RunId,
    loop_id: LoopId,
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
        let mut attributes = json!({"size": file.size, "kind": kind});
        if !file.is_editable() {
            attributes["readonly"] = json!(true);
        }
        entries::upsert_entry(
            conn,
            &EntryUpsert {
                run_id,
                loop_id: Some(loop_id),
                turn,
                path: file.path.as_str().to_string(),
                body: file.body.unwrap_or_default(),
                status: 200,
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
