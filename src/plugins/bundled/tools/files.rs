//! File paths named by the model or a client: they must stay under the project root.
//!
//! A bare path (no scheme) is a project file. It is refused when it is absolute or has a `..`
//! segment (a file's entry is named by its path, so the path must already be the file's),
//! and then confined by [`ProjectRoot::confine`], the one confinement every caller uses:
//! refused when it leads through a symlink to somewhere outside the root, or when the root
//! itself no longer leads to itself. When the server applies accepted changes itself,
//! writes are atomic (a temporary file renamed over the target) and every path is checked
//! again.

use std::io;
use std::path::{Path, PathBuf};

use crate::plugins::error::ToolError;
use crate::project::{ProjectError, ProjectRoot};

use crate::db::paths::is_file;

/// Why `path` may not be used as a file path, `None` when it stays under `root`. A root
/// that does not exist (yet) holds nothing a path could escape through.
pub(crate) fn escape_reason(root: &Path, path: &str) -> Option<String> {
    if !is_file(path) {
        return None;
    }
    match confined(root, path) {
        Err(Refusal::RootMissing) | Ok(_) => None,
        Err(Refusal::Reason(reason)) => Some(reason),
    }
}

/// Why a file path was refused.
enum Refusal {
    /// The root does not exist: nothing to read, and nothing is written there.
    RootMissing,
    /// A message for the model or client.
    Reason(String),
}

/// Where the project file `path` is on disk, confined to `root`.
fn confined(root: &Path, path: &str) -> Result<PathBuf, Refusal> {
    let looks_absolute =
        path.starts_with('/') || path.starts_with('\\') || path.as_bytes().get(1) == Some(&b':');
    if looks_absolute {
        return Err(Refusal::Reason(format!(
            "{path} is absolute. File paths MUST be relative to the project root."
        )));
    }
    if path.split(['/', '\\']).any(|segment| segment == "..") {
        return Err(Refusal::Reason(format!(
            "{path} leaves the project. File paths MUST NOT contain `..`."
        )));
    }
    let root = match ProjectRoot::new(root) {
        Ok(root) => root,
        Err(ProjectError::Io { source, .. }) if source.kind() == io::ErrorKind::NotFound => {
            return Err(Refusal::RootMissing)
        }
        Err(error) => return Err(Refusal::Reason(error.to_string())),
    };
    match root.confine(path) {
        Ok(confined) => Ok(root.absolute(&confined)),
        Err(ProjectError::SymlinkEscape(_) | ProjectError::SymlinkLoop(_)) => Err(Refusal::Reason(
            format!("{path} leads outside the project through a symbolic link."),
        )),
        Err(error) => Err(Refusal::Reason(format!("{path}: {error}"))),
    }
}

/// The absolute location of a project file, refused when it would leave `root` or the root
/// does not exist.
fn located(root: &Path, path: &str) -> Result<PathBuf, ToolError> {
    confined(root, path).map_err(|refusal| match refusal {
        Refusal::RootMissing => ToolError::Disk(format!(
            "Could not reach {path}: the project root does not exist on the server."
        )),
        Refusal::Reason(reason) => ToolError::Disk(reason),
    })
}

fn disk_error(action: &str, path: &str, error: &io::Error) -> ToolError {
    ToolError::Disk(format!("Could not {action} {path}: {error}"))
}

/// The file's content, `None` when it does not exist.
pub(crate) fn read(root: &Path, path: &str) -> Result<Option<String>, ToolError> {
    match std::fs::read_to_string(located(root, path)?) {
        Ok(content) => Ok(Some(content)),
        Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(error) => Err(disk_error("read", path, &error)),
    }
}

/// Writes the file atomically: a temporary file beside it, renamed over it.
pub(crate) fn write_atomic(root: &Path, path: &str, content: &str) -> Result<(), ToolError> {
    let target = located(root, path)?;
    let parent = target.parent().unwrap_or(root);
    std::fs::create_dir_all(parent)
        .map_err(|error| disk_error("create the folder of", path, &error))?;
    let name = target
        .file_name()
        .and_then(|name| name.to_str())
        .unwrap_or("file");
    let temporary = parent.join(format!(".{name}.rummy-{}", std::process::id()));
    std::fs::write(&temporary, content).map_err(|error| disk_error("write", path, &error))?;
    std::fs::rename(&temporary, &target).map_err(|error| {
        let _ = std::fs::remove_file(&temporary);
        disk_error("replace", path, &error)
    })
}

/// Removes the file; a file that is already gone is fine.
pub(crate) fn remove(root: &Path, path: &str) -> Result<(), ToolError> {
    match std::fs::remove_file(located(root, path)?) {
        Err(error) if error.kind() != io::ErrorKind::NotFound => {
            Err(disk_error("remove", path, &error))
        }
        _ => Ok(()),
    }
}

/// Copies `from` to `to` (atomically).
pub(crate) fn copy(root: &Path, from: &str, to: &str) -> Result<(), ToolError> {
    let content =
        std::fs::read(located(root, from)?).map_err(|error| disk_error("read", from, &error))?;
    let text = String::from_utf8(content)
        .map_err(|_| ToolError::Disk(format!("{from} is not a text file")))?;
    write_atomic(root, to, &text)
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

    #[test]
    fn disk_changes_stay_in_the_root() {
        let dir = tempfile::tempdir().unwrap();
        write_atomic(dir.path(), "a/b.txt", "hello").unwrap();
        assert_eq!(
            read(dir.path(), "a/b.txt").unwrap().as_deref(),
            Some("hello")
        );
        copy(dir.path(), "a/b.txt", "c.txt").unwrap();
        remove(dir.path(), "a/b.txt").unwrap();
        assert_eq!(read(dir.path(), "a/b.txt").unwrap(), None);
        remove(dir.path(), "c.txt").unwrap();
        remove(dir.path(), "c.txt").unwrap();
        assert!(matches!(
            write_atomic(dir.path(), "../x", "no"),
            Err(ToolError::Disk(_))
        ));
        assert_eq!(std::fs::read_dir(dir.path().join("a")).unwrap().count(), 0);
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

    #[cfg(unix)]
    #[test]
    fn a_root_that_now_leads_elsewhere_or_is_missing_is_neither_read_nor_written() {
        let other = tempfile::tempdir().unwrap();
        std::fs::write(other.path().join("secret.txt"), "theirs").unwrap();
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("team");
        std::os::unix::fs::symlink(other.path(), &root).unwrap();
        assert!(escape_reason(&root, "secret.txt").is_some());
        assert!(matches!(read(&root, "secret.txt"), Err(ToolError::Disk(_))));
        assert!(write_atomic(&root, "planted.txt", "x").is_err());
        assert!(!other.path().join("planted.txt").exists());
        let missing = dir.path().join("not-yet");
        assert_eq!(escape_reason(&missing, "a.txt"), None);
        assert!(write_atomic(&missing, "a.txt", "x").is_err());
        assert!(!missing.exists(), "a missing root is not created");
    }
}
