//! Path confinement: every path a client or a model names is resolved here into a
//! [`ProjectPath`], a normalized path relative to the project root that is known not to
//! leave it, neither through `..`, nor as an absolute path, nor through a symlink.
//!
//! Normalization is lexical (`a/./b/../c` becomes `a/c`), so callers must use the returned
//! path, never the raw one: the symlink check vouches for the normalized path only.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::fmt;
use std::fs;
use std::io::ErrorKind;
use std::path::{Component, Path, PathBuf};

use super::ProjectError;

/// How many symlinks one path may pass through before we call it a loop (Linux's limit).
const MAX_SYMLINK_HOPS: usize = 40;

/// A project's root directory, resolved once so that paths can be confined to it.
#[derive(Debug, Clone)]
pub struct ProjectRoot {
    canonical: PathBuf,
    /// Root spellings an absolute client path may start with: as configured, and canonical.
    spellings: Vec<Vec<String>>,
}

/// A normalized path relative to a project root, using `/` as separator, never empty,
/// without `.` or `..` segments, and not escaping the root through any symlink at the time
/// it was checked.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ProjectPath(String);

impl ProjectRoot {
    /// Resolves `root` (which must exist and be a directory) into a project root.
    pub fn new(root: impl AsRef<Path>) -> Result<Self, ProjectError> {
        let root = root.as_ref();
        let canonical = fs::canonicalize(root).map_err(|source| ProjectError::io(root, source))?;
        if !canonical.is_dir() {
            return Err(ProjectError::RootNotDirectory(root.to_path_buf()));
        }
        let given = std::path::absolute(root).map_err(|source| ProjectError::io(root, source))?;
        let spellings = [given.as_path(), canonical.as_path()]
            .into_iter()
            .filter_map(utf8_segments)
            .collect();
        Ok(Self {
            canonical,
            spellings,
        })
    }

    /// The canonical absolute path of the root (symlinks resolved).
    pub fn path(&self) -> &Path {
        &self.canonical
    }

    /// Confines `raw` to the project: returns its normalized relative path, or an error if it
    /// is empty, holds a NUL byte, escapes with `..`, is absolute outside the root, or passes
    /// through a symlink that resolves outside the root. The path need not exist.
    pub fn confine(&self, raw: &str) -> Result<ProjectPath, ProjectError> {
        let segments = self.relative_segments(raw)?;
        if segments.is_empty() {
            return Err(ProjectError::EmptyPath);
        }
        self.check_symlinks(&segments, raw)?;
        Ok(ProjectPath(segments.join("/")))
    }

    /// The absolute path of a confined path, under the canonical root.
    pub fn absolute(&self, path: &ProjectPath) -> PathBuf {
        self.canonical.join(&path.0)
    }

    /// Lexically normalizes `raw` into segments relative to the root, without touching the
    /// disk. May be empty (the root itself).
    pub(crate) fn relative_segments(&self, raw: &str) -> Result<Vec<String>, ProjectError> {
        if raw.contains('\0') {
            return Err(ProjectError::NulByte(raw.to_string()));
        }
        if raw.is_empty() {
            return Err(ProjectError::EmptyPath);
        }
        let escaped = || ProjectError::EscapesRoot(raw.to_string());
        if !raw.starts_with('/') {
            return normalize_segments(raw, RootPolicy::Refuse).ok_or_else(escaped);
        }
        let absolute = normalize_segments(raw, RootPolicy::StayAtRoot).ok_or_else(escaped)?;
        self.spellings
            .iter()
            .find_map(|root| absolute.strip_prefix(root.as_slice()))
            .map(<[String]>::to_vec)
            .ok_or_else(escaped)
    }

    /// Follows the normalized path component by component, as the kernel would, and checks
    /// that where it finally lands is under the root. Components that do not exist yet are
    /// taken as written, so paths of new files can be checked too.
    fn check_symlinks(&self, segments: &[String], raw: &str) -> Result<(), ProjectError> {
        let mut current = self.canonical.clone();
        let mut pending: VecDeque<OsString> = segments.iter().map(OsString::from).collect();
        let mut hops = 0;
        while let Some(segment) = pending.pop_front() {
            if segment == ".." {
                current.pop();
                continue;
            }
            let next = current.join(&segment);
            let is_symlink = match fs::symlink_metadata(&next) {
                Ok(metadata) => metadata.file_type().is_symlink(),
                Err(error) if error.kind() == ErrorKind::NotFound => false,
                Err(error) => return Err(ProjectError::io(next, error)),
            };
            if !is_symlink {
                current = next;
                continue;
            }
            hops += 1;
            if hops > MAX_SYMLINK_HOPS {
                return Err(ProjectError::SymlinkLoop(raw.to_string()));
            }
            let target = fs::read_link(&next).map_err(|source| ProjectError::io(&next, source))?;
            if target.is_absolute() {
                current = PathBuf::from("/");
            }
            for component in target.components().rev() {
                match component {
                    Component::Normal(name) => pending.push_front(name.to_os_string()),
                    Component::ParentDir => pending.push_front(OsString::from("..")),
                    Component::CurDir | Component::RootDir | Component::Prefix(_) => {}
                }
            }
        }
        if current.starts_with(&self.canonical) {
            Ok(())
        } else {
            Err(ProjectError::SymlinkEscape(raw.to_string()))
        }
    }
}

impl ProjectPath {
    /// Wraps a path the caller has already normalized and confined.
    pub(crate) fn from_confined(path: String) -> Self {
        Self(path)
    }

    /// The path as a string, e.g. `src/main.rs`.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The path as an owned string.
    pub fn into_string(self) -> String {
        self.0
    }
}

impl fmt::Display for ProjectPath {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(&self.0)
    }
}

impl AsRef<str> for ProjectPath {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

/// What a `..` at the top of a path means.
#[derive(Clone, Copy, PartialEq, Eq)]
enum RootPolicy {
    /// Relative paths: a `..` above the start escapes, which is refused.
    Refuse,
    /// Absolute paths: `/..` is `/`, as on any Unix.
    StayAtRoot,
}

/// Splits on `/`, drops empty and `.` segments and applies `..`. `None` when a `..` would
/// climb above the start under [`RootPolicy::Refuse`].
fn normalize_segments(raw: &str, policy: RootPolicy) -> Option<Vec<String>> {
    let mut segments: Vec<String> = Vec::new();
    for segment in raw.split('/') {
        match segment {
            "" | "." => {}
            ".." => {
                if segments.pop().is_none() && policy == RootPolicy::Refuse {
                    return None;
                }
            }
            name => segments.push(name.to_string()),
        }
    }
    Some(segments)
}

/// The normal components of an absolute path as strings; `None` if any is not UTF-8 (no
/// client can then spell that root, so it is simply not offered for matching).
fn utf8_segments(path: &Path) -> Option<Vec<String>> {
    let mut segments: Vec<String> = Vec::new();
    for component in path.components() {
        match component {
            Component::Normal(name) => segments.push(name.to_str()?.to_string()),
            Component::ParentDir => {
                segments.pop();
            }
            Component::CurDir | Component::RootDir | Component::Prefix(_) => {}
        }
    }
    Some(segments)
}

#[cfg(test)]
mod tests;
