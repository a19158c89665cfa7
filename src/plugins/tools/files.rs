//! File paths named by the model or a client: they must stay under the project root.
//!
//! A bare path (no scheme) is a project file. It is refused when it is absolute, has a `..`
//! segment, or leads through a symlink to somewhere outside the root.

use std::path::{Component, Path};

use crate::db::paths::scheme_of;

/// Whether `path` names a project file (no scheme).
pub(crate) fn is_file(path: &str) -> bool {
    scheme_of(path).is_none()
}

/// Why `path` may not be used as a file path, `None` when it stays under `root`.
pub(crate) fn escape_reason(root: &Path, path: &str) -> Option<String> {
    if !is_file(path) {
        return None;
    }
    let relative = Path::new(path);
    let looks_absolute = path.starts_with('/')
        || path.starts_with('\\')
        || path.as_bytes().get(1) == Some(&b':')
        || relative.is_absolute();
    if looks_absolute {
        return Some(format!(
            "{path} is absolute. File paths MUST be relative to the project root."
        ));
    }
    if relative
        .components()
        .any(|component| matches!(component, Component::ParentDir))
        || path.split(['/', '\\']).any(|segment| segment == "..")
    {
        return Some(format!(
            "{path} leaves the project. File paths MUST NOT contain `..`."
        ));
    }
    through_symlink_outside(root, relative)
        .then(|| format!("{path} leads outside the project through a symbolic link."))
}

/// Whether the deepest existing prefix of `relative` resolves outside `root`.
fn through_symlink_outside(root: &Path, relative: &Path) -> bool {
    let Ok(canonical_root) = root.canonicalize() else {
        return false;
    };
    let mut candidate = root.join(relative);
    loop {
        if let Ok(resolved) = candidate.canonicalize() {
            return !resolved.starts_with(&canonical_root);
        }
        if !candidate.pop() || !candidate.starts_with(root) {
            return false;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_paths_inside_pass() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(escape_reason(dir.path(), "src/new/file.rs"), None);
        assert_eq!(escape_reason(dir.path(), "known://../x"), None);
    }

    #[test]
    fn absolute_and_parent_paths_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        assert!(escape_reason(dir.path(), "/etc/passwd").is_some());
        assert!(escape_reason(dir.path(), "C:\\x").is_some());
        assert!(escape_reason(dir.path(), "src/../../x").is_some());
    }

    #[cfg(unix)]
    #[test]
    fn symlinks_out_of_the_root_are_refused() {
        let outside = tempfile::tempdir().unwrap();
        let dir = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(outside.path(), dir.path().join("link")).unwrap();
        assert!(escape_reason(dir.path(), "link/secret").is_some());
        std::fs::create_dir(dir.path().join("real")).unwrap();
        assert_eq!(escape_reason(dir.path(), "real/x"), None);
    }
}
