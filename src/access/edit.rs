//! Admins' changes to the users file (`people/*`): the file stays the one source of truth.
//! A change is made to the file's text as TOML keeps it (`toml_edit`: every comment, key
//! order and blank line the admin wrote stays where it was, a changed value keeps the
//! comment after it), the result is read back as a users file before anything is written
//! (a change that would make the file unreadable is refused and the file stays as it was),
//! and it is written atomically: a new file beside it, synced, then renamed over it, so a
//! reader (this server's watch, another instance's) sees the old file or the new one, never
//! part of either. Changes through one server follow one another; an admin editing the file
//! by hand at the same moment as a change from the page may lose one of the two.

use std::io::Write;
use std::path::Path;

use toml_edit::{Array, ArrayOfTables, DocumentMut, Item, Table, Value};

use super::people::{valid_name, People};
use super::{AccessError, Role};

/// One change to the people of the users file.
#[derive(Debug, Clone)]
pub(crate) enum PersonChange {
    /// A new `[[person]]` table at the end of the file.
    Add {
        name: String,
        role: Role,
        projects: Vec<String>,
        token_sha256: String,
    },
    /// Another role, other projects, or both.
    Update {
        name: String,
        role: Option<Role>,
        projects: Option<Vec<String>>,
    },
    /// The person's table gone, with the comments above it.
    Remove { name: String },
    /// Another token (its hash): the old one opens nothing more.
    Token { name: String, token_sha256: String },
}

impl PersonChange {
    fn name(&self) -> &str {
        match self {
            PersonChange::Add { name, .. }
            | PersonChange::Update { name, .. }
            | PersonChange::Remove { name }
            | PersonChange::Token { name, .. } => name,
        }
    }
}

/// The users file's text with `change` made, and the people it then lists.
pub(super) fn changed(text: &str, change: &PersonChange) -> Result<(String, People), AccessError> {
    if !valid_name(change.name()) {
        return Err(AccessError::Refused(format!(
            "person name {:?} must be 1–64 letters, digits or ._@- and start with a letter or \
             digit",
            change.name()
        )));
    }
    let mut document: DocumentMut = text
        .parse()
        .map_err(|error| AccessError::UsersFile(format!("{error}")))?;
    let people = people_of(&mut document)?;
    let found = people
        .iter()
        .position(|table| table.get("name").and_then(Item::as_str) == Some(change.name()));
    match (change, found) {
        (PersonChange::Add { name, .. }, Some(_)) => {
            return Err(AccessError::PersonExists { name: name.clone() })
        }
        (
            PersonChange::Add {
                name,
                role,
                projects,
                token_sha256,
            },
            None,
        ) => {
            let mut table = Table::new();
            table.insert("name", toml_edit::value(name.as_str()));
            table.insert("token_sha256", toml_edit::value(token_sha256.as_str()));
            table.insert("role", toml_edit::value(role.to_string()));
            table.insert("projects", toml_edit::value(array(projects)));
            people.push(table);
        }
        (other, None) => {
            return Err(AccessError::NoSuchPerson {
                name: other.name().to_owned(),
            })
        }
        (PersonChange::Remove { .. }, Some(index)) => people.remove(index),
        (PersonChange::Update { role, projects, .. }, Some(index)) => {
            let table = people.get_mut(index).ok_or_else(gone)?;
            if let Some(role) = role {
                replace(table, "role", Value::from(role.to_string()));
            }
            if let Some(projects) = projects {
                replace(table, "projects", Value::Array(array(projects)));
            }
        }
        (PersonChange::Token { token_sha256, .. }, Some(index)) => {
            let table = people.get_mut(index).ok_or_else(gone)?;
            replace(table, "token_sha256", Value::from(token_sha256.as_str()));
        }
    }
    let text = document.to_string();
    let people = People::parse(&text).map_err(|error| match error {
        AccessError::UsersFile(why) => AccessError::Refused(why),
        other => other,
    })?;
    Ok((text, people))
}

/// The `[[person]]` tables (made when the file has none yet).
fn people_of(document: &mut DocumentMut) -> Result<&mut ArrayOfTables, AccessError> {
    let item = document
        .entry("person")
        .or_insert_with(|| Item::ArrayOfTables(ArrayOfTables::new()));
    item.as_array_of_tables_mut().ok_or_else(|| {
        AccessError::Refused(
            "the users file lists its people otherwise than as [[person]] tables; change it by \
             hand"
                .to_owned(),
        )
    })
}

fn gone() -> AccessError {
    AccessError::UsersFile("a person's table vanished during the change".to_owned())
}

fn array(items: &[String]) -> Array {
    items.iter().map(String::as_str).collect()
}

/// Sets `key` of `table` to `value`, keeping the spacing and comment the old value had.
fn replace(table: &mut Table, key: &str, mut value: Value) {
    if let Some(old) = table.get(key).and_then(Item::as_value) {
        *value.decor_mut() = old.decor().clone();
    }
    table.insert(key, Item::Value(value));
}

/// Writes `text` to `path` atomically: a new file in the same directory with the old file's
/// permissions, synced, renamed over `path`, and the directory synced.
pub(crate) fn write_atomically(path: &Path, text: &str) -> std::io::Result<()> {
    let directory = path
        .parent()
        .filter(|parent| !parent.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default();
    let suffix =
        crate::random::random_hex(8).map_err(|error| std::io::Error::other(error.to_string()))?;
    let temporary = directory.join(format!(".{name}.{suffix}.tmp"));
    let written = (|| {
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&temporary)?;
        if let Ok(metadata) = std::fs::metadata(path) {
            file.set_permissions(metadata.permissions())?;
        }
        file.write_all(text.as_bytes())?;
        file.sync_all()?;
        std::fs::rename(&temporary, path)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&temporary);
    }
    written?;
    std::fs::File::open(directory)?.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::access::hash_token;

    const FILE: &str = "# The team.\n\n# Ada runs it.\n[[person]]\nname = \"ada\"  # the lead\n\
        token_sha256 = \"HASH_A\"\nrole = \"admin\"   # viewer | member | admin\nprojects = [\"*\"]\n\n\
        # Mo works on the web.\n[[person]]\nname = \"mo\"\ntoken_sha256 = \"HASH_M\"\nrole = \"member\"\n\
        projects = [\"web\"]\ncaps = { day_dollars = 5.0 }\n";

    fn file() -> String {
        FILE.replace("HASH_A", &hash_token("a"))
            .replace("HASH_M", &hash_token("m"))
    }

    #[test]
    fn a_change_keeps_every_comment_and_the_order_of_the_file() {
        let (text, people) = changed(
            &file(),
            &PersonChange::Update {
                name: "ada".into(),
                role: Some(Role::Member),
                projects: Some(vec!["web".into(), "api-*".into()]),
            },
        )
        .unwrap();
        let expected = file()
            .replace(
                "role = \"admin\"   # viewer",
                "role = \"member\"   # viewer",
            )
            .replace("projects = [\"*\"]", "projects = [\"web\", \"api-*\"]");
        assert_eq!(text, expected);
        assert_eq!(people.named("ada").unwrap().role, Role::Member);

        let (text, people) = changed(
            &text,
            &PersonChange::Add {
                name: "olga".into(),
                role: Role::Viewer,
                projects: vec!["web".into()],
                token_sha256: hash_token("o"),
            },
        )
        .unwrap();
        assert!(text.starts_with(&expected), "{text}");
        assert!(people.holder_of("o").is_some());

        let (text, people) = changed(&text, &PersonChange::Remove { name: "mo".into() }).unwrap();
        assert!(
            !text.contains("Mo works"),
            "its comment goes with it: {text}"
        );
        assert!(text.contains("# Ada runs it."));
        assert!(people.named("mo").is_none());
        assert_eq!(people.len(), 2);
    }

    #[test]
    fn a_new_token_replaces_the_old_one() {
        let (_, people) = changed(
            &file(),
            &PersonChange::Token {
                name: "mo".into(),
                token_sha256: hash_token("m2"),
            },
        )
        .unwrap();
        assert!(people.holder_of("m").is_none());
        assert_eq!(&*people.holder_of("m2").unwrap().name, "mo");
    }

    #[test]
    fn a_change_the_file_could_not_hold_is_refused_saying_why() {
        let refused = |change: PersonChange| changed(&file(), &change).unwrap_err().to_string();
        let add = |name: &str, projects: Vec<String>| PersonChange::Add {
            name: name.into(),
            role: Role::Member,
            projects,
            token_sha256: hash_token(name),
        };
        assert_eq!(
            refused(add("mo", vec![])),
            "mo is already a person of the users file."
        );
        assert!(refused(add("al ice", vec![])).starts_with("person name \"al ice\""));
        assert!(
            refused(add("al", vec!["a[b".into()])).contains("project pattern \"a[b\""),
            "{}",
            refused(add("al", vec!["a[b".into()]))
        );
        assert_eq!(
            refused(PersonChange::Remove { name: "zed".into() }),
            "zed is not a person of the users file."
        );
        let only = format!(
            "[[person]]\nname = \"ada\"\ntoken_sha256 = \"{}\"\nrole = \"admin\"\n",
            hash_token("a")
        );
        let error = changed(&only, &PersonChange::Remove { name: "ada".into() })
            .unwrap_err()
            .to_string();
        assert!(error.contains("lists no one"), "{error}");
        let inline = format!(
            "person = [{{ name = \"ada\", token_sha256 = \"{}\", role = \"admin\" }}]\n",
            hash_token("a")
        );
        let error = changed(&inline, &add("bo", vec![]))
            .unwrap_err()
            .to_string();
        assert!(error.contains("[[person]] tables"), "{error}");
    }

    #[test]
    fn the_file_is_replaced_whole_and_keeps_its_permissions() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("users.toml");
        std::fs::write(&path, "old").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        write_atomically(&path, "new").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "new");
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(left.len(), 1, "no temporary file left behind");
    }
}
