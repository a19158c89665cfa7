//! `ProjectActor`: one per project root, the owner of file work on it. It applies the
//! project's file constraints and scans the tree on the blocking pool, one scan at a time,
//! so runs of one project that start together never walk the same tree at once. An actor
//! that has scanned nothing for [`PROJECT_IDLE`] stops and leaves the registry; the next scan
//! of its root starts a new one.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use actix::prelude::*;

use crate::db::ids::ProjectId;
use crate::project::{scan, ConstraintSet, ProjectError, ProjectRoot, ScanOptions, ScanReport};

/// Scan the project's files: `constraints` are the stored `(pattern, visibility)` rows,
/// `previous` maps each known file to its hash. `None` when the root is not a directory on
/// this machine (a client whose tree the server cannot see).
#[derive(Debug, Message)]
#[rtype(result = "Result<Option<ScanReport>, ProjectError>")]
pub(crate) struct ScanFiles {
    /// The project's constraints as stored.
    pub constraints: Vec<(String, String)>,
    /// Path → hash of the files the run already has.
    pub previous: HashMap<String, String>,
    /// Size limits.
    pub options: ScanOptions,
}

/// How long a project actor lives without a scan.
pub(crate) const PROJECT_IDLE: Duration = Duration::from_secs(600);

/// The actor of one project root.
pub(crate) struct ProjectActor {
    key: ProjectKey,
    /// When it last started a scan; a scan under way holds the actor's context, so the idle
    /// check never runs during one.
    last_used: Instant,
    idle: Duration,
    /// Where it is listed, to leave when it is idle.
    registry: ProjectRegistry,
}

impl Actor for ProjectActor {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        ctx.run_interval(self.idle / 4, |actor, ctx| {
            if actor.last_used.elapsed() >= actor.idle
                && actor.registry.retire(&actor.key, &ctx.address())
            {
                ctx.stop();
            }
        });
    }
}

impl Handler<ScanFiles> for ProjectActor {
    type Result = AtomicResponse<Self, Result<Option<ScanReport>, ProjectError>>;

    fn handle(&mut self, message: ScanFiles, _: &mut Context<Self>) -> Self::Result {
        self.last_used = Instant::now();
        let root = self.key.1.clone();
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
    let constraints = ConstraintSet::stored(&root, &message.constraints)?;
    scan(&root, &constraints, &message.previous, &message.options).map(Some)
}

/// A project as its actor is keyed: the id and the root `init` gave.
type ProjectKey = (ProjectId, PathBuf);

/// A live project actor and how many scans are on their way to it.
struct Listed {
    actor: Addr<ProjectActor>,
    users: usize,
}

/// The live project actors, by project and root.
#[derive(Clone)]
pub(crate) struct ProjectRegistry {
    actors: Arc<Mutex<HashMap<ProjectKey, Listed>>>,
    idle: Duration,
}

impl Default for ProjectRegistry {
    fn default() -> Self {
        ProjectRegistry::with_idle(PROJECT_IDLE)
    }
}

impl ProjectRegistry {
    /// A registry whose actors stop after `idle` without a scan.
    pub(crate) fn with_idle(idle: Duration) -> ProjectRegistry {
        ProjectRegistry {
            actors: Arc::default(),
            idle,
        }
    }

    /// Scans `root` of `project` through its actor, started when it has none. The actor
    /// cannot retire while the scan is on its way to it.
    pub(crate) async fn scan(
        &self,
        project: ProjectId,
        root: PathBuf,
        message: ScanFiles,
    ) -> Result<Result<Option<ScanReport>, ProjectError>, MailboxError> {
        let using = self.using((project, root));
        using.actor.send(message).await
    }

    /// How many project actors are alive.
    #[cfg(test)]
    pub(crate) fn live(&self) -> usize {
        self.lock().len()
    }

    /// The actor of `key`, counted as in use until the returned value is dropped.
    fn using(&self, key: ProjectKey) -> InUse {
        let mut actors = self.lock();
        let listed = actors.entry(key.clone()).or_insert_with(|| Listed {
            actor: ProjectActor {
                key: key.clone(),
                last_used: Instant::now(),
                idle: self.idle,
                registry: self.clone(),
            }
            .start(),
            users: 0,
        });
        listed.users += 1;
        InUse {
            actor: listed.actor.clone(),
            key,
            registry: self.clone(),
        }
    }

    /// Takes `actor` off the registry when no scan is on its way to it; false otherwise.
    fn retire(&self, key: &ProjectKey, actor: &Addr<ProjectActor>) -> bool {
        let mut actors = self.lock();
        match actors.get(key) {
            Some(listed) if listed.actor == *actor && listed.users == 0 => {
                actors.remove(key);
                true
            }
            _ => false,
        }
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<ProjectKey, Listed>> {
        self.actors
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// A scan's claim on its actor.
struct InUse {
    actor: Addr<ProjectActor>,
    key: ProjectKey,
    registry: ProjectRegistry,
}

impl Drop for InUse {
    fn drop(&mut self) {
        if let Some(listed) = self.registry.lock().get_mut(&self.key) {
            listed.users = listed.users.saturating_sub(1);
        }
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
        let report = registry
            .scan(ProjectId(1), dir.path().to_path_buf(), message())
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        let paths: Vec<&str> = report.files.iter().map(|file| file.path.as_str()).collect();
        assert_eq!(paths, ["a.txt"]);
        let missing = registry
            .scan(ProjectId(1), dir.path().join("gone"), message())
            .await
            .unwrap()
            .unwrap();
        assert!(missing.is_none());
        assert_eq!(registry.live(), 2, "one actor per root");
    }

    fn message() -> ScanFiles {
        ScanFiles {
            constraints: vec![("b.txt".into(), "ignore".into())],
            previous: HashMap::new(),
            options: ScanOptions::default(),
        }
    }

    #[actix::test]
    async fn an_idle_actor_stops_and_leaves_and_the_next_scan_starts_another() {
        let dir = tempfile::tempdir().unwrap();
        let registry = ProjectRegistry::with_idle(Duration::from_millis(40));
        let scan = || registry.scan(ProjectId(1), dir.path().to_path_buf(), message());
        scan().await.unwrap().unwrap();
        assert_eq!(registry.live(), 1);
        let retired = tokio::time::timeout(Duration::from_secs(60), async {
            while registry.live() > 0 {
                actix::clock::sleep(Duration::from_millis(10)).await;
            }
        })
        .await;
        assert!(retired.is_ok(), "the idle actor did not retire within 60 s");
        assert!(scan().await.unwrap().unwrap().is_some());
        assert_eq!(registry.live(), 1);
    }

    #[actix::test]
    async fn an_actor_in_use_does_not_retire() {
        let dir = tempfile::tempdir().unwrap();
        let registry = ProjectRegistry::default();
        let key = (ProjectId(1), dir.path().to_path_buf());
        let using = registry.using(key.clone());
        assert!(!registry.retire(&key, &using.actor), "a scan is on its way");
        let actor = using.actor.clone();
        drop(using);
        let other = registry.using((ProjectId(2), dir.path().to_path_buf()));
        assert!(!registry.retire(&key, &other.actor), "not the listed actor");
        drop(other);
        assert!(registry.retire(&key, &actor));
        assert_eq!(registry.live(), 1);
        assert!(!registry.retire(&key, &actor), "already gone");
    }
}
