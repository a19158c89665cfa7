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
pub(crate) struct ProjectRoot {
    canonical: PathBuf,
    /// The root's components as strings, which an absolute client path may start with;
    /// `None` when one is not UTF-8 (no client can spell that root).
    segments: Option<Vec<String>>,
}

/// A normalized path relative to a project root, using `/` as separator, never empty,
/// without `.` or `..` segments, and not escaping the root through any symlink at the time
/// it was checked.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct ProjectPath(String);

impl ProjectRoot {
    /// The project root `root`, which must be an existing directory that resolves to itself:
    /// `init` stores every root resolved, so a root that now resolves elsewhere had a
    /// symlink put in its way after it was stored, and might lead into another project.
    pub(crate) fn new(root: impl AsRef<Path>) -> Result<Self, ProjectError> {
        let root = root.as_ref();
        let canonical = fs::canonicalize(root).map_err(|source| ProjectError::io(root, source))?;
        if !canonical.is_dir() {
            return Err(ProjectError::RootNotDirectory(root.to_path_buf()));
        }
        if canonical != root {
            return Err(ProjectError::RootMoved(root.to_path_buf()));
        }
        let segments = utf8_segments(&canonical);
        Ok(Self {
            canonical,
            segments,
        })
    }

    /// The canonical absolute path of the root (symlinks resolved).
    pub(crate) fn path(&self) -> &Path {
        &self.canonical
    }

    /// Confines `raw` to the project: returns its normalized relative path, or an error if it
    /// is empty, holds a NUL byte, escapes with `..`, is absolute outside the root, or passes
    /// through a symlink that resolves outside the root. The path need not exist.
    pub(crate) fn confine(&self, raw: &str) -> Result<ProjectPath, ProjectError> {
        let segments = self.relative_segments(raw)?;
        if segments.is_empty() {
            return Err(ProjectError::EmptyPath);
        }
        self.check_symlinks(&segments, raw)?;
        Ok(ProjectPath(segments.join("/")))
    }

    /// The absolute path of a confined path, under the canonical root.
    pub(crate) fn absolute(&self, path: &ProjectPath) -> PathBuf {
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
        self.segments
            .as_deref()
            .and_then(|root| absolute.strip_prefix(root))
            .map(<[String]>::to_vec)
            .ok_or_else(escaped)
    }

    /// Checks that the normalized path, followed as the kernel would, lands under the root.
    fn check_symlinks(&self, segments: &[String], raw: &str) -> Result<(), ProjectError> {
        let landing = follow(
            self.canonical.clone(),
            segments.iter().map(OsString::from),
            raw,
        )?;
        if landing.starts_with(&self.canonical) {
            Ok(())
        } else {
            Err(ProjectError::SymlinkEscape(raw.to_string()))
        }
    }
}

/// Where `segments`, taken from `start` one by one, lead, following every symlink on the
/// way as the kernel would (a `..` after a symlink climbs from its target). Segments that do
/// not exist yet are taken as written, so paths of new files and roots are resolved too.
/// The one walk behind every confinement: of a path under a root ([`ProjectRoot::confine`])
/// and of a root itself ([`resolve`]).
fn follow(
    start: PathBuf,
    segments: impl IntoIterator<Item = OsString>,
    raw: &str,
) -> Result<PathBuf, ProjectError> {
    let mut current = start;
    let mut pending: VecDeque<OsString> = segments.into_iter().collect();
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
    Ok(current)
}

/// Where the absolute `path` really is: every symlink on the way followed (see [`follow`]),
/// its missing part taken as written. What `init` stores as a project's root.
pub(crate) fn resolve(path: &Path) -> Result<PathBuf, ProjectError> {
    let raw = path.display().to_string();
    if !path.is_absolute() {
        return Err(ProjectError::EscapesRoot(raw));
    }
    let segments = path.components().filter_map(|component| match component {
        Component::Normal(name) => Some(name.to_os_string()),
        Component::ParentDir => Some(OsString::from("..")),
        Component::CurDir | Component::RootDir | Component::Prefix(_) => None,
    });
    follow(PathBuf::from("/"), segments, &raw)
}

impl ProjectPath {
    /// Wraps a path the caller has already normalized and confined.
    pub(crate) fn from_confined(path: String) -> Self {
        Self(path)
    }

    /// The path as a string, e.g. `src/main.rs`.
    pub(crate) fn as_str(&self) -> &str {
        &self.0
    }

    /// The path as an owned string.
    #[cfg(test)]
    pub(crate) fn into_string(self) -> String {
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
