//! `ProjectActor`: one per project root, the owner of file work on it. It applies the
//! project's file constraints and scans the tree on the blocking pool, one scan at a time,
//! so runs of one project that start together never walk the same tree at once.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use actix::prelude::*;

use crate::db::ids::ProjectId;
use crate::project::{
    scan, ConstraintPattern, ConstraintSet, FileConstraint, ProjectError, ProjectRoot, ScanOptions,
    ScanReport, Visibility,
};

/// Scan the project's files: `constraints` are the stored `(pattern, visibility)` rows,
/// `previous` maps each known file to its hash. `None` when the root is not a directory on
/// this machine (a client whose tree the server cannot see).
#[derive(Debug, Message)]
#[rtype(result = "Result<Option<ScanReport>, ProjectError>")]
pub struct ScanFiles {
    /// The project's constraints as stored.
    pub constraints: Vec<(String, String)>,
    /// Path → hash of the files the run already has.
    pub previous: HashMap<String, String>,
    /// Size limits.
    pub options: ScanOptions,
}

/// The actor of one project root.
pub struct ProjectActor {
    root: PathBuf,
}

impl Actor for ProjectActor {
    type Context = Context<Self>;
}

impl Handler<ScanFiles> for ProjectActor {
    type Result = AtomicResponse<Self, Result<Option<ScanReport>, ProjectError>>;

    fn handle(&mut self, message: ScanFiles, _: &mut Context<Self>) -> Self::Result {
        let root = self.root.clone();
        let scanning = actix_web::rt::task::spawn_blocking(move || scan_root(&root, message));
        AtomicResponse::new(Box::pin(actix::fut::wrap_future(async move {
            scanning.await.map_err(|error| ProjectError::Io {
                path: PathBuf::new(),
                source: std::io::Error::other(error.to_string()),
            })?
        })))
    }
}

fn scan_root(
    root: &std::path::Path,
    message: ScanFiles,
) -> Result<Option<ScanReport>, ProjectError> {
    if !root.is_dir() {
        return Ok(None);
    }
    let root = ProjectRoot::new(root)?;
    let constraints = ConstraintSet::new(message.constraints.iter().filter_map(
        |(pattern, visibility)| {
            Some(FileConstraint {
                pattern: ConstraintPattern::normalize(&root, pattern).ok()?,
                visibility: visibility.parse::<Visibility>().ok()?,
            })
        },
    ))?;
    scan(&root, &constraints, &message.previous, &message.options).map(Some)
}

/// A project as its actor is keyed: the id and the root `init` gave.
type ProjectKey = (ProjectId, PathBuf);

/// The live project actors, by project and root.
#[derive(Clone, Default)]
pub struct ProjectRegistry {
    actors: Arc<Mutex<HashMap<ProjectKey, Addr<ProjectActor>>>>,
}

impl ProjectRegistry {
    /// The actor of `project` at `root`, started on first use.
    pub fn actor(&self, project: ProjectId, root: PathBuf) -> Addr<ProjectActor> {
        let mut actors = self
            .actors
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        actors
            .entry((project, root.clone()))
            .or_insert_with(|| ProjectActor { root }.start())
            .clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[actix::test]
    async fn scans_a_tree_and_reports_a_missing_root_as_none() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "alpha").unwrap();
        let registry = ProjectRegistry::default();
        let actor = registry.actor(ProjectId(1), dir.path().to_path_buf());
        let message = || ScanFiles {
            constraints: vec![("b.txt".into(), "ignore".into())],
            previous: HashMap::new(),
            options: ScanOptions::default(),
        };
        let report = actor.send(message()).await.unwrap().unwrap().unwrap();
        let paths: Vec<&str> = report.files.iter().map(|file| file.path.as_str()).collect();
        assert_eq!(paths, ["a.txt"]);
        let missing = registry.actor(ProjectId(1), dir.path().join("gone"));
        assert!(missing.send(message()).await.unwrap().unwrap().is_none());
    }
}
