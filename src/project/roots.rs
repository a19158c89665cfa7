//! Where projects may live: the directories of `RUMMY_PROJECTS_DIR`. A project root is
//! admitted when, with its symlinks resolved, it is one of them or lies inside one; the root
//! need not exist yet (its existing part is resolved, the rest must not climb out).

use std::fs;
use std::path::{Component, Path, PathBuf};

use crate::project::ProjectError;

/// The directories projects may live in, each canonical (symlinks resolved).
#[derive(Debug, Clone, Copy)]
pub struct ProjectDirs<'a> {
    dirs: &'a [PathBuf],
}

impl<'a> ProjectDirs<'a> {
    /// Over `dirs`, which must be canonical (see [`canonical_dirs`]).
    pub fn new(dirs: &'a [PathBuf]) -> ProjectDirs<'a> {
        ProjectDirs { dirs }
    }

    /// The resolved root if `root` (absolute, as a client named it) lies inside one of the
    /// directories, else [`ProjectError::OutsideProjectDirs`] naming `root` only.
    pub fn admit(&self, root: &Path) -> Result<PathBuf, ProjectError> {
        let refused = || ProjectError::OutsideProjectDirs(root.display().to_string());
        if !root.is_absolute() {
            return Err(refused());
        }
        let resolved = resolve(root).ok_or_else(refused)?;
        if self.dirs.iter().any(|dir| resolved.starts_with(dir)) {
            Ok(resolved)
        } else {
            Err(refused())
        }
    }
}

/// `dirs` with their symlinks resolved; each must be an existing directory.
pub fn canonical_dirs(dirs: &[PathBuf]) -> Result<Vec<PathBuf>, ProjectError> {
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

/// `path` with the symlinks of its longest existing ancestor resolved and the rest appended;
/// `None` when the rest is anything but plain names (a `..` could climb out of what was
/// resolved; `init` hands over lexically normal paths).
fn resolve(path: &Path) -> Option<PathBuf> {
    let mut existing = path;
    let mut rest = Vec::new();
    loop {
        match fs::canonicalize(existing) {
            Ok(canonical) => {
                let mut resolved = canonical;
                for component in rest.iter().rev() {
                    match component {
                        Component::Normal(name) => resolved.push(name),
                        _ => return None,
                    }
                }
                return Some(resolved);
            }
            Err(_) => {
                rest.push(existing.components().next_back()?);
                existing = existing.parent()?;
            }
        }
    }
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
        assert_eq!(dirs.admit(&layout.projects).unwrap(), layout.dirs[0]);
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
