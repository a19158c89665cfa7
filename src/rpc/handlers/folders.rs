//! `projects/folders` and `projects/create`: a project made from the console, no editor
//! needed. The folders offered are the directories directly under each `RUMMY_PROJECTS_DIR`
//! directory that no project's root is, holds or lies in; without those directories (a
//! server on loopback) the admin names any existing directory. Creating follows `init`'s
//! rules (symlinks resolved, no overlaps), and the folder must exist.

use std::path::{Path, PathBuf};

use actix_web::web;
use serde::{Deserialize, Serialize};

use crate::access::AccessError;
use crate::db::queries::projects::{self, Opening};
use crate::error::AppError;
use crate::project::{confine, roots, ProjectError};
use crate::rpc::call::{CallContext, Reply};
use crate::rpc::params::{NoParams, Required};

use super::session::{admitted_root, open};

/// The most folders `projects/folders` lists.
const FOLDERS_MAX: usize = 500;

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Folders {
    /// No projects directory is set (a server on loopback): any existing folder may be named.
    any_folder: bool,
    /// The projects directories, symlinks resolved.
    projects_dirs: Vec<String>,
    /// The folders that may become projects, by path.
    folders: Vec<Folder>,
}

#[derive(Serialize)]
struct Folder {
    name: String,
    path: String,
}

/// `projects/folders`: the directories under the projects directories not yet projects.
pub(crate) async fn folders(context: CallContext, _: NoParams) -> Result<Reply, AppError> {
    let dirs = context.agent.settings.server.projects_dir.clone();
    let rows = context.agent.db.read(projects::all_projects).await?;
    let roots: Vec<PathBuf> = rows
        .into_iter()
        .filter_map(|row| row.project_root.map(PathBuf::from))
        .collect();
    let listed = dirs.clone();
    let folders = web::block(move || free_folders(&listed, &roots))
        .await
        .map_err(|error| AppError::Internal(format!("listing folders stopped: {error}")))??;
    Reply::of(Folders {
        any_folder: dirs.is_empty(),
        projects_dirs: dirs.iter().map(|dir| dir.display().to_string()).collect(),
        folders,
    })
}

/// The directories directly under `dirs` (hidden ones left out) that overlap none of
/// `roots`, by name.
fn free_folders(dirs: &[PathBuf], roots: &[PathBuf]) -> Result<Vec<Folder>, AppError> {
    let mut folders = Vec::new();
    for dir in dirs {
        let entries = std::fs::read_dir(dir).map_err(|source| ProjectError::io(dir, source))?;
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let path = entry.path();
            if name.starts_with('.') || !path.is_dir() {
                continue;
            }
            let Ok(resolved) = roots::ProjectDirs::new(dirs).admit(&path) else {
                continue;
            };
            if roots.iter().any(|root| roots::overlap(&resolved, root)) {
                continue;
            }
            folders.push(Folder {
                name,
                path: path.display().to_string(),
            });
        }
    }
    folders.sort_by(|one, other| one.path.cmp(&other.path));
    folders.truncate(FOLDERS_MAX);
    Ok(folders)
}

/// `projects/create` params.
#[derive(Debug, Deserialize)]
pub(crate) struct CreateParams {
    name: Required,
    /// The folder: absolute, an existing directory.
    path: Required,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Created {
    name: String,
    project_root: String,
}

/// `projects/create`: a project named `name` at the existing folder `path`, by `init`'s
/// rules; the console then opens it with `init`. Naming a project already at that folder
/// answers it again.
pub(crate) async fn create(context: CallContext, params: CreateParams) -> Result<Reply, AppError> {
    let grant = context.grant()?;
    grant.open(&params.name)?;
    grant.create(&params.name)?;
    let named = PathBuf::from(&*params.path);
    if !named.is_absolute() {
        return Err(AppError::InvalidParam(
            "path must be an absolute path".into(),
        ));
    }
    let root = admitted_root(&context, named).await?;
    let checked = root.clone();
    let is_dir = web::block(move || existing_dir(&checked))
        .await
        .map_err(|error| AppError::Internal(format!("the folder check stopped: {error}")))?;
    if !is_dir {
        return Err(AppError::InvalidParam(format!(
            "path {} is not an existing directory",
            params.path.0
        )));
    }
    match open(&context, &params.name, &root, true).await? {
        Opening::Opened(project) => Reply::of(Created {
            name: project.name,
            project_root: root.display().to_string(),
        }),
        Opening::OtherRoot => Err(AccessError::RootTaken {
            project: params.name.0,
        }
        .into()),
        Opening::Overlaps => Err(ProjectError::RootOverlaps(params.path.0).into()),
        Opening::Absent => Err(AppError::Internal(
            "a project the caller may create was not".into(),
        )),
    }
}

/// Whether the resolved `root` is a directory that exists.
fn existing_dir(root: &Path) -> bool {
    confine::resolve(root).is_ok_and(|resolved| resolved.is_dir())
}
