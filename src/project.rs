//! Projects on disk: everything the server knows about a project's files and the operator's
//! `RUMMY_HOME`, as pure blocking library code (no actors, no database).
//!
//! * [`confine`] turns a client- or model-supplied path into a [`ProjectPath`] that provably
//!   stays under the project root, symlinks included.
//! * [`constraint`] normalizes and matches file constraints (`active`, `readonly`, `ignore`).
//! * [`mod@scan`] walks the project (respecting `.gitignore`), hashes files and reports what is
//!   new, changed, unchanged or gone since the previous scan.
//! * [`outline`] lists a source file's definitions with their lines (tree-sitter).
//! * [`home`] lays out and reads `$RUMMY_HOME/skills` and `$RUMMY_HOME/personas`;
//!   [`skill`] reads a skill's front matter.
//!
//! Every function here touches the file system synchronously: call it from a blocking
//! context (`web::block`, a sync actor), never from an async executor thread.

pub(crate) mod confine;
pub(crate) mod constraint;
mod error;
pub(crate) mod home;
pub(crate) mod outline;
pub(crate) mod patterns;
pub(crate) mod roots;
pub(crate) mod scan;
pub(crate) mod skill;

pub(crate) use confine::{ProjectPath, ProjectRoot};
pub(crate) use constraint::{ConstraintPattern, ConstraintSet, FileConstraint, Visibility};
pub(crate) use error::ProjectError;
pub(crate) use home::{DocumentKind, HomeDocument, RummyHome};
pub(crate) use roots::{canonical_dirs, ProjectDirs};
pub(crate) use scan::{
    scan, scan_file, FileChange, FileFidelity, FileKind, ScanOptions, ScanReport,
};
pub(crate) use skill::Skill;
