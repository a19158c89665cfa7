//! Who may do what: the caller of each connection, the people of the users file, their roles
//! and their projects.
//!
//! A connection authenticates once, at the upgrade. With the server's shared token (or on a
//! server with no token at all, one person's laptop) it acts as the [`Caller::Operator`] and
//! may do everything; with a person's token it acts for that person. What a person may do is
//! looked up again on every call ([`Access::grant`]), so a reload of the users file (SIGHUP,
//! or a change of the file, see [`watch`]) applies at once to connections already open, and a
//! person removed from the file can do nothing more.
//!
//! People may also come from an OpenID Connect provider (`console::oidc`, [`signed_in`]):
//! they act as [`Caller::Person`] too, and their grant is looked up the same way, the users
//! file first (an admin can pin a role there), then the groups the provider last gave them.

mod edit;
mod people;
mod signed_in;
mod token;
mod watch;

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError, RwLock};

use serde::{Deserialize, Serialize};
use sha2::Digest;
use subtle::ConstantTimeEq;

use crate::config::{GroupGrant, ServerSettings};
use crate::usage::Limits;

pub(crate) use edit::{write_atomically, PersonChange};
pub use people::hash_token;
pub(crate) use people::{decode_hash, valid_name};
pub(crate) use people::{People, Person};
pub(crate) use token::{TokenRefusal, TokenUse};
pub(crate) use watch::watch;

/// What a person may do, each role including the ones before it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Reads entries, runs and notifications.
    Viewer,
    /// Also asks, acts, resolves, injects, aborts and edits entries and runs.
    Member,
    /// Also changes what the whole server shares: the model catalogue.
    Admin,
}

impl Role {
    /// Who may abort a run (`run/abort`), and so cancel another person's loop of it
    /// (`run/cancel` with `loop`).
    pub(crate) const TO_ABORT: Role = Role::Member;
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Role::Viewer => "viewer",
            Role::Member => "member",
            Role::Admin => "admin",
        })
    }
}

/// Who a connection acts for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Caller {
    /// The holder of the shared token, or anyone on a server without tokens.
    Operator,
    /// A person of the users file, by name.
    Person(Arc<str>),
    /// A person, through one of their personal access tokens (`tokens`), within its scope.
    Token(Arc<TokenUse>),
}

impl Caller {
    /// The person's name; `None` for the operator, who is nobody in particular.
    pub(crate) fn person(&self) -> Option<&str> {
        match self {
            Caller::Operator => None,
            Caller::Person(name) => Some(name),
            Caller::Token(token) => Some(&token.person),
        }
    }
}

/// A refusal, or a users file that cannot be read.
#[derive(Debug, thiserror::Error)]
pub(crate) enum AccessError {
    /// The users file is unreadable or wrong (at start, or on a reload, which keeps the
    /// previous people).
    #[error("users file: {0}")]
    UsersFile(String),
    #[error("{who} is a {role}; '{method}' needs the {needed} role.")]
    Role {
        who: Arc<str>,
        role: Role,
        needed: Role,
        method: String,
    },
    #[error("{who} may not open project '{project}'.")]
    Project { who: Arc<str>, project: String },
    #[error("{who} is no longer a user of this server.")]
    Gone { who: Arc<str> },
    #[error(
        "Project '{project}' already exists with another root; a project's root never \
         changes (init the new root under another name)."
    )]
    RootTaken { project: String },
    #[error("Project '{project}' does not exist, and {who}, a viewer, may not create it.")]
    CannotCreate { who: Arc<str>, project: String },
    /// A change of the people asked of a server without a users file.
    #[error(
        "This server has no users file, so there are no people to change: set \
         RUMMY_USERS_FILE to a users file (docs/src/team.md) and restart it."
    )]
    NoUsersFile,
    #[error("{name} is already a person of the users file.")]
    PersonExists { name: String },
    #[error("{name} is not a person of the users file.")]
    NoSuchPerson { name: String },
    /// A change of the people the users file could not hold; the file stays as it was.
    #[error("{0}")]
    Refused(String),
    /// A personal access token refused: revoked, expired, or asked beyond its scope.
    #[error(transparent)]
    Token(#[from] TokenRefusal),
}

/// The shared token, the users file and the people read from it. Cheap to clone.
#[derive(Clone)]
pub(crate) struct Access {
    inner: Arc<Inner>,
}

struct Inner {
    shared_token: Option<String>,
    users_file: Option<PathBuf>,
    people: RwLock<Arc<People>>,
    /// Sign-in through an identity provider is configured: the server has people even
    /// without a token or a users file.
    provider: bool,
    /// The people who signed in through the provider.
    signed_in: signed_in::SignedIn,
    /// Held by a change of the users file from start to finish, so changes follow one
    /// another.
    editing: Mutex<()>,
}

impl Access {
    /// The server's access rules, reading the users file when one is configured (blocking),
    /// without an identity provider.
    #[cfg(test)]
    pub(crate) fn load(server: &ServerSettings) -> Result<Access, AccessError> {
        Access::load_with(server, None)
    }

    /// [`Access::load`], with people signing in through an identity provider when `groups`
    /// (what its groups grant) is given.
    pub(crate) fn load_with(
        server: &ServerSettings,
        groups: Option<&[GroupGrant]>,
    ) -> Result<Access, AccessError> {
        let people = match &server.users_file {
            Some(path) => read_people(path)?,
            None => People::default(),
        };
        Ok(Access {
            inner: Arc::new(Inner {
                shared_token: server
                    .auth_token
                    .as_ref()
                    .map(|token| token.expose().to_owned()),
                users_file: server.users_file.clone(),
                people: RwLock::new(Arc::new(people)),
                provider: groups.is_some(),
                signed_in: signed_in::SignedIn::new(signed_in::GroupMap::new(
                    groups.unwrap_or_default(),
                )),
                editing: Mutex::new(()),
            }),
        })
    }

    /// Whether everyone is the operator: no shared token, no users file, no identity
    /// provider (one person's laptop).
    fn open(&self) -> bool {
        let inner = &self.inner;
        inner.shared_token.is_none() && inner.users_file.is_none() && !inner.provider
    }

    /// Who presents `token`; `None` when it opens nothing. A server with neither a shared
    /// token nor a users file nor an identity provider lets everyone in as the operator.
    pub(crate) fn authenticate(&self, token: Option<&str>) -> Option<Caller> {
        let inner = &self.inner;
        if self.open() {
            return Some(Caller::Operator);
        }
        let token = token?;
        if let Some(shared) = &inner.shared_token {
            if bool::from(token.as_bytes().ct_eq(shared.as_bytes())) {
                return Some(Caller::Operator);
            }
        }
        self.people()
            .holder_of(token)
            .map(|person| Caller::Person(person.name.clone()))
    }

    /// Who a console session signed in with the token whose SHA-256 is `token_hash`, as
    /// `person` (`None`: the operator), acts for now; `None` once that token opens nothing
    /// (changed in the users file, another shared token).
    pub(crate) fn resume(&self, person: Option<&str>, token_hash: &[u8; 32]) -> Option<Caller> {
        let inner = &self.inner;
        if self.open() {
            return Some(Caller::Operator);
        }
        match person {
            None => {
                let shared = inner.shared_token.as_ref()?;
                let hash: [u8; 32] = sha2::Sha256::digest(shared.as_bytes()).into();
                bool::from(hash.ct_eq(token_hash)).then_some(Caller::Operator)
            }
            Some(name) => self
                .people()
                .named_holding(name, token_hash)
                .map(|person| Caller::Person(person.name.clone())),
        }
    }

    /// Whether people sign in through an identity provider too.
    pub(crate) fn has_provider(&self) -> bool {
        self.inner.provider
    }

    /// Who the person called `name`, whom the identity provider last gave `groups`
    /// (`None`: the store no longer knows them), acts as now: the users file's person of
    /// that name, else the person their groups make them; `None` when neither.
    pub(crate) fn signed_in(&self, name: &str, groups: Option<&[String]>) -> Option<Caller> {
        if !self.inner.provider {
            return None;
        }
        let person = self.people().named(name).or_else(|| match groups {
            Some(groups) => self.inner.signed_in.refresh(name, groups),
            None => {
                self.inner.signed_in.forget(name);
                None
            }
        })?;
        Some(Caller::Person(person.name.clone()))
    }

    /// What `caller` may do now, by the people as last read (the users file's, then those
    /// who signed in through the identity provider; through a token, within its scope).
    pub(crate) fn grant(&self, caller: &Caller) -> Result<Grant, AccessError> {
        let (name, token) = match caller {
            Caller::Operator => {
                return Ok(Grant {
                    person: None,
                    token: None,
                })
            }
            Caller::Person(name) => (name, None),
            Caller::Token(token) => (&token.person, Some(token.clone())),
        };
        let person = self
            .people()
            .named(name)
            .or_else(|| self.inner.signed_in.named(name))
            .ok_or_else(|| AccessError::Gone { who: name.clone() })?;
        Ok(Grant {
            person: Some(person),
            token,
        })
    }

    /// Reads the users file again (blocking); a file that does not read keeps the people
    /// as they were. Returns how many people it lists.
    pub(crate) fn reload(&self) -> Result<usize, AccessError> {
        let Some(path) = &self.inner.users_file else {
            return Ok(0);
        };
        let people = read_people(path)?;
        let count = people.len();
        *self
            .inner
            .people
            .write()
            .unwrap_or_else(PoisonError::into_inner) = Arc::new(people);
        Ok(count)
    }

    /// Makes `change` to the users file (blocking) and takes its people at once, on every
    /// connection; the watch of every instance sharing the file reads it too.
    pub(crate) fn change(&self, change: &PersonChange) -> Result<(), AccessError> {
        let path = self
            .inner
            .users_file
            .as_ref()
            .ok_or(AccessError::NoUsersFile)?;
        let _editing = self
            .inner
            .editing
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let failed = |why: String| AccessError::UsersFile(format!("{}: {why}", path.display()));
        let text = read_text(path)?;
        let (text, people) = edit::changed(&text, change)?;
        edit::write_atomically(path, &text).map_err(|error| failed(error.to_string()))?;
        *self
            .inner
            .people
            .write()
            .unwrap_or_else(PoisonError::into_inner) = Arc::new(people);
        Ok(())
    }

    /// The spend caps of the person called `name`, by the users file as last read (none for
    /// someone it no longer lists).
    pub(crate) fn caps_of(&self, name: &str) -> Limits {
        self.people()
            .named(name)
            .map(|person| person.caps.clone())
            .unwrap_or_default()
    }

    /// Whether anyone has caps in the users file as last read.
    pub(crate) fn anyone_capped(&self) -> bool {
        self.people().iter().any(|person| !person.caps.is_empty())
    }

    /// The users file, when one is configured.
    pub(crate) fn users_file(&self) -> Option<&Path> {
        self.inner.users_file.as_deref()
    }

    /// The people as last read (none without a users file).
    pub(crate) fn people(&self) -> Arc<People> {
        self.inner
            .people
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

/// The largest users file read: ample for thousands of people, and a file that is not one
/// (a link to `/dev/zero`, a log) is refused before it fills the memory.
pub(crate) const USERS_FILE_MAX_BYTES: u64 = 1024 * 1024;

fn read_people(path: &Path) -> Result<People, AccessError> {
    let text = read_text(path)?;
    People::parse(&text).map_err(|error| match error {
        AccessError::UsersFile(why) => AccessError::UsersFile(format!("{}: {why}", path.display())),
        other => other,
    })
}

/// The users file's text, refused when it is too large or not UTF-8.
fn read_text(path: &Path) -> Result<String, AccessError> {
    use std::io::Read;
    let failed = |why: String| AccessError::UsersFile(format!("{}: {why}", path.display()));
    let file = std::fs::File::open(path).map_err(|error| failed(error.to_string()))?;
    let mut bytes = Vec::new();
    file.take(USERS_FILE_MAX_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|error| failed(error.to_string()))?;
    if bytes.len() as u64 > USERS_FILE_MAX_BYTES {
        return Err(failed(format!(
            "larger than {USERS_FILE_MAX_BYTES} bytes; not read (is it the users file?)"
        )));
    }
    String::from_utf8(bytes).map_err(|_| failed("not UTF-8 text".to_owned()))
}

/// What one caller may do, as of one call.
#[derive(Debug, Clone)]
pub(crate) struct Grant {
    /// `None`: the operator, who may do everything.
    person: Option<Arc<Person>>,
    /// The personal access token the call came through, which narrows what it may.
    token: Option<Arc<TokenUse>>,
}

impl Grant {
    /// The caller's role: a read-only token's is a viewer's at most.
    pub(crate) fn role(&self) -> Role {
        let role = self
            .person
            .as_ref()
            .map_or(Role::Admin, |person| person.role);
        match &self.token {
            Some(token) if token.read_only => role.min(Role::Viewer),
            _ => role,
        }
    }

    /// Refuses a caller below `needed` for `method`.
    pub(crate) fn require(&self, needed: Role, method: &str) -> Result<(), AccessError> {
        match (&self.person, &self.token) {
            (Some(person), _) if person.role < needed => Err(AccessError::Role {
                who: person.name.clone(),
                role: person.role,
                needed,
                method: method.to_owned(),
            }),
            (_, Some(token)) if self.role() < needed => Err(TokenRefusal::ReadOnly {
                who: token.person.to_string(),
                token: token.name.clone(),
                method: method.to_owned(),
                needed,
            }
            .into()),
            _ => Ok(()),
        }
    }

    /// Refuses a caller whose projects do not include `project` (a token's, its one).
    pub(crate) fn open(&self, project: &str) -> Result<(), AccessError> {
        match (&self.person, &self.token) {
            (Some(person), _) if !person.may_open(project) => Err(AccessError::Project {
                who: person.name.clone(),
                project: project.to_owned(),
            }),
            (_, Some(token)) => match &token.project {
                Some(only) if only != project => Err(TokenRefusal::OtherProject {
                    who: token.person.to_string(),
                    token: token.name.clone(),
                    only: only.clone(),
                    project: project.to_owned(),
                }
                .into()),
                _ => Ok(()),
            },
            _ => Ok(()),
        }
    }

    /// Refuses a caller who may not create the project `project`.
    pub(crate) fn create(&self, project: &str) -> Result<(), AccessError> {
        self.open(project)?;
        match &self.person {
            Some(person) if self.role() < Role::Member => Err(AccessError::CannotCreate {
                who: person.name.clone(),
                project: project.to_owned(),
            }),
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server(token: Option<&str>, users: Option<&str>) -> (ServerSettings, tempfile::TempDir) {
        let dir = tempfile::tempdir().unwrap();
        let mut env: std::collections::HashMap<String, String> =
            [("RUMMY_HOME".to_string(), dir.path().display().to_string())].into();
        if let Some(token) = token {
            env.insert("RUMMY_AUTH_TOKEN".into(), token.into());
        }
        if let Some(text) = users {
            std::fs::write(dir.path().join("users.toml"), text).unwrap();
            env.insert("RUMMY_USERS_FILE".into(), "users.toml".into());
        }
        let settings = crate::config::Settings::load(&env, Path::new("config")).unwrap();
        (settings.server, dir)
    }

    #[test]
    fn without_tokens_everyone_is_the_operator() {
        let (server, _dir) = server(None, None);
        let access = Access::load(&server).unwrap();
        assert_eq!(access.authenticate(None), Some(Caller::Operator));
        assert_eq!(access.authenticate(Some("x")), Some(Caller::Operator));
    }

    #[test]
    fn the_shared_token_is_the_operator_and_a_persons_token_is_that_person() {
        let text = people::users_file(&[("alice", "a-token", "viewer", r#"["web"]"#)]);
        let (server, _dir) = server(Some("shared"), Some(&text));
        let access = Access::load(&server).unwrap();
        assert_eq!(access.authenticate(Some("shared")), Some(Caller::Operator));
        assert_eq!(
            access.authenticate(Some("a-token")),
            Some(Caller::Person("alice".into()))
        );
        assert_eq!(access.authenticate(Some("share")), None);
        assert_eq!(access.authenticate(None), None);
    }

    #[test]
    fn a_users_file_alone_requires_a_token() {
        let text = people::users_file(&[("alice", "a-token", "admin", r#"["*"]"#)]);
        let (server, _dir) = server(None, Some(&text));
        let access = Access::load(&server).unwrap();
        assert_eq!(access.authenticate(None), None);
        assert_eq!(access.authenticate(Some("shared")), None);
        assert_eq!(
            access.authenticate(Some("a-token")),
            Some(Caller::Person("alice".into()))
        );
    }

    #[test]
    fn grants_follow_role_and_projects() {
        let text = people::users_file(&[
            ("vera", "v", "viewer", r#"["web"]"#),
            ("mo", "m", "member", r#"["web"]"#),
            ("ada", "a", "admin", r#"["*"]"#),
        ]);
        let (server, _dir) = server(None, Some(&text));
        let access = Access::load(&server).unwrap();
        let grant = |name: &str| access.grant(&Caller::Person(name.into())).unwrap();
        let vera = grant("vera");
        assert_eq!(vera.role(), Role::Viewer);
        assert!(vera.require(Role::Viewer, "getRuns").is_ok());
        let refused = vera.require(Role::Member, "ask").unwrap_err();
        assert_eq!(
            refused.to_string(),
            "vera is a viewer; 'ask' needs the member role."
        );
        assert!(vera.open("web").is_ok());
        assert_eq!(
            vera.open("ops").unwrap_err().to_string(),
            "vera may not open project 'ops'."
        );
        assert!(matches!(
            vera.create("web"),
            Err(AccessError::CannotCreate { .. })
        ));
        let mo = grant("mo");
        assert!(mo.require(Role::Member, "ask").is_ok());
        assert!(mo.require(Role::Admin, "addModel").is_err());
        assert!(mo.create("web").is_ok());
        assert!(matches!(mo.create("ops"), Err(AccessError::Project { .. })));
        let ada = grant("ada");
        assert!(ada.require(Role::Admin, "addModel").is_ok());
        let operator = access.grant(&Caller::Operator).unwrap();
        assert_eq!(operator.role(), Role::Admin);
        assert!(operator.open("anything").is_ok());
        assert!(operator.create("anything").is_ok());
        assert!(operator.require(Role::Admin, "addModel").is_ok());
    }

    #[test]
    fn a_reload_applies_to_callers_already_in_and_a_bad_file_keeps_the_people() {
        let text = people::users_file(&[("alice", "a", "member", r#"["web"]"#)]);
        let (server, _dir) = server(None, Some(&text));
        let access = Access::load(&server).unwrap();
        let alice = access.authenticate(Some("a")).unwrap();
        let path = server.users_file.clone().unwrap();
        std::fs::write(
            &path,
            people::users_file(&[("alice", "a", "viewer", r#"["web"]"#)]),
        )
        .unwrap();
        assert_eq!(access.reload().unwrap(), 1);
        assert_eq!(access.grant(&alice).unwrap().role(), Role::Viewer);
        std::fs::write(&path, "[[person]]\nname = 3\n").unwrap();
        assert!(access.reload().is_err());
        assert_eq!(access.grant(&alice).unwrap().role(), Role::Viewer);
        std::fs::write(
            &path,
            people::users_file(&[("bob", "b", "viewer", r#"["web"]"#)]),
        )
        .unwrap();
        assert_eq!(access.reload().unwrap(), 1);
        assert_eq!(
            access.grant(&alice).unwrap_err().to_string(),
            "alice is no longer a user of this server."
        );
        assert_eq!(access.authenticate(Some("a")), None);
    }

    #[test]
    fn a_users_file_with_no_one_stops_the_start_and_a_reload_keeps_the_people() {
        for empty in ["", "# nobody yet\n", "person = []\n"] {
            let (_, dir) = server(None, None);
            let path = dir.path().join("users.toml");
            std::fs::write(&path, empty).unwrap();
            let (mut settings, _keep) = server(None, None);
            settings.users_file = Some(path.clone());
            let error = Access::load(&settings).err().unwrap().to_string();
            assert!(error.contains("lists no one"), "{empty:?}: {error}");
            assert!(error.contains("users.toml"), "{error}");
        }
        let text = people::users_file(&[("alice", "a", "member", r#"["web"]"#)]);
        let (server, _dir) = server(None, Some(&text));
        let access = Access::load(&server).unwrap();
        std::fs::write(server.users_file.as_ref().unwrap(), "").unwrap();
        assert!(access.reload().is_err());
        assert_eq!(
            access.authenticate(Some("a")),
            Some(Caller::Person("alice".into())),
            "an emptied file keeps the people"
        );
    }

    #[cfg(unix)]
    #[test]
    fn a_users_file_past_its_cap_is_refused_without_reading_it_all() {
        let (mut server, dir) = server(None, None);
        let zero = dir.path().join("zero.toml");
        std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
        server.users_file = Some(zero);
        let error = Access::load(&server).err().unwrap().to_string();
        assert!(error.contains("larger than 1048576 bytes"), "{error}");
        let big = dir.path().join("big.toml");
        let mut text = people::users_file(&[("alice", "a", "member", r#"["web"]"#)]);
        let padding = usize::try_from(USERS_FILE_MAX_BYTES).unwrap() - text.len();
        text.push_str(&"#".repeat(padding));
        std::fs::write(&big, &text).unwrap();
        server.users_file = Some(big.clone());
        assert!(Access::load(&server).is_ok(), "exactly the cap is read");
        text.push('#');
        std::fs::write(&big, &text).unwrap();
        assert!(Access::load(&server).is_err(), "one byte past it is not");
    }

    #[test]
    fn people_from_the_provider_are_granted_by_their_groups_on_every_call() {
        let text = people::users_file(&[("ada", "a", "admin", r#"["*"]"#)]);
        let (server, _dir) = server(None, Some(&text));
        let groups = [crate::config::GroupGrant {
            group: "devs".into(),
            role: Role::Member,
            projects: vec!["web".into()],
        }];
        let access = Access::load_with(&server, Some(&groups)).unwrap();
        let devs = ["devs".to_owned()];
        let mo = access.signed_in("mo", Some(&devs)).unwrap();
        assert_eq!(mo, Caller::Person("mo".into()));
        let grant = access.grant(&mo).unwrap();
        assert_eq!(grant.role(), Role::Member);
        assert!(grant.open("web").is_ok() && grant.open("ops").is_err());
        assert_eq!(
            access.signed_in("ada", Some(&[])),
            Some(Caller::Person("ada".into())),
            "the users file's person of that name, whatever the groups"
        );
        assert!(access
            .signed_in("mo", Some(&["other".to_owned()]))
            .is_none());
        assert_eq!(
            access.grant(&mo).unwrap_err().to_string(),
            "mo is no longer a user of this server.",
            "without a mapped group, at once"
        );
        access.signed_in("mo", Some(&devs)).unwrap();
        assert!(access.signed_in("mo", None).is_none());
        assert!(access.grant(&mo).is_err(), "forgotten by the store");
        let plain = Access::load(&server).unwrap();
        assert_eq!(
            plain.signed_in("mo", Some(&devs)),
            None,
            "no provider, no one"
        );
    }

    #[test]
    fn a_provider_closes_a_server_without_tokens() {
        let (server, _dir) = server(None, None);
        let access = Access::load_with(&server, Some(&[])).unwrap();
        assert_eq!(access.authenticate(None), None);
        assert_eq!(access.authenticate(Some("x")), None);
    }

    #[test]
    fn a_missing_users_file_stops_the_start() {
        let (mut server, dir) = server(None, None);
        server.users_file = Some(dir.path().join("absent.toml"));
        let error = Access::load(&server).err().unwrap().to_string();
        assert!(error.contains("absent.toml"), "{error}");
    }
}
