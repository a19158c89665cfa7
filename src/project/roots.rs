//! Where projects may live: the directories of `RUMMY_PROJECTS_DIR`. A project root is
//! admitted when, with its symlinks resolved ([`resolve`]), it lies inside one of them (not
//! one of them itself, which would hold every other project); the root need not exist yet.
//! And where they may not: no project's root is, holds or lies inside another's
//! ([`overlap`]).

use std::fs;
use std::path::{Path, PathBuf};

use crate::project::confine::resolve;
use crate::project::ProjectError;

/// The directories projects may live in, each canonical (symlinks resolved).
#[derive(Debug, Clone, Copy)]
pub(crate) struct ProjectDirs<'a> {
    dirs: &'a [PathBuf],
}

impl<'a> ProjectDirs<'a> {
    /// Over `dirs`, which must be canonical (see [`canonical_dirs`]).
    pub(crate) fn new(dirs: &'a [PathBuf]) -> ProjectDirs<'a> {
        ProjectDirs { dirs }
    }

    /// The resolved root if `root` (absolute, as a client named it) lies inside one of the
    /// directories, else [`ProjectError::OutsideProjectDirs`] naming `root` only.
    pub(crate) fn admit(&self, root: &Path) -> Result<PathBuf, ProjectError> {
        let refused = || ProjectError::OutsideProjectDirs(root.display().to_string());
        let resolved = resolve(root).map_err(|_| refused())?;
        if self
            .dirs
            .iter()
            .any(|dir| resolved.starts_with(dir) && resolved != *dir)
        {
            Ok(resolved)
        } else {
            Err(refused())
        }
    }
}

/// Whether two resolved roots overlap: one is the other, or lies inside it (whole path
/// components: `/p/web2` is not inside `/p/web`).
pub(crate) fn overlap(one: &Path, other: &Path) -> bool {
    one.starts_with(other) || other.starts_with(one)
}

/// `dirs` with their symlinks resolved; each must be an existing directory.
pub(crate) fn canonical_dirs(dirs: &[PathBuf]) -> Result<Vec<PathBuf>, ProjectError> {
    dirs.iter()
        .map(|dir| {
            let canonical =
                fs::canonicalize(dir).map_err(|source| ProjectError::io(dir, source))?;
            if canonical.is_dir() {
                Ok(canonical)
            } else {
                Err(ProjectError::RootNotDirectory(canonical))
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::symlink;

    use super::*;

    struct Layout {
        _temp: tempfile::TempDir,
        projects: PathBuf,
        outside: PathBuf,
        dirs: Vec<PathBuf>,
    }

    fn layout() -> Layout {
        let temp = tempfile::tempdir().unwrap();
        let projects = temp.path().join("projects");
        let outside = temp.path().join("outside");
        fs::create_dir_all(projects.join("shop")).unwrap();
        fs::create_dir_all(&outside).unwrap();
        let dirs = canonical_dirs(std::slice::from_ref(&projects)).unwrap();
        Layout {
            _temp: temp,
            projects,
            outside,
            dirs,
        }
    }

    #[test]
    fn a_root_inside_is_admitted_resolved_even_before_it_exists() {
        let layout = layout();
        let dirs = ProjectDirs::new(&layout.dirs);
        let shop = dirs.admit(&layout.projects.join("shop")).unwrap();
        assert_eq!(shop, layout.dirs[0].join("shop"));
        let new = dirs.admit(&layout.projects.join("new/app")).unwrap();
        assert_eq!(new, layout.dirs[0].join("new/app"));
        assert!(
            dirs.admit(&layout.projects).is_err(),
            "a projects directory itself would hold every project"
        );
    }

    #[test]
    fn roots_outside_are_refused_naming_only_the_clients_path() {
        let layout = layout();
        let dirs = ProjectDirs::new(&layout.dirs);
        for root in [
            PathBuf::from("/"),
            PathBuf::from("/etc"),
            layout.outside.clone(),
            layout.projects.join("../outside"),
            layout.projects.join("missing/../../outside"),
            layout.projects.join("shop/.."),
            PathBuf::from("relative/shop"),
        ] {
            let refused = dirs.admit(&root).unwrap_err();
            assert!(
                matches!(&refused, ProjectError::OutsideProjectDirs(named) if *named == root.display().to_string()),
                "{root:?}: {refused}"
            );
        }
    }

    #[test]
    fn a_symlink_inside_that_points_outside_is_refused() {
        let layout = layout();
        symlink(&layout.outside, layout.projects.join("sneaky")).unwrap();
        let dirs = ProjectDirs::new(&layout.dirs);
        assert!(dirs.admit(&layout.projects.join("sneaky")).is_err());
        assert!(dirs.admit(&layout.projects.join("sneaky/deeper")).is_err());
        symlink(layout.projects.join("shop"), layout.outside.join("back_in")).unwrap();
        assert_eq!(
            dirs.admit(&layout.outside.join("back_in")).unwrap(),
            layout.dirs[0].join("shop"),
            "a link from outside to a project inside resolves inside"
        );
    }

    #[test]
    fn roots_overlap_when_one_is_or_holds_the_other_by_whole_components() {
        let web = Path::new("/p/web");
        for other in ["/p/web", "/p", "/", "/p/web/inner", "/p/web/a/b"] {
            assert!(overlap(web, Path::new(other)), "{other}");
            assert!(overlap(Path::new(other), web), "{other}");
        }
        for other in ["/p/web2", "/p/we", "/p/api", "/q/web"] {
            assert!(!overlap(web, Path::new(other)), "{other}");
            assert!(!overlap(Path::new(other), web), "{other}");
        }
    }

    #[test]
    fn project_dirs_must_exist_and_be_directories() {
        let layout = layout();
        assert!(canonical_dirs(&[layout.projects.join("missing")]).is_err());
        let file = layout.projects.join("file");
        fs::write(&file, "x").unwrap();
        assert!(matches!(
            canonical_dirs(&[file]),
            Err(ProjectError::RootNotDirectory(_))
        ));
    }
}
