//! The error type of the `project` module: one enum for confinement, constraints, scanning
//! and `RUMMY_HOME`, with messages that can be shown to a client or a model as they are.

use std::path::PathBuf;

/// Everything that can go wrong while resolving, scanning or reading project files.
///
/// Messages of [`ProjectError::NameRequired`], [`ProjectError::HomeNotConfigured`] and
/// [`ProjectError::NotFound`] are the reference server's texts, which clients match on.
#[derive(Debug, thiserror::Error)]
pub enum ProjectError {
    /// The path was empty, or named the project root itself rather than something in it.
    #[error("path is empty or names the project root")]
    EmptyPath,
    /// The path contained a NUL byte, which no file name can hold.
    #[error("path contains a NUL byte: {0:?}")]
    NulByte(String),
    /// The path leaves the project root through `..` or names an absolute place outside it.
    #[error("path escapes project root: {0}")]
    EscapesRoot(String),
    /// The path stays under the root as written, but a symlink on the way points outside.
    #[error("path escapes project root through a symlink: {0}")]
    SymlinkEscape(String),
    /// Resolving the path's symlinks took too many hops (most likely a loop).
    #[error("too many levels of symbolic links: {0}")]
    SymlinkLoop(String),
    /// `init` named a project root outside the directories projects may live in.
    #[error("projectRoot {0} is not inside a directory this server keeps projects in")]
    OutsideProjectDirs(String),
    /// A stored project root no longer resolves to itself (a symlink was put in its way).
    #[error(
        "project root {} no longer leads to itself (a symbolic link was put in its way); \
         a project's root must stay where it was opened",
        .0.display()
    )]
    RootMoved(PathBuf),
    /// `init` named a root that is, contains or lies inside another project's root.
    #[error("projectRoot {0} overlaps the root of another project; project roots may not overlap")]
    RootOverlaps(String),
    /// The configured project root exists but is not a directory.
    #[error("project root is not a directory: {}", .0.display())]
    RootNotDirectory(PathBuf),
    /// A constraint pattern has a `..` segment after a wildcard, so its reach is unknowable.
    #[error("pattern has `..` after a wildcard: {0}")]
    ParentAfterWildcard(String),
    /// A constraint pattern is not a valid glob.
    #[error("invalid glob pattern {pattern}: {source}")]
    InvalidGlob {
        /// The pattern as normalized.
        pattern: String,
        /// What the glob compiler objected to.
        #[source]
        source: globset::Error,
    },
    /// A visibility string other than `active`, `readonly` or `ignore`.
    #[error("unknown visibility {0:?} (expected active, readonly or ignore)")]
    UnknownVisibility(String),
    /// A skill or persona name was empty.
    #[error("name is required")]
    NameRequired,
    /// A skill or persona name that could reach outside its directory.
    #[error("invalid name {0:?}: must not contain path separators, NUL or `..`")]
    InvalidName(String),
    /// A skill or persona name whose file name (`<name>.md`) is longer than file systems
    /// allow.
    #[error("name is too long: at most {max} bytes (its file name, with `.md`, may have 255)")]
    NameTooLong {
        /// The longest name accepted, in bytes.
        max: usize,
    },
    /// `RUMMY_HOME` is not set.
    #[error("RUMMY_HOME not configured")]
    HomeNotConfigured,
    /// A skill or persona file does not exist (its path under `RUMMY_HOME`).
    #[error("Not found: {}", .0.display())]
    NotFound(PathBuf),
    /// Any other I/O failure, with the path it happened on.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file or directory being accessed.
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

impl ProjectError {
    /// Wraps an I/O error with the path it happened on.
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Self::Io {
            path: path.into(),
            source,
        }
    }
}
