//! Scanning a project: walk the root (respecting `.gitignore`, `.ignore` and
//! `.git/info/exclude`, never entering `.git/`, never following symlinks), apply the file
//! constraints, read and hash each file, and compare with the hashes of the previous scan.
//!
//! Text files are loaded; binary files (a NUL byte or invalid UTF-8) and files over the size
//! limit are listed but not loaded. Only new or changed text files carry a body, so an
//! unchanged project costs hashing, never rewriting. Outlines are made later, for the
//! files the model reads at summary fidelity (`agent::outlines`).

mod content;

use std::collections::{HashMap, HashSet};
use std::fs;
use std::path::Path;

use ignore::{DirEntry, WalkBuilder};

use super::{ConstraintSet, ProjectError, ProjectPath, ProjectRoot, Visibility};

/// Default limit above which a file is listed but not read: 1 MiB.
pub(crate) const DEFAULT_MAX_FILE_BYTES: u64 = 1024 * 1024;

#[derive(Debug, Clone)]
pub(crate) struct ScanOptions {
    /// Files larger than this many bytes are listed as [`FileKind::TooLarge`], not read.
    pub max_file_bytes: u64,
    /// Whether dot-files and dot-directories are scanned (as `git ls-files` would list
    /// tracked ones). `.gitignore` still applies either way, and `.git/` is always skipped.
    pub include_hidden: bool,
}

/// What a scanned file holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FileKind {
    /// Valid UTF-8 without NUL bytes: the body is loaded.
    Text,
    /// Holds a NUL byte or is not UTF-8: listed, not loaded.
    Binary,
    /// Over [`ScanOptions::max_file_bytes`]: listed, not read.
    TooLarge,
}

/// How a file compares with the previous scan.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FileChange {
    /// Not in the previous scan.
    New,
    /// In the previous scan with another hash.
    Changed,
    /// Same hash as in the previous scan.
    Unchanged,
}

/// How much of a file the model is shown by default.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FileFidelity {
    /// The body (pinned by an `active` or `readonly` constraint).
    Full,
    /// The path only.
    Index,
}

/// One file found by a scan.
#[derive(Debug, Clone)]
pub(crate) struct ScannedFile {
    /// Path relative to the project root.
    pub path: ProjectPath,
    /// Size in bytes.
    pub size: u64,
    /// Hex SHA-256 of the content; for [`FileKind::TooLarge`] files, which are not read,
    /// `large:<size>:<mtime in ns>` instead.
    pub hash: String,
    /// Text, binary or too large.
    pub kind: FileKind,
    /// The constraint that applies (`active` or `readonly`; ignored files are not listed).
    pub constraint: Option<Visibility>,
    /// New, changed or unchanged since the previous scan.
    pub change: FileChange,
    /// The content, only for text files that are new or changed.
    pub body: Option<String>,
}

/// The result of one scan.
#[derive(Debug, Clone, Default)]
pub(crate) struct ScanReport {
    /// Every listed file, sorted by path.
    pub files: Vec<ScannedFile>,
    /// Previously known paths that are no longer part of the project (gone from disk, or now
    /// skipped by `.gitignore`), sorted.
    pub deleted: Vec<String>,
    /// Previously known paths that still exist but an `ignore` constraint now hides, sorted.
    pub ignored: Vec<String>,
    /// Problems that skipped a file or directory without failing the scan.
    pub warnings: Vec<String>,
}

impl Default for ScanOptions {
    fn default() -> Self {
        Self {
            max_file_bytes: DEFAULT_MAX_FILE_BYTES,
            include_hidden: true,
        }
    }
}

impl ScannedFile {
    /// The fidelity the file enters the model's view with.
    pub(crate) fn fidelity(&self) -> FileFidelity {
        match self.constraint {
            Some(Visibility::Active | Visibility::Readonly) => FileFidelity::Full,
            Some(Visibility::Ignore) | None => FileFidelity::Index,
        }
    }

    /// Whether the model may edit the file (false under a `readonly` constraint).
    pub(crate) fn is_editable(&self) -> bool {
        self.constraint != Some(Visibility::Readonly)
    }
}

/// Scans the project under `root`. `previous` maps each path known from the last scan to
/// its hash. Fails only when the root itself cannot be read; anything else becomes a
/// warning, and an unreadable file is neither listed nor reported deleted.
pub(crate) fn scan(
    root: &ProjectRoot,
    constraints: &ConstraintSet,
    previous: &HashMap<String, String>,
    options: &ScanOptions,
) -> Result<ScanReport, ProjectError> {
    let metadata =
        fs::metadata(root.path()).map_err(|error| ProjectError::io(root.path(), error))?;
    if !metadata.is_dir() {
        return Err(ProjectError::RootNotDirectory(root.path().to_path_buf()));
    }
    let mut scanner = Scanner::new(root, constraints, previous, options);
    for entry in walker(root, constraints, options).build() {
        scanner.visit_walked(entry);
    }
    for pinned in constraints.pinned_literals() {
        scanner.visit_pinned(pinned);
    }
    Ok(scanner.finish())
}

/// The one file a client names (a `get` of its literal path), listed as a scan would list
/// it, wherever the walk would or would not reach it (`.gitignore`, hidden files, a run
/// that does not scan): confined to the root, never a file an `ignore` constraint covers,
/// nothing when it is not a regular file. Nothing is reported deleted.
pub(crate) fn scan_file(
    root: &ProjectRoot,
    constraints: &ConstraintSet,
    literal: &str,
    previous: &HashMap<String, String>,
    options: &ScanOptions,
) -> Result<ScanReport, ProjectError> {
    let path = root.confine(literal)?;
    let mut scanner = Scanner::new(root, constraints, previous, options);
    if is_regular_file(&root.absolute(&path)) {
        scanner.add(path);
    }
    Ok(scanner.report)
}

fn walker(root: &ProjectRoot, constraints: &ConstraintSet, options: &ScanOptions) -> WalkBuilder {
    let mut builder = WalkBuilder::new(root.path());
    builder
        .hidden(!options.include_hidden)
        .git_ignore(true)
        .git_exclude(true)
        .git_global(false)
        .ignore(true)
        .parents(true)
        .require_git(false)
        .follow_links(false);
    let root_path = root.path().to_path_buf();
    let constraints = constraints.clone();
    builder.filter_entry(move |entry| {
        if entry.file_name() == ".git" {
            return false;
        }
        let is_dir = entry.file_type().is_some_and(|kind| kind.is_dir());
        let hidden_by_constraint = is_dir
            && relative_text(&root_path, entry.path())
                .is_some_and(|path| constraints.visibility_of(&path) == Some(Visibility::Ignore));
        !hidden_by_constraint
    });
    builder
}

struct Scanner<'a> {
    root: &'a ProjectRoot,
    constraints: &'a ConstraintSet,
    previous: &'a HashMap<String, String>,
    options: &'a ScanOptions,
    seen: HashSet<String>,
    report: ScanReport,
}

impl<'a> Scanner<'a> {
    fn new(
        root: &'a ProjectRoot,
        constraints: &'a ConstraintSet,
        previous: &'a HashMap<String, String>,
        options: &'a ScanOptions,
    ) -> Self {
        Scanner {
            root,
            constraints,
            previous,
            options,
            seen: HashSet::new(),
            report: ScanReport::default(),
        }
    }

    fn visit_walked(&mut self, entry: Result<DirEntry, ignore::Error>) {
        let entry = match entry {
            Ok(entry) => entry,
            Err(error) => {
                self.report.warnings.push(error.to_string());
                return;
            }
        };
        let Some(file_type) = entry.file_type() else {
            return;
        };
        if entry.depth() == 0 || file_type.is_dir() {
            return;
        }
        let Some(text) = relative_text(self.root.path(), entry.path()) else {
            self.report
                .warnings
                .push(format!("skipped non-UTF-8 path {}", entry.path().display()));
            return;
        };
        if file_type.is_symlink() {
            self.visit_symlink(&text);
        } else if file_type.is_file() {
            self.add(ProjectPath::from_confined(text));
        }
    }

    /// A symlink is listed when it resolves to a regular file inside the root; links to
    /// directories are not followed (their target, if inside, is walked on its own).
    fn visit_symlink(&mut self, text: &str) {
        match self.root.confine(text) {
            Ok(path) if is_regular_file(&self.root.absolute(&path)) => self.add(path),
            Ok(_) => {}
            Err(error) => self
                .report
                .warnings
                .push(format!("skipped {text}: {error}")),
        }
    }

    /// A file named by an `active` or `readonly` literal constraint is listed even when
    /// `.gitignore` or the hidden-file rule kept the walk from it.
    fn visit_pinned(&mut self, literal: &str) {
        if self.seen.contains(literal) || literal.split('/').any(|segment| segment == ".git") {
            return;
        }
        match self.root.confine(literal) {
            Ok(path) if is_regular_file(&self.root.absolute(&path)) => self.add(path),
            Ok(_) => {}
            Err(error) => self
                .report
                .warnings
                .push(format!("skipped constraint {literal}: {error}")),
        }
    }

    fn add(&mut self, path: ProjectPath) {
        let constraint = self.constraints.visibility_of(path.as_str());
        if constraint == Some(Visibility::Ignore) || !self.seen.insert(path.to_string()) {
            return;
        }
        let content = match content::read(&self.root.absolute(&path), self.options.max_file_bytes) {
            Ok(content) => content,
            Err(error) => {
                self.report
                    .warnings
                    .push(format!("skipped {path}: {error}"));
                return;
            }
        };
        let change = match self.previous.get(path.as_str()) {
            None => FileChange::New,
            Some(hash) if *hash == content.hash => FileChange::Unchanged,
            Some(_) => FileChange::Changed,
        };
        let body = match change {
            FileChange::New | FileChange::Changed => content.text,
            FileChange::Unchanged => None,
        };
        self.report.files.push(ScannedFile {
            path,
            size: content.size,
            hash: content.hash,
            kind: content.kind,
            constraint,
            change,
            body,
        });
    }

    fn finish(mut self) -> ScanReport {
        for path in self.previous.keys() {
            if self.seen.contains(path) {
                continue;
            }
            if self.still_exists_but_ignored(path) {
                self.report.ignored.push(path.clone());
            } else {
                self.report.deleted.push(path.clone());
            }
        }
        self.report.files.sort_by(|a, b| a.path.cmp(&b.path));
        self.report.deleted.sort();
        self.report.ignored.sort();
        self.report
    }

    fn still_exists_but_ignored(&self, path: &str) -> bool {
        self.constraints.visibility_of(path) == Some(Visibility::Ignore)
            && self
                .root
                .confine(path)
                .is_ok_and(|confined| is_regular_file(&self.root.absolute(&confined)))
    }
}

/// `path` relative to `root`, `/`-separated; `None` outside the root or when not UTF-8.
fn relative_text(root: &Path, path: &Path) -> Option<String> {
    let relative = path.strip_prefix(root).ok()?;
    let segments: Option<Vec<&str>> = relative
        .components()
        .map(|c| c.as_os_str().to_str())
        .collect();
    Some(segments?.join("/"))
}

fn is_regular_file(path: &Path) -> bool {
    fs::metadata(path).is_ok_and(|metadata| metadata.is_file())
}

#[cfg(test)]
mod tests;
