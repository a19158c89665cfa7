//! `getEntries`, `get` (promote; pin a file constraint), `store` (archive; manage constraints).

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use super::blocking::blocking;
use crate::agent::run_budget::RunBudget;
use crate::agent::scan;
use crate::db::enums::{EntryStatus, Fidelity, Visibility};
use crate::db::models::entry::Selector;
use crate::db::models::run::RunRow;
use crate::db::paths::is_file;
use crate::db::queries::{constraints, entries, runs};
use crate::error::AppError;
use crate::hedberg::{Pattern, PatternKind};
use crate::project::{scan_file, ConstraintPattern, ConstraintSet, ProjectError, ProjectRoot};
use crate::rpc::call::{CallContext, Reply};
use crate::rpc::handlers::runs::{find_run, find_run_or};
use crate::rpc::handlers::tools::{client_policy, dispatch_tool, ToolParams};
use crate::rpc::params::{truthy, Required};

/// `getEntries` params.
#[derive(Debug, Deserialize)]
pub(crate) struct GetEntriesParams {
    #[serde(default)]
    pattern: Option<String>,
    #[serde(default)]
    body: Option<String>,
    #[serde(default)]
    run: Option<String>,
    #[serde(default)]
    limit: Option<u32>,
    #[serde(default)]
    offset: Option<u32>,
}

#[derive(Serialize)]
struct EntrySummary {
    path: String,
    scheme: Option<String>,
    status: EntryStatus,
    fidelity: Fidelity,
    tokens: i32,
}

/// `getEntries`: a run's entries matching a path pattern (and a body search), by path.
pub(crate) async fn list(
    context: CallContext,
    params: GetEntriesParams,
) -> Result<Reply, AppError> {
    let project = context.project()?.id;
    let selector = Selector::Pattern {
        path: params.pattern.unwrap_or_else(|| "*".into()),
        body: params.body.filter(|body| !body.is_empty()),
    };
    // Its pattern work runs beside the writer, budgeted and cancelled with this call.
    let rows = context
        .agent
        .db
        .search(move |conn| {
            let run = match &params.run {
                Some(alias) => runs::find_run(conn, project, alias)?,
                None => runs::latest_run(conn, project)?,
            };
            match run {
                Some(run) => entries::list_entries(
                    conn,
                    run.id,
                    &selector,
                    params.limit.map(i64::from),
                    params.offset.map(i64::from),
                ),
                None => Ok(Vec::new()),
            }
        })
        .await?;
    let summaries: Vec<EntrySummary> = rows
        .into_iter()
        .map(|row| EntrySummary {
            path: row.path,
            scheme: row.scheme,
            status: row.status,
            fidelity: row.fidelity,
            tokens: row.tokens_full,
        })
        .collect();
    Reply::of(summaries)
}

/// `get` params.
#[derive(Debug, Deserialize)]
pub(crate) struct GetParams {
    path: Required,
    #[serde(default)]
    run: Option<String>,
    #[serde(default, deserialize_with = "truthy")]
    persist: bool,
    #[serde(default, deserialize_with = "truthy")]
    readonly: bool,
}

/// `get`: optionally pin a file constraint, then dispatch the `get` tool on the run.
pub(crate) async fn get(context: CallContext, params: GetParams) -> Result<Reply, AppError> {
    if params.persist {
        let visibility = if params.readonly {
            Visibility::Readonly
        } else {
            Visibility::Active
        };
        save_constraint(&context, &params.path, visibility).await?;
    }
    let Some(alias) = params.run.filter(|run| !run.is_empty()) else {
        if params.persist {
            return Reply::of(serde_json::json!({"status": "ok"}));
        }
        return Err(AppError::MissingParam("run".into()));
    };
    let run = find_run(&context, &alias).await?;
    let literal_file = is_file(&params.path)
        && Pattern::compile(&params.path)
            .is_ok_and(|pattern| pattern.kind() == PatternKind::Literal);
    if literal_file {
        give_file(&context, &run, &params.path).await?;
    }
    dispatch_tool(&context, run, "get", ToolParams::for_path(&params.path)).await?;
    Reply::of(serde_json::json!({"status": "ok"}))
}

/// Reads the project file `literal` from disk into the run's store when it is new or
/// changed, as a scan would (under the run's write gate), so that a client can give a run a file it does not have: a
/// `noRepo` run, which never scans, or a file the walk skips. Inside the root only (a path
/// that leaves it is `-32602`), never an ignored file; nothing while the root does not exist.
async fn give_file(context: &CallContext, run: &RunRow, literal: &str) -> Result<(), AppError> {
    let root = context.project()?.root.clone();
    let (run_id, project, turn) = (run.id, run.project_id, run.next_turn);
    let options = scan::scan_options(&context.agent.settings);
    let budget = RunBudget::of(&context.agent, run, client_policy(context, run).await?).await?;
    let (stored, previous) = context
        .agent
        .db
        .read(move |conn| {
            let stored = constraints::list_constraints(conn, project)?
                .into_iter()
                .map(|row| (row.pattern, row.visibility.as_str().to_string()))
                .collect::<Vec<_>>();
            Ok((stored, entries::file_hashes(conn, run_id)?))
        })
        .await?;
    let literal = literal.to_string();
    let report = blocking(move || {
        if !root.is_dir() {
            return Ok(None);
        }
        let root = ProjectRoot::new(&root)?;
        let constraints = ConstraintSet::stored(&root, &stored)?;
        let previous: HashMap<String, String> = previous.into_iter().collect();
        Ok(Some(scan_file(
            &root,
            &constraints,
            &literal,
            &previous,
            &options,
        )?))
    })
    .await?;
    if let Some(report) = report.filter(|report| !report.files.is_empty()) {
        context
            .agent
            .db
            .call(move |conn| scan::write_scan(conn, run_id, None, turn, report, &budget))
            .await?;
    }
    Ok(())
}

/// `store` params.
#[derive(Debug, Deserialize)]
pub(crate) struct StoreParams {
    path: Required,
    #[serde(default)]
    run: Option<String>,
    #[serde(default, deserialize_with = "truthy")]
    persist: bool,
    #[serde(default, deserialize_with = "truthy")]
    ignore: bool,
    #[serde(default, deserialize_with = "truthy")]
    clear: bool,
}

/// `store`: clear or save a file constraint; with a run, archive the matching entries.
pub(crate) async fn store(context: CallContext, params: StoreParams) -> Result<Reply, AppError> {
    if params.clear {
        let project = context.project()?.clone();
        let pattern = constraint_pattern(&context, &params.path).await?;
        context
            .agent
            .db
            .call(move |conn| constraints::delete_constraint(conn, project.id, &pattern))
            .await?;
        return Reply::of(serde_json::json!({"status": "ok"}));
    }
    if params.persist {
        let visibility = if params.ignore {
            Visibility::Ignore
        } else {
            Visibility::Active
        };
        save_constraint(&context, &params.path, visibility).await?;
    }
    let Some(alias) = params.run.filter(|run| !run.is_empty()) else {
        if params.persist {
            return Reply::of(serde_json::json!({"status": "ok"}));
        }
        return Err(AppError::MissingParam("run".into()));
    };
    let run = find_run_or(&context, &alias, AppError::RunNotFoundShort).await?;
    let selector = Selector::Pattern {
        path: params.path.0,
        body: None,
    };
    context
        .agent
        .db
        .call(move |conn| entries::demote(conn, run.id, &selector))
        .await?;
    Reply::of(serde_json::json!({"status": "ok"}))
}

/// The stored form of a client-given constraint pattern: relative to the root, confined.
/// `init` does not require the root to exist; confining a pattern does, and a missing root
/// is the client's mistake (-32602), not an internal error.
async fn constraint_pattern(context: &CallContext, raw: &str) -> Result<String, AppError> {
    let root = context.project()?.root.clone();
    let raw = raw.to_string();
    blocking(move || {
        if !root.is_dir() {
            return Err(ProjectError::RootNotDirectory(root).into());
        }
        let root = ProjectRoot::new(&root)?;
        Ok(ConstraintPattern::normalize(&root, &raw)?
            .as_str()
            .to_string())
    })
    .await
}

async fn save_constraint(
    context: &CallContext,
    raw: &str,
    visibility: Visibility,
) -> Result<(), AppError> {
    let project = context.project()?.id;
    let pattern = constraint_pattern(context, raw).await?;
    context
        .agent
        .db
        .call(move |conn| constraints::set_constraint(conn, project, &pattern, visibility))
        .await?;
    Ok(())
}
