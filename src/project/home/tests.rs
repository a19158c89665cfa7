use std::os::unix::fs::symlink;

use tempfile::TempDir;

use super::*;

fn home() -> (TempDir, RummyHome) {
    let dir = tempfile::tempdir().unwrap();
    let home = RummyHome::new(dir.path().join("rummy-home"));
    (dir, home)
}

fn write(home: &RummyHome, kind: DocumentKind, file: &str, body: &[u8]) {
    fs::write(home.directory(kind).join(file), body).unwrap();
}

#[test]
fn ensure_layout_creates_both_directories_and_is_idempotent() {
    let (_dir, home) = home();
    home.ensure_layout().unwrap();
    home.ensure_layout().unwrap();
    assert!(home.path().join("skills").is_dir());
    assert!(home.path().join("personas").is_dir());
}

#[test]
fn missing_directories_list_as_empty() {
    let (_dir, home) = home();
    assert_eq!(home.list(DocumentKind::Skill).unwrap(), vec![]);
    assert_eq!(home.list(DocumentKind::Persona).unwrap(), vec![]);
}

#[test]
fn listing_shows_markdown_files_sorted_by_name() {
    let (_dir, home) = home();
    home.ensure_layout().unwrap();
    write(&home, DocumentKind::Skill, "sql_style.md", b"Use CTEs.");
    write(&home, DocumentKind::Skill, "api.md", b"REST.");
    write(&home, DocumentKind::Skill, "notes.txt", b"not a skill");
    write(
        &home,
        DocumentKind::Skill,
        "bad..name.md",
        b"unreadable by name",
    );
    fs::create_dir(home.directory(DocumentKind::Skill).join("folder.md")).unwrap();
    write(&home, DocumentKind::Persona, "pirate.md", b"Arr.");
    let skills = home.list(DocumentKind::Skill).unwrap();
    let names: Vec<&str> = skills.iter().map(|doc| doc.name.as_str()).collect();
    assert_eq!(names, vec!["api", "sql_style"]);
    assert_eq!(skills[1].path, Path::new("skills/sql_style.md"));
    let personas = home.list(DocumentKind::Persona).unwrap();
    assert_eq!(personas.len(), 1);
    assert_eq!(personas[0].name, "pirate");
}

#[test]
fn reading_by_name_returns_body_and_path_under_home() {
    let (_dir, home) = home();
    home.ensure_layout().unwrap();
    write(
        &home,
        DocumentKind::Persona,
        "pirate.md",
        b"Speak like a pirate.",
    );
    let persona = home.read(DocumentKind::Persona, "pirate").unwrap();
    assert_eq!(persona.name, "pirate");
    assert_eq!(persona.body, "Speak like a pirate.");
    assert_eq!(persona.path, Path::new("personas/pirate.md"));
}

#[test]
fn a_missing_document_is_named_by_its_path_under_home() {
    let (_dir, home) = home();
    home.ensure_layout().unwrap();
    let error = home.read(DocumentKind::Skill, "nope").unwrap_err();
    assert_eq!(error.to_string(), "Not found: skills/nope.md");
}

#[test]
fn names_that_could_leave_the_directory_are_refused() {
    let (dir, home) = home();
    home.ensure_layout().unwrap();
    fs::write(dir.path().join("secret.md"), "secret").unwrap();
    for name in [
        "../secret",
        "../../secret",
        "..",
        ".",
        "a/b",
        "a\\b",
        "x\0y",
        "a..b",
    ] {
        assert!(
            matches!(
                home.read(DocumentKind::Skill, name),
                Err(ProjectError::InvalidName(_))
            ),
            "{name:?}"
        );
    }
    assert_eq!(
        home.read(DocumentKind::Skill, "").unwrap_err().to_string(),
        "name is required"
    );
}

#[test]
fn invalid_utf8_is_replaced_not_refused() {
    let (_dir, home) = home();
    home.ensure_layout().unwrap();
    write(
        &home,
        DocumentKind::Skill,
        "latin.md",
        &[0x63, 0x61, 0x66, 0xe9],
    );
    let skill = home.read(DocumentKind::Skill, "latin").unwrap();
    assert_eq!(skill.body, "caf\u{fffd}");
}

#[test]
fn symlinked_documents_are_listed_and_read() {
    let (dir, home) = home();
    home.ensure_layout().unwrap();
    fs::write(dir.path().join("shared.md"), "shared skill").unwrap();
    symlink(
        dir.path().join("shared.md"),
        home.directory(DocumentKind::Skill).join("shared.md"),
    )
    .unwrap();
    let names: Vec<String> = home
        .list(DocumentKind::Skill)
        .unwrap()
        .into_iter()
        .map(|doc| doc.name)
        .collect();
    assert_eq!(names, vec!["shared"]);
    assert_eq!(
        home.read(DocumentKind::Skill, "shared").unwrap().body,
        "shared skill"
    );
}

#[test]
fn setting_must_be_present_and_non_empty() {
    assert_eq!(
        RummyHome::from_setting(None).unwrap_err().to_string(),
        "RUMMY_HOME not configured"
    );
    assert!(matches!(
        RummyHome::from_setting(Some(Path::new(""))),
        Err(ProjectError::HomeNotConfigured)
    ));
    let home = RummyHome::from_setting(Some(Path::new("/srv/rummy"))).unwrap();
    assert_eq!(
        home.directory(DocumentKind::Skill),
        Path::new("/srv/rummy/skills")
    );
}

#[test]
fn validated_names_are_returned_unchanged() {
    assert_eq!(validate_document_name("sql_style").unwrap(), "sql_style");
    assert_eq!(validate_document_name("v1.2-notes").unwrap(), "v1.2-notes");
}

#[test]
fn the_longest_name_a_file_system_holds_is_read_and_a_longer_one_is_refused() {
    let (_dir, home) = home();
    home.ensure_layout().unwrap();
    let longest = "a".repeat(252);
    write(
        &home,
        DocumentKind::Persona,
        &format!("{longest}.md"),
        b"terse",
    );
    assert_eq!(
        home.read(DocumentKind::Persona, &longest).unwrap().body,
        "terse"
    );
    let too_long = "a".repeat(253);
    let refused = home.read(DocumentKind::Persona, &too_long).unwrap_err();
    assert!(
        matches!(refused, ProjectError::NameTooLong { max: 252 }),
        "{refused:?}"
    );
    assert!(
        refused.to_string().contains("at most 252 bytes"),
        "{refused}"
    );
    let multibyte = "é".repeat(127);
    assert!(matches!(
        validate_document_name(&multibyte),
        Err(ProjectError::NameTooLong { .. })
    ));
}
