//! The users file: each person's name, token hash, role and projects.
//!
//! ```toml
//! [[person]]
//! name = "alice"
//! token_sha256 = "…"            # `rummy hash-token` prints it; the token itself is never stored
//! role = "member"               # viewer | member | admin
//! projects = ["web", "api-*"]   # project names or globs; "*" is every project
//! caps = { day_dollars = 5.0 }  # optional: day_tokens, day_dollars, month_tokens, month_dollars
//! ```

use std::collections::HashSet;
use std::sync::Arc;

use serde::Deserialize;
use serde_path_to_error::Segment;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;
use toml::Spanned;

use super::{AccessError, Role};
use crate::project::patterns::ProjectPatterns;
use crate::usage::{CapLimits, Limits};

/// One person of the users file.
#[derive(Debug)]
pub(crate) struct Person {
    /// Shown in `getRun`, `run/state` and the logs: letters, digits and `._@-`.
    pub name: Arc<str>,
    pub role: Role,
    /// The SHA-256 of their token; `None` for someone who signed in through the identity
    /// provider (`signed_in`), who has no token of the users file.
    token_hash: Option<[u8; 32]>,
    projects: ProjectPatterns,
    /// What the runs this person starts may spend together.
    pub caps: Limits,
}

impl Person {
    /// Whether this person may open the project called `name`.
    pub(crate) fn may_open(&self, name: &str) -> bool {
        self.projects.matches(name)
    }

    /// Someone who signed in through the identity provider: no token, no caps of their own.
    pub(crate) fn signed_in(name: Arc<str>, role: Role, projects: ProjectPatterns) -> Person {
        Person {
            name,
            role,
            token_hash: None,
            projects,
            caps: Limits::default(),
        }
    }

    /// The project patterns as the file gives them.
    pub(crate) fn patterns(&self) -> &[String] {
        self.projects.written()
    }
}

/// Everyone the users file lists (empty without one).
#[derive(Debug, Default)]
pub(crate) struct People {
    people: Vec<Arc<Person>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct UsersFile {
    #[serde(default)]
    person: Vec<Spanned<PersonEntry>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PersonEntry {
    name: String,
    token_sha256: String,
    role: Role,
    #[serde(default)]
    projects: Vec<String>,
    #[serde(default)]
    caps: Option<Spanned<CapLimits>>,
}

impl People {
    /// Reads a users file's text; every mistake is named with the person it is in and its
    /// line (`mo (line 12): caps.week_tokens: unknown field …`).
    pub(crate) fn parse(text: &str) -> Result<People, AccessError> {
        let file: UsersFile = serde_path_to_error::deserialize(toml::Deserializer::new(text))
            .map_err(|error| AccessError::UsersFile(unreadable(text, error)))?;
        let mut names = HashSet::new();
        let mut hashes = HashSet::new();
        let mut people = Vec::with_capacity(file.person.len());
        for spanned in file.person {
            let line = line_of(text, spanned.span().start);
            let entry = spanned.into_inner();
            let invalid = |line: usize, why: String| {
                AccessError::UsersFile(format!("{} (line {line}): {why}", entry.name))
            };
            if !valid_name(&entry.name) {
                return Err(AccessError::UsersFile(format!(
                    "person name {:?} (line {line}) must be 1–64 letters, digits or ._@- and \
                     start with a letter or digit",
                    entry.name
                )));
            }
            if !names.insert(entry.name.clone()) {
                return Err(invalid(line, "listed twice".into()));
            }
            let token_hash = decode_hash(&entry.token_sha256).ok_or_else(|| {
                invalid(
                    line,
                    "token_sha256 must be 64 hex digits (`rummy hash-token`)".into(),
                )
            })?;
            if !hashes.insert(token_hash) {
                return Err(invalid(line, "has the same token as another person".into()));
            }
            let projects =
                ProjectPatterns::new(entry.projects).map_err(|why| invalid(line, why))?;
            let caps = match &entry.caps {
                None => Limits::default(),
                Some(caps) => caps.get_ref().checked().map_err(|error| {
                    invalid(line_of(text, caps.span().start), format!("caps.{error}"))
                })?,
            };
            people.push(Arc::new(Person {
                name: entry.name.into(),
                role: entry.role,
                token_hash: Some(token_hash),
                projects,
                caps,
            }));
        }
        if people.is_empty() {
            return Err(AccessError::UsersFile(
                "lists no one, which would lock every person out (list people as \
                 [[person]] tables, or leave RUMMY_USERS_FILE unset)"
                    .to_owned(),
            ));
        }
        Ok(People { people })
    }

    /// The person whose token this is.
    pub(crate) fn holder_of(&self, token: &str) -> Option<Arc<Person>> {
        let hash: [u8; 32] = Sha256::digest(token.as_bytes()).into();
        self.people
            .iter()
            .find(|person| holds(person, &hash))
            .cloned()
    }

    /// The person called `name`, when the SHA-256 of their token is `hash`.
    pub(crate) fn named_holding(&self, name: &str, hash: &[u8; 32]) -> Option<Arc<Person>> {
        self.named(name).filter(|person| holds(person, hash))
    }

    /// The person called `name`.
    pub(crate) fn named(&self, name: &str) -> Option<Arc<Person>> {
        self.people
            .iter()
            .find(|person| &*person.name == name)
            .cloned()
    }

    pub(crate) fn len(&self) -> usize {
        self.people.len()
    }

    /// Everyone, in the file's order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &Arc<Person>> {
        self.people.iter()
    }
}

/// Whether `person`'s token is the one whose SHA-256 is `hash`.
fn holds(person: &Person, hash: &[u8; 32]) -> bool {
    person
        .token_hash
        .is_some_and(|token_hash| bool::from(token_hash.ct_eq(hash)))
}

/// What is wrong with a users file that does not read: in a person's table, that person (by
/// name when the table has one), the line and the key (`mo (line 12): caps.day_tokens:
/// invalid type: string "5", expected a whole number of tokens, 0 or more`); elsewhere,
/// TOML's own message, which shows the line.
fn unreadable(text: &str, error: serde_path_to_error::Error<toml::de::Error>) -> String {
    let mut segments = error
        .path()
        .iter()
        .filter(|segment| !matches!(segment, Segment::Map { key } if key.starts_with(SPANNED)));
    let (Some(Segment::Map { key }), Some(Segment::Seq { index })) =
        (segments.next(), segments.next())
    else {
        return error.into_inner().to_string();
    };
    if key != "person" {
        return error.into_inner().to_string();
    }
    let index = *index;
    let key = segments
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(".");
    let error = error.into_inner();
    let person = name_of_person(text, index).unwrap_or_else(|| format!("person {}", index + 1));
    let line = error.span().map_or_else(String::new, |span| {
        format!(" (line {})", line_of(text, span.start))
    });
    match key.as_str() {
        "" => format!("{person}{line}: {}", error.message()),
        key => format!("{person}{line}: {key}: {}", error.message()),
    }
}

/// How serde names the parts of a `Spanned` value; not keys of the file.
const SPANNED: &str = "$__serde_spanned_private";

/// The `name` of the `index`th person, when the file reads as TOML at all.
fn name_of_person(text: &str, index: usize) -> Option<String> {
    let file: toml::Table = toml::from_str(text).ok()?;
    let name = file.get("person")?.get(index)?.get("name")?.as_str()?;
    valid_name(name).then(|| name.to_owned())
}

/// The line (from 1) holding byte `offset` of `text`.
fn line_of(text: &str, offset: usize) -> usize {
    let before = text.as_bytes().get(..offset).unwrap_or(text.as_bytes());
    before.iter().filter(|byte| **byte == b'\n').count() + 1
}

/// The hash the users file stores for `token`: SHA-256, lowercase hex.
pub fn hash_token(token: &str) -> String {
    Sha256::digest(token.as_bytes())
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

/// The 32 bytes a SHA-256 in hex stands for; `None` when it is not one.
pub(crate) fn decode_hash(hex: &str) -> Option<[u8; 32]> {
    let hex = hex.trim().as_bytes();
    if hex.len() != 64 {
        return None;
    }
    let mut hash = [0u8; 32];
    for (byte, pair) in hash.iter_mut().zip(hex.chunks(2)) {
        let text = std::str::from_utf8(pair).ok()?;
        *byte = u8::from_str_radix(text, 16).ok()?;
    }
    Some(hash)
}

/// Whether `name` may be a person's name: letters, digits and `._@-`, at most 64, from a
/// letter or digit.
pub(crate) fn valid_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|first| first.is_ascii_alphanumeric())
        && name.len() <= 64
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '@' | '-'))
}

/// A users file of `(name, token, role, projects as TOML)` entries, for tests.
#[cfg(test)]
pub(crate) fn users_file(entries: &[(&str, &str, &str, &str)]) -> String {
    entries
        .iter()
        .map(|(name, token, role, projects)| {
            format!(
                "[[person]]\nname = \"{name}\"\ntoken_sha256 = \"{}\"\nrole = \"{role}\"\n\
                     projects = {projects}\n",
                hash_token(token)
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_person_is_found_by_token_and_opens_only_matching_projects() {
        let people = People::parse(&users_file(&[
            ("alice", "a-token", "member", r#"["web", "api-*"]"#),
            ("bob", "b-token", "viewer", r#"["*"]"#),
        ]))
        .unwrap();
        assert_eq!(people.len(), 2);
        let alice = people.holder_of("a-token").unwrap();
        assert_eq!(&*alice.name, "alice");
        assert_eq!(alice.role, Role::Member);
        assert!(alice.may_open("web"));
        assert!(alice.may_open("api-v2"));
        assert!(!alice.may_open("website"));
        assert!(!alice.may_open("ops"));
        assert_eq!(alice.patterns(), ["web", "api-*"]);
        let bob = people.holder_of("b-token").unwrap();
        assert_eq!(bob.role, Role::Viewer);
        assert!(bob.may_open("anything"));
        assert!(people.holder_of("a-toke").is_none());
        assert!(people.holder_of("").is_none());
        assert_eq!(&*people.named("bob").unwrap().name, "bob");
        assert!(people.named("carol").is_none());
    }

    #[test]
    fn no_projects_means_none() {
        let people = People::parse(&users_file(&[("alice", "t", "admin", "[]")])).unwrap();
        assert!(!people.holder_of("t").unwrap().may_open("web"));
    }

    #[test]
    fn the_hash_is_sha256_hex() {
        assert_eq!(
            hash_token("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        let upper = format!(
            "[[person]]\nname = \"a\"\ntoken_sha256 = \"{}\"\nrole = \"admin\"\n",
            hash_token("abc").to_uppercase()
        );
        assert!(People::parse(&upper).unwrap().holder_of("abc").is_some());
    }

    #[test]
    fn mistakes_are_refused_with_the_person_named() {
        let cases = [
            (
                users_file(&[
                    ("alice", "t", "member", "[]"),
                    ("alice", "u", "viewer", "[]"),
                ]),
                "alice (line 6): listed twice",
            ),
            (
                users_file(&[("alice", "t", "member", "[]"), ("bob", "t", "viewer", "[]")]),
                "bob (line 6): has the same token",
            ),
            (
                "[[person]]\nname = \"alice\"\ntoken_sha256 = \"abc\"\nrole = \"member\"\n".into(),
                "alice (line 1): token_sha256 must be 64 hex digits",
            ),
            (
                users_file(&[("alice", "t", "member", r#"["a[b"]"#)]),
                "alice (line 1): project pattern \"a[b\"",
            ),
            (
                users_file(&[("al ice", "t", "member", "[]")]),
                "person name",
            ),
            (users_file(&[("alice", "t", "owner", "[]")]), "owner"),
            (
                users_file(&[(".alice", "t", "member", "[]")]),
                "person name",
            ),
            (
                "[[person]]\nname = \"a\"\ntoken = \"plain\"\n".into(),
                "a (line 3): token: unknown field `token`",
            ),
        ];
        for (text, expected) in cases {
            let error = People::parse(&text).unwrap_err().to_string();
            assert!(error.contains(expected), "{error:?} lacks {expected:?}");
        }
        let long = "a".repeat(65);
        assert!(People::parse(&users_file(&[(&long, "t", "member", "[]")])).is_err());
        let just_right = "a".repeat(64);
        assert!(People::parse(&users_file(&[(&just_right, "t", "member", "[]")])).is_ok());
    }

    #[test]
    fn a_file_that_lists_no_one_is_refused() {
        for text in ["", "person = []"] {
            let error = People::parse(text).unwrap_err().to_string();
            assert!(error.starts_with("users file: lists no one"), "{error}");
        }
        assert!(People::default().holder_of("").is_none());
    }

    #[test]
    fn a_mistake_in_a_person_s_caps_names_the_person_the_line_and_the_key() {
        let person = |name: &str, token: &str, caps: &str| {
            format!(
                "[[person]]\nname = \"{name}\"\ntoken_sha256 = \"{}\"\nrole = \"member\"\n{caps}\n",
                hash_token(token)
            )
        };
        let file = |caps: &str| {
            let text = [person("ada", "a", ""), person("mo", "m", caps)].concat();
            People::parse(&text).unwrap_err().to_string()
        };
        assert_eq!(
            file("caps = { week_tokens = 5 }"),
            "users file: mo (line 10): caps.week_tokens: unknown field `week_tokens`, expected \
             one of `day_tokens`, `day_dollars`, `month_tokens`, `month_dollars`"
        );
        assert_eq!(
            file("caps = { day_tokens = \"5\" }"),
            "users file: mo (line 10): caps.day_tokens: invalid type: string \"5\", expected a \
             whole number of tokens, 0 or more"
        );
        assert_eq!(
            file("[person.caps]\nday_dollars = 1.0\nmonth_tokens = 2.5"),
            "users file: mo (line 12): caps.month_tokens: invalid value: floating point `2.5`, \
             expected a whole number of tokens, 0 or more"
        );
        assert_eq!(
            file("caps = { day_tokens = -5 }"),
            "users file: mo (line 10): caps.day_tokens must be a whole number of tokens, 0 or \
             more (got -5)"
        );
        let nameless = format!("{}[[person]]\nrole = 5\n", person("ada", "a", ""));
        assert_eq!(
            People::parse(&nameless).unwrap_err().to_string(),
            "users file: person 2 (line 7): role: wanted string or table"
        );
        let broken = format!("{}caps = {{ day_tokens = }}\n", person("ada", "a", ""));
        let error = People::parse(&broken).unwrap_err().to_string();
        assert!(error.contains("line 6"), "TOML's own: {error}");
    }
}
