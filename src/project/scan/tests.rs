use std::fs;
use std::os::unix::fs::symlink;
use std::path::PathBuf;

use tempfile::TempDir;

use super::*;
use crate::project::{ConstraintPattern, FileConstraint};

/// SHA-256 of "abc" (FIPS 180-2 test vector).
const ABC_SHA256: &str = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";

struct Project {
    dir: TempDir,
}

impl Project {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir(dir.path().join("proj")).unwrap();
        Self { dir }
    }

    fn path(&self) -> PathBuf {
        self.dir.path().join("proj")
    }

    fn write(&self, relative: &str, content: impl AsRef<[u8]>) -> &Self {
        let path = self.path().join(relative);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, content).unwrap();
        self
    }

    fn root(&self) -> ProjectRoot {
        ProjectRoot::new(self.path()).unwrap()
    }

    fn constraints(&self, rules: &[(&str, Visibility)]) -> ConstraintSet {
        let root = self.root();
        ConstraintSet::new(rules.iter().map(|(raw, visibility)| FileConstraint {
            pattern: ConstraintPattern::normalize(&root, raw).unwrap(),
            visibility: *visibility,
        }))
        .unwrap()
    }

    fn scan_with(
        &self,
        constraints: &ConstraintSet,
        previous: &HashMap<String, String>,
        options: &ScanOptions,
    ) -> ScanReport {
        scan(&self.root(), constraints, previous, options).unwrap()
    }

    fn scan(&self) -> ScanReport {
        self.scan_with(
            &ConstraintSet::default(),
            &HashMap::new(),
            &ScanOptions::default(),
        )
    }
}

fn paths(report: &ScanReport) -> Vec<&str> {
    report.files.iter().map(|file| file.path.as_str()).collect()
}

fn file<'a>(report: &'a ScanReport, path: &str) -> &'a ScannedFile {
    report
        .files
        .iter()
        .find(|file| file.path.as_str() == path)
        .unwrap_or_else(|| panic!("{path} not listed in {:?}", paths(report)))
}

fn hashes(report: &ScanReport) -> HashMap<String, String> {
    report
        .files
        .iter()
        .map(|file| (file.path.to_string(), file.hash.clone()))
        .collect()
}

#[test]
fn text_files_are_listed_sorted_with_hash_size_and_body() {
    let project = Project::new();
    project.write("src/b.rs", "abc").write("a.md", "# title\n");
    let report = project.scan();
    assert_eq!(paths(&report), vec!["a.md", "src/b.rs"]);
    let b = file(&report, "src/b.rs");
    assert_eq!(b.hash, ABC_SHA256);
    assert_eq!(b.size, 3);
    assert_eq!(b.kind, FileKind::Text);
    assert_eq!(b.body.as_deref(), Some("abc"));
    assert_eq!(b.change, FileChange::New);
    assert!(report.warnings.is_empty(), "{:?}", report.warnings);
}

#[test]
fn binary_files_are_listed_but_not_loaded() {
    let project = Project::new();
    project
        .write("nul.bin", b"ab\0cd")
        .write("latin1.txt", [0x63, 0x61, 0x66, 0xe9]);
    let report = project.scan();
    for path in ["nul.bin", "latin1.txt"] {
        let scanned = file(&report, path);
        assert_eq!(scanned.kind, FileKind::Binary, "{path}");
        assert_eq!(scanned.body, None, "{path}");
        assert_eq!(scanned.hash.len(), 64, "{path}");
    }
}

#[test]
fn files_over_the_limit_are_listed_but_not_read() {
    let project = Project::new();
    project
        .write("big.txt", "x".repeat(11))
        .write("small.txt", "x".repeat(10));
    let options = ScanOptions {
        max_file_bytes: 10,
        ..ScanOptions::default()
    };
    let report = project.scan_with(&ConstraintSet::default(), &HashMap::new(), &options);
    let big = file(&report, "big.txt");
    assert_eq!(big.kind, FileKind::TooLarge);
    assert_eq!(big.size, 11);
    assert_eq!(big.body, None);
    assert!(big.hash.starts_with("large:11:"), "{}", big.hash);
    assert_eq!(file(&report, "small.txt").kind, FileKind::Text);
}

#[test]
fn ignore_files_are_respected_without_a_git_repository() {
    let project = Project::new();
    project
        .write(".gitignore", "target/\n*.log\n")
        .write(".ignore", "secret.txt\n")
        .write("target/out.rs", "x")
        .write("run.log", "x")
        .write("secret.txt", "x")
        .write("src/nested/.gitignore", "gen.rs\n")
        .write("src/nested/gen.rs", "x")
        .write("src/nested/kept.rs", "x");
    let report = project.scan();
    assert_eq!(
        paths(&report),
        vec![
            ".gitignore",
            ".ignore",
            "src/nested/.gitignore",
            "src/nested/kept.rs"
        ]
    );
}

#[test]
fn git_directory_and_git_file_are_never_listed() {
    let project = Project::new();
    project
        .write(".git/HEAD", "ref: refs/heads/main\n")
        .write(".git/info/exclude", "excluded.txt\n")
        .write("excluded.txt", "x")
        .write("sub/.git", "gitdir: ../.git/modules/sub\n")
        .write("sub/lib.rs", "x");
    let report = project.scan();
    assert_eq!(paths(&report), vec!["sub/lib.rs"]);
}

#[test]
fn hidden_files_are_included_by_default_and_can_be_skipped() {
    let project = Project::new();
    project.write(".github/ci.yml", "x").write("main.rs", "x");
    assert_eq!(paths(&project.scan()), vec![".github/ci.yml", "main.rs"]);
    let options = ScanOptions {
        include_hidden: false,
        ..ScanOptions::default()
    };
    let report = project.scan_with(&ConstraintSet::default(), &HashMap::new(), &options);
    assert_eq!(paths(&report), vec!["main.rs"]);
}

#[test]
fn constraints_set_fidelity_editability_and_exclusion() {
    let project = Project::new();
    project
        .write("active.rs", "x")
        .write("locked.rs", "x")
        .write("plain.rs", "x")
        .write("build/gen.rs", "x")
        .write("notes.tmp", "x");
    let constraints = project.constraints(&[
        ("active.rs", Visibility::Active),
        ("locked.rs", Visibility::Readonly),
        ("build", Visibility::Ignore),
        ("*.tmp", Visibility::Ignore),
    ]);
    let report = project.scan_with(&constraints, &HashMap::new(), &ScanOptions::default());
    assert_eq!(paths(&report), vec!["active.rs", "locked.rs", "plain.rs"]);
    let active = file(&report, "active.rs");
    assert_eq!(
        (active.fidelity(), active.is_editable()),
        (FileFidelity::Full, true)
    );
    let locked = file(&report, "locked.rs");
    assert_eq!(
        (locked.fidelity(), locked.is_editable()),
        (FileFidelity::Full, false)
    );
    let plain = file(&report, "plain.rs");
    assert_eq!(
        (plain.fidelity(), plain.is_editable()),
        (FileFidelity::Index, true)
    );
}

#[test]
fn change_detection_reports_new_changed_unchanged_deleted_and_ignored() {
    let project = Project::new();
    project
        .write("same.rs", "same")
        .write("edit.rs", "before")
        .write("gone.rs", "x")
        .write("hide.rs", "x");
    let first = project.scan();
    let previous = hashes(&first);
    project.write("edit.rs", "after").write("fresh.rs", "new");
    fs::remove_file(project.path().join("gone.rs")).unwrap();
    let constraints = project.constraints(&[("hide.rs", Visibility::Ignore)]);
    let second = project.scan_with(&constraints, &previous, &ScanOptions::default());

    let same = file(&second, "same.rs");
    assert_eq!(
        (same.change, same.body.as_deref()),
        (FileChange::Unchanged, None)
    );
    assert_eq!(same.hash, previous["same.rs"]);
    let edit = file(&second, "edit.rs");
    assert_eq!(
        (edit.change, edit.body.as_deref()),
        (FileChange::Changed, Some("after"))
    );
    assert_ne!(edit.hash, previous["edit.rs"]);
    let fresh = file(&second, "fresh.rs");
    assert_eq!(
        (fresh.change, fresh.body.as_deref()),
        (FileChange::New, Some("new"))
    );
    assert_eq!(second.deleted, vec!["gone.rs"]);
    assert_eq!(second.ignored, vec!["hide.rs"]);
}

#[test]
fn newly_gitignored_files_count_as_deleted() {
    let project = Project::new();
    project.write("cache.db", "x").write("main.rs", "x");
    let previous = hashes(&project.scan());
    project.write(".gitignore", "cache.db\n");
    let report = project.scan_with(
        &ConstraintSet::default(),
        &previous,
        &ScanOptions::default(),
    );
    assert_eq!(report.deleted, vec!["cache.db"]);
}

#[test]
fn too_large_fingerprint_changes_with_the_file() {
    let project = Project::new();
    project.write("big.txt", "x".repeat(20));
    let options = ScanOptions {
        max_file_bytes: 10,
        ..ScanOptions::default()
    };
    let previous = hashes(&project.scan_with(&ConstraintSet::default(), &HashMap::new(), &options));
    project.write("big.txt", "x".repeat(30));
    let report = project.scan_with(&ConstraintSet::default(), &previous, &options);
    assert_eq!(file(&report, "big.txt").change, FileChange::Changed);
}

#[test]
fn symlinks_inside_are_listed_and_escaping_ones_are_skipped() {
    let project = Project::new();
    project.write("src/real.rs", "abc");
    fs::write(project.dir.path().join("secret"), "secret").unwrap();
    symlink("src/real.rs", project.path().join("alias.rs")).unwrap();
    symlink(
        project.dir.path().join("secret"),
        project.path().join("leak"),
    )
    .unwrap();
    symlink(project.dir.path(), project.path().join("parent")).unwrap();
    symlink("src", project.path().join("src-link")).unwrap();
    let report = project.scan();
    assert_eq!(paths(&report), vec!["alias.rs", "src/real.rs"]);
    assert_eq!(file(&report, "alias.rs").hash, ABC_SHA256);
    assert!(
        report
            .warnings
            .iter()
            .any(|warning| warning.contains("leak")),
        "{:?}",
        report.warnings
    );
}

#[test]
fn pinned_literals_are_listed_even_when_gitignored_or_hidden() {
    let project = Project::new();
    project
        .write(".gitignore", "generated/\n")
        .write("generated/api.rs", "x")
        .write("generated/other.rs", "x")
        .write("vendor/lib.rs", "x")
        .write("vendor/junk.rs", "x");
    let constraints = project.constraints(&[
        ("generated/api.rs", Visibility::Readonly),
        ("vendor", Visibility::Ignore),
        ("vendor/lib.rs", Visibility::Active),
        ("missing.rs", Visibility::Active),
    ]);
    let options = ScanOptions {
        include_hidden: false,
        ..ScanOptions::default()
    };
    let report = project.scan_with(&constraints, &HashMap::new(), &options);
    assert_eq!(paths(&report), vec!["generated/api.rs", "vendor/lib.rs"]);
    assert_eq!(
        file(&report, "generated/api.rs").constraint,
        Some(Visibility::Readonly)
    );
}

#[test]
fn a_vanished_root_is_an_error_not_a_mass_deletion() {
    let project = Project::new();
    project.write("a.rs", "x");
    let root = project.root();
    let previous = hashes(&project.scan());
    fs::remove_dir_all(project.path()).unwrap();
    let result = scan(
        &root,
        &ConstraintSet::default(),
        &previous,
        &ScanOptions::default(),
    );
    assert!(matches!(result, Err(ProjectError::Io { .. })));
}

#[test]
fn files_inside_an_ignored_directory_are_reported_ignored_not_deleted() {
    let project = Project::new();
    project.write("build/gen.rs", "x").write("main.rs", "x");
    let previous = hashes(&project.scan());
    let constraints = project.constraints(&[("build", Visibility::Ignore)]);
    let report = project.scan_with(&constraints, &previous, &ScanOptions::default());
    assert_eq!(paths(&report), vec!["main.rs"]);
    assert_eq!(report.ignored, vec!["build/gen.rs"]);
    assert!(report.deleted.is_empty(), "{:?}", report.deleted);
}
