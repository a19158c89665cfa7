//! "Allow always": a person's command rules of a project, each a pattern over a command
//! line ([`pattern`]), made by accepting a command with `always` (`run/resolve`, in the
//! resolution's own unit of work), listed and revoked with `rules/list` and `rules/revoke`,
//! and applied by the server to the commands (`sh`, `env`) a loop proposes ([`apply`]):
//! when the person who requested the loop may accept in its project and one of their rules
//! there matches, the proposal is theirs to accept without being asked. Where the project
//! runs commands on the server, the loop accepts it itself, as that person, and goes on
//! (`run/action` accept saying the rule); where its clients run them, the server cannot,
//! and the proposal in the loop's outcome says which rule allows it (`allowed`), so the
//! client that runs it (`rummy acp`) does so without asking.
//!
//! A project without rules costs nothing: its count of rules is read with its row when a
//! loop opens, and only a loop of a project with rules looks a person's up, once for the
//! commands of a turn that proposes any.

pub(crate) mod apply;
pub(crate) mod pattern;

use std::sync::Arc;

use serde::{Deserialize, Serialize};

/// Whether the person (`None`: the operator) may accept a proposal in the project named so,
/// by the users file as last read: the role and the projects `run/resolve` needs. A person
/// who may not gets no rule applied.
pub(crate) type MayAccept = Arc<dyn Fn(Option<&str>, &str) -> bool + Send + Sync>;

pub(crate) use crate::hub::notifications::Allowed;

/// `always` of an accepted command's resolution (`run/resolve`): `true` for the command's
/// default pattern ([`pattern::default_pattern`]), or the pattern itself; `false` is none.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub(crate) enum Always {
    Default(bool),
    Pattern(String),
}

impl Always {
    /// The pattern of a rule allowing `command` always, `None` for `false`.
    pub(crate) fn pattern(&self, command: &str) -> Result<Option<String>, RuleError> {
        match self {
            Always::Default(false) => Ok(None),
            Always::Default(true) => pattern::default_pattern(command).map(Some),
            Always::Pattern(pattern) => {
                pattern::CommandPattern::parse(pattern)?;
                Ok(Some(pattern.clone()))
            }
        }
    }
}

/// What is wrong with a rule a client names or makes.
#[derive(Debug, thiserror::Error)]
pub(crate) enum RuleError {
    #[error("bad command pattern '{pattern}': {why}")]
    BadPattern { pattern: String, why: String },
    #[error("no command rule {0}")]
    Unknown(i64),
    #[error("command rule {id} is {whose}'s; only they or an admin may revoke it")]
    NotYours { id: i64, whose: String },
    #[error("'always' allows commands only: {0} is not a command (sh, env)")]
    NotACommand(String),
    #[error("'always' goes with an accepted command (or one that failed), not with '{0}'")]
    NotAccepted(String),
}

/// How the store names the operator, who has rules too: ''.
pub(crate) fn person_key(person: Option<&str>) -> &str {
    person.unwrap_or("")
}

/// The person a stored rule is of (`None`: the operator).
pub(crate) fn person_of(key: &str) -> Option<String> {
    (!key.is_empty()).then(|| key.to_owned())
}
