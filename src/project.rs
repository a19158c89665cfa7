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

pub mod confine;
pub mod constraint;
mod error;
pub mod home;
pub mod outline;
pub mod patterns;
pub mod roots;
pub mod scan;
pub mod skill;

pub use confine::{ProjectPath, ProjectRoot};
pub use constraint::{ConstraintPattern, ConstraintSet, FileConstraint, Visibility};
pub use error::ProjectError;
pub use home::{validate_document_name, DocumentKind, HomeDocument, LoadedDocument, RummyHome};
pub use roots::{canonical_dirs, ProjectDirs};
pub use scan::{
    scan, scan_file, FileChange, FileFidelity, FileKind, ScanOptions, ScanReport, ScannedFile,
};
pub use skill::Skill;
