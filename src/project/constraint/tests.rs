use std::fs;

use tempfile::TempDir;

use super::*;

fn project() -> (TempDir, ProjectRoot) {
    let dir = tempfile::tempdir().unwrap();
    let root = ProjectRoot::new(dir.path()).unwrap();
    (dir, root)
}

fn pattern(root: &ProjectRoot, raw: &str) -> ConstraintPattern {
    ConstraintPattern::normalize(root, raw).unwrap()
}

fn set(root: &ProjectRoot, rules: &[(&str, Visibility)]) -> ConstraintSet {
    ConstraintSet::new(rules.iter().map(|(raw, visibility)| FileConstraint {
        pattern: pattern(root, raw),
        visibility: *visibility,
    }))
    .unwrap()
}

#[test]
fn visibility_round_trips_through_text_and_serde() {
    for visibility in [Visibility::Active, Visibility::Readonly, Visibility::Ignore] {
        assert_eq!(
            visibility.as_str().parse::<Visibility>().unwrap(),
            visibility
        );
        let json = serde_json::to_string(&visibility).unwrap();
        assert_eq!(json, format!("\"{}\"", visibility.as_str()));
    }
    assert!(matches!(
        "hidden".parse::<Visibility>(),
        Err(ProjectError::UnknownVisibility(ref text)) if text == "hidden"
    ));
}

#[test]
fn relative_patterns_are_normalized() {
    let (_dir, root) = project();
    assert_eq!(pattern(&root, "./src//app.js").as_str(), "src/app.js");
    assert_eq!(pattern(&root, "src/").as_str(), "src");
    assert_eq!(pattern(&root, "a/../src/*.rs").as_str(), "src/*.rs");
    assert!(!pattern(&root, "src/app.js").is_glob());
    assert!(pattern(&root, "src/**").is_glob());
    assert!(pattern(&root, "file?.txt").is_glob());
}

#[test]
fn absolute_patterns_inside_the_root_become_relative() {
    let (dir, root) = project();
    let raw = format!("{}/src/*.rs", dir.path().display());
    assert_eq!(pattern(&root, &raw).as_str(), "src/*.rs");
}

#[test]
fn escaping_and_malformed_patterns_are_refused() {
    let (_dir, root) = project();
    let refuse = |raw: &str| ConstraintPattern::normalize(&root, raw).unwrap_err();
    assert!(matches!(
        refuse("../other/*.rs"),
        ProjectError::EscapesRoot(_)
    ));
    assert!(matches!(refuse("/etc/*"), ProjectError::EscapesRoot(_)));
    assert!(matches!(
        refuse("**/../../x"),
        ProjectError::ParentAfterWildcard(_)
    ));
    assert!(matches!(refuse(""), ProjectError::EmptyPath));
    assert!(matches!(refuse("./"), ProjectError::EmptyPath));
    assert!(matches!(refuse("a\0*"), ProjectError::NulByte(_)));
    assert!(matches!(
        refuse("src/[*.rs"),
        ProjectError::InvalidGlob { .. }
    ));
}

#[test]
fn literal_matches_the_file_and_everything_below_a_directory() {
    let (_dir, root) = project();
    let constraints = set(
        &root,
        &[
            ("src", Visibility::Active),
            ("README.md", Visibility::Readonly),
        ],
    );
    assert_eq!(constraints.visibility_of("src"), Some(Visibility::Active));
    assert_eq!(
        constraints.visibility_of("src/a/b.rs"),
        Some(Visibility::Active)
    );
    assert_eq!(
        constraints.visibility_of("README.md"),
        Some(Visibility::Readonly)
    );
    assert_eq!(constraints.visibility_of("srcs/a.rs"), None);
    assert_eq!(constraints.visibility_of("docs/README.md"), None);
}

#[test]
fn star_stays_in_one_segment_and_double_star_crosses() {
    let (_dir, root) = project();
    let constraints = set(
        &root,
        &[
            ("src/*.rs", Visibility::Active),
            ("docs/**", Visibility::Ignore),
        ],
    );
    assert_eq!(
        constraints.visibility_of("src/main.rs"),
        Some(Visibility::Active)
    );
    assert_eq!(constraints.visibility_of("src/deep/main.rs"), None);
    assert_eq!(
        constraints.visibility_of("docs/a/b/c.md"),
        Some(Visibility::Ignore)
    );
    assert_eq!(
        constraints.visibility_of("src/.hidden.rs"),
        Some(Visibility::Active)
    );
}

#[test]
fn specific_literals_beat_globs_and_ties_go_to_the_most_restrictive() {
    let (_dir, root) = project();
    let constraints = set(
        &root,
        &[
            ("vendor/**", Visibility::Ignore),
            ("vendor/lib.rs", Visibility::Active),
            ("vendor/keep", Visibility::Readonly),
            ("**/*.rs", Visibility::Active),
            ("src/*", Visibility::Readonly),
        ],
    );
    assert_eq!(
        constraints.visibility_of("vendor/lib.rs"),
        Some(Visibility::Active)
    );
    assert_eq!(
        constraints.visibility_of("vendor/keep/x.rs"),
        Some(Visibility::Readonly)
    );
    assert_eq!(
        constraints.visibility_of("vendor/other.rs"),
        Some(Visibility::Ignore)
    );
    assert_eq!(
        constraints.visibility_of("src/main.rs"),
        Some(Visibility::Readonly)
    );
    assert_eq!(
        constraints.visibility_of("lib/main.rs"),
        Some(Visibility::Active)
    );
}

#[test]
fn duplicate_literals_keep_the_most_restrictive() {
    let (_dir, root) = project();
    let constraints = set(
        &root,
        &[
            ("a.txt", Visibility::Readonly),
            ("a.txt", Visibility::Active),
        ],
    );
    assert_eq!(
        constraints.visibility_of("a.txt"),
        Some(Visibility::Readonly)
    );
}

#[test]
fn pinned_literals_exclude_ignores_and_globs() {
    let (_dir, root) = project();
    let constraints = set(
        &root,
        &[
            (".env", Visibility::Active),
            ("build", Visibility::Ignore),
            ("*.lock", Visibility::Readonly),
        ],
    );
    let pinned: Vec<&str> = constraints.pinned_literals().collect();
    assert_eq!(pinned, vec![".env"]);
}

#[test]
fn an_empty_set_matches_nothing() {
    let constraints = ConstraintSet::default();
    assert_eq!(constraints.visibility_of("anything"), None);
}

#[test]
fn patterns_are_lexical_and_do_not_need_the_file() {
    let (dir, root) = project();
    fs::create_dir(dir.path().join("real")).unwrap();
    assert_eq!(pattern(&root, "real/new.txt").as_str(), "real/new.txt");
    assert_eq!(pattern(&root, "missing/*.txt").as_str(), "missing/*.txt");
}

#[test]
fn stored_patterns_match_like_normalized_ones() {
    let (_dir, root) = project();
    for raw in ["src/app.js", "generated/**/*.rs"] {
        let stored = ConstraintPattern::stored(raw).unwrap();
        assert_eq!(stored.as_str(), pattern(&root, raw).as_str());
        assert_eq!(stored.is_glob(), raw.contains('*'));
    }
    let constraints = ConstraintSet::new([FileConstraint {
        pattern: ConstraintPattern::stored("generated/**/*.rs").unwrap(),
        visibility: Visibility::Readonly,
    }])
    .unwrap();
    assert_eq!(
        constraints.visibility_of("generated/api/v1.rs"),
        Some(Visibility::Readonly)
    );
    assert!(ConstraintPattern::stored("[unclosed*").is_err());
}
