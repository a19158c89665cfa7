use std::fs;
use std::os::unix::fs::symlink;

use tempfile::TempDir;

use super::*;

/// A temp directory holding a project root `proj/` and a sibling `outside/`.
struct Fixture {
    dir: TempDir,
}

impl Fixture {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir_all(dir.path().join("proj/src")).unwrap();
        fs::create_dir_all(dir.path().join("outside")).unwrap();
        fs::write(dir.path().join("proj/src/main.rs"), "fn main() {}").unwrap();
        fs::write(dir.path().join("outside/secret"), "secret").unwrap();
        Self { dir }
    }

    fn proj(&self) -> PathBuf {
        self.dir.path().join("proj")
    }

    fn outside(&self) -> PathBuf {
        self.dir.path().join("outside")
    }

    fn root(&self) -> ProjectRoot {
        ProjectRoot::new(self.proj()).unwrap()
    }
}

fn confined(root: &ProjectRoot, raw: &str) -> String {
    root.confine(raw).unwrap().into_string()
}

#[test]
fn plain_relative_paths_are_kept() {
    let fixture = Fixture::new();
    let root = fixture.root();
    assert_eq!(confined(&root, "src/main.rs"), "src/main.rs");
    assert_eq!(confined(&root, "README.md"), "README.md");
}

#[test]
fn dots_and_repeated_slashes_are_normalized() {
    let fixture = Fixture::new();
    let root = fixture.root();
    assert_eq!(confined(&root, "./src//main.rs"), "src/main.rs");
    assert_eq!(confined(&root, "src/../src/./main.rs"), "src/main.rs");
    assert_eq!(confined(&root, "src/"), "src");
    assert_eq!(confined(&root, "a/b/../../c"), "c");
}

#[test]
fn parent_segments_that_escape_are_refused() {
    let fixture = Fixture::new();
    let root = fixture.root();
    for raw in ["..", "../outside/secret", "src/../../outside", "a/../../b"] {
        assert!(
            matches!(root.confine(raw), Err(ProjectError::EscapesRoot(ref p)) if p == raw),
            "{raw} should escape"
        );
    }
}

#[test]
fn empty_and_root_itself_are_refused() {
    let fixture = Fixture::new();
    let root = fixture.root();
    for raw in ["", ".", "./", "src/.."] {
        assert!(
            matches!(root.confine(raw), Err(ProjectError::EmptyPath)),
            "{raw}"
        );
    }
    let root_spelled_absolute = fixture.proj().display().to_string();
    assert!(matches!(
        root.confine(&root_spelled_absolute),
        Err(ProjectError::EmptyPath)
    ));
}

#[test]
fn nul_bytes_are_refused() {
    let fixture = Fixture::new();
    let root = fixture.root();
    assert!(matches!(
        root.confine("src/main.rs\0.txt"),
        Err(ProjectError::NulByte(_))
    ));
}

#[test]
fn absolute_paths_inside_become_relative() {
    let fixture = Fixture::new();
    let root = fixture.root();
    let given = format!("{}/src/main.rs", fixture.proj().display());
    assert_eq!(confined(&root, &given), "src/main.rs");
    let canonical = format!("{}/src/main.rs", root.path().display());
    assert_eq!(confined(&root, &canonical), "src/main.rs");
    let roundabout = format!("{}/../proj/src/new.rs", fixture.proj().display());
    assert_eq!(confined(&root, &roundabout), "src/new.rs");
}

#[test]
fn absolute_paths_outside_are_refused() {
    let fixture = Fixture::new();
    let root = fixture.root();
    let sibling = format!("{}/secret", fixture.outside().display());
    let prefix_lookalike = format!("{}-other/x", fixture.proj().display());
    for raw in [
        "/",
        "/etc/passwd",
        sibling.as_str(),
        prefix_lookalike.as_str(),
    ] {
        assert!(
            matches!(root.confine(raw), Err(ProjectError::EscapesRoot(_))),
            "{raw}"
        );
    }
}

#[test]
fn paths_that_do_not_exist_yet_are_accepted() {
    let fixture = Fixture::new();
    let root = fixture.root();
    assert_eq!(confined(&root, "new/dir/file.rs"), "new/dir/file.rs");
    assert!(!root
        .absolute(&root.confine("new/dir/file.rs").unwrap())
        .exists());
}

#[test]
fn symlinked_directory_outside_is_refused() {
    let fixture = Fixture::new();
    symlink(fixture.outside(), fixture.proj().join("escape")).unwrap();
    let root = fixture.root();
    for raw in [
        "escape",
        "escape/secret",
        "escape/new-file",
        "src/../escape/secret",
    ] {
        assert!(
            matches!(root.confine(raw), Err(ProjectError::SymlinkEscape(_))),
            "{raw}"
        );
    }
}

#[test]
fn symlinked_file_outside_is_refused() {
    let fixture = Fixture::new();
    symlink(
        fixture.outside().join("secret"),
        fixture.proj().join("src/secret"),
    )
    .unwrap();
    let root = fixture.root();
    assert!(matches!(
        root.confine("src/secret"),
        Err(ProjectError::SymlinkEscape(_))
    ));
}

#[test]
fn relative_symlink_climbing_out_is_refused() {
    let fixture = Fixture::new();
    symlink("../../outside", fixture.proj().join("src/up")).unwrap();
    let root = fixture.root();
    assert!(matches!(
        root.confine("src/up/secret"),
        Err(ProjectError::SymlinkEscape(_))
    ));
}

#[test]
fn dangling_symlink_pointing_outside_is_refused() {
    let fixture = Fixture::new();
    symlink(
        fixture.outside().join("not-yet"),
        fixture.proj().join("dangling"),
    )
    .unwrap();
    let root = fixture.root();
    assert!(matches!(
        root.confine("dangling"),
        Err(ProjectError::SymlinkEscape(_))
    ));
}

#[test]
fn chained_symlinks_ending_outside_are_refused() {
    let fixture = Fixture::new();
    symlink(fixture.outside(), fixture.proj().join("hop2")).unwrap();
    symlink("hop2", fixture.proj().join("hop1")).unwrap();
    let root = fixture.root();
    assert!(matches!(
        root.confine("hop1/secret"),
        Err(ProjectError::SymlinkEscape(_))
    ));
}

#[test]
fn symlinks_staying_inside_are_accepted() {
    let fixture = Fixture::new();
    symlink("src", fixture.proj().join("source")).unwrap();
    symlink(
        fixture.proj().join("src/main.rs"),
        fixture.proj().join("main-link.rs"),
    )
    .unwrap();
    symlink("../proj/src", fixture.proj().join("roundabout")).unwrap();
    let root = fixture.root();
    assert_eq!(confined(&root, "source/main.rs"), "source/main.rs");
    assert_eq!(confined(&root, "main-link.rs"), "main-link.rs");
    assert_eq!(confined(&root, "roundabout/main.rs"), "roundabout/main.rs");
}

#[test]
fn symlink_loops_are_reported() {
    let fixture = Fixture::new();
    symlink("loop-b", fixture.proj().join("loop-a")).unwrap();
    symlink("loop-a", fixture.proj().join("loop-b")).unwrap();
    let root = fixture.root();
    assert!(matches!(
        root.confine("loop-a/x"),
        Err(ProjectError::SymlinkLoop(_))
    ));
}

#[test]
fn a_root_that_no_longer_leads_to_itself_is_refused() {
    let fixture = Fixture::new();
    let alias = fixture.dir.path().join("alias");
    symlink(fixture.proj(), &alias).unwrap();
    assert!(
        matches!(ProjectRoot::new(&alias), Err(ProjectError::RootMoved(ref root)) if *root == alias),
        "a stored root a symlink now stands in for"
    );
    let nested = fixture.dir.path().join("alias/src");
    assert!(matches!(
        ProjectRoot::new(&nested),
        Err(ProjectError::RootMoved(_))
    ));
    let root = fixture.root();
    let via_alias = format!("{}/src/main.rs", alias.display());
    assert!(matches!(
        root.confine(&via_alias),
        Err(ProjectError::EscapesRoot(_))
    ));
}

#[test]
fn resolve_follows_symlinks_and_keeps_the_missing_part() {
    let fixture = Fixture::new();
    let alias = fixture.dir.path().join("alias");
    symlink(fixture.proj(), &alias).unwrap();
    let real = fs::canonicalize(fixture.proj()).unwrap();
    assert_eq!(resolve(&alias).unwrap(), real);
    assert_eq!(
        resolve(&alias.join("not/yet")).unwrap(),
        real.join("not/yet")
    );
    assert_eq!(
        resolve(&alias.join("src/../../outside")).unwrap(),
        fs::canonicalize(fixture.outside()).unwrap(),
        "a `..` after a symlink climbs from its target"
    );
    symlink("loop", fixture.dir.path().join("loop")).unwrap();
    assert!(matches!(
        resolve(&fixture.dir.path().join("loop/x")),
        Err(ProjectError::SymlinkLoop(_))
    ));
    assert!(matches!(
        resolve(Path::new("relative")),
        Err(ProjectError::EscapesRoot(_))
    ));
}

#[test]
fn root_must_be_an_existing_directory() {
    let fixture = Fixture::new();
    assert!(matches!(
        ProjectRoot::new(fixture.proj().join("src/main.rs")),
        Err(ProjectError::RootNotDirectory(_))
    ));
    assert!(matches!(
        ProjectRoot::new(fixture.proj().join("missing")),
        Err(ProjectError::Io { .. })
    ));
}

#[test]
fn absolute_joins_under_the_canonical_root() {
    let fixture = Fixture::new();
    let root = fixture.root();
    let path = root.confine("src/main.rs").unwrap();
    assert_eq!(
        root.absolute(&path),
        fs::canonicalize(fixture.proj().join("src/main.rs")).unwrap()
    );
}

mod properties {
    use proptest::prelude::*;

    use super::*;

    proptest! {
        #[test]
        fn confined_paths_are_normalized_and_never_panic(raw in "[a-z./\\\\\0 ]{0,24}") {
            let fixture = Fixture::new();
            let root = fixture.root();
            if let Ok(path) = root.confine(&raw) {
                let text = path.as_str();
                prop_assert!(!text.is_empty());
                prop_assert!(!text.starts_with('/'));
                prop_assert!(text.split('/').all(|s| !s.is_empty() && s != "." && s != ".."));
                prop_assert!(root.absolute(&path).starts_with(root.path()));
            }
        }
    }
}

#[test]
fn a_chain_of_as_many_symlinks_as_allowed_resolves_and_one_more_is_a_loop() {
    let fixture = Fixture::new();
    let link = |index: usize| fixture.proj().join(format!("link-{index}"));
    symlink("src", link(1)).unwrap();
    for index in 2..=MAX_SYMLINK_HOPS + 1 {
        symlink(format!("link-{}", index - 1), link(index)).unwrap();
    }
    let real = fs::canonicalize(fixture.proj().join("src/main.rs")).unwrap();
    assert_eq!(
        resolve(&link(MAX_SYMLINK_HOPS).join("main.rs")).unwrap(),
        real
    );
    assert!(matches!(
        resolve(&link(MAX_SYMLINK_HOPS + 1).join("main.rs")),
        Err(ProjectError::SymlinkLoop(_))
    ));
}

#[test]
fn a_path_through_a_file_is_an_error_not_a_new_path() {
    let fixture = Fixture::new();
    assert!(matches!(
        resolve(&fixture.proj().join("src/main.rs/below")),
        Err(ProjectError::Io { .. })
    ));
}
