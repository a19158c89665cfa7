//! The one value every edit syntax parses into: a search text, its replacement, and how to match.

use serde::{Deserialize, Serialize};

/// One search/replace step of an edit, as parsed from a `<set>` body or its attributes.
///
/// Serialises to the wire shape `{search, replace[, flags, sed]}` that commands and `set://`
/// entries carry: `search: null` marks a replace-only block (the whole body is replaced),
/// `sed: true` marks a sed regex whose `flags` are sed flags (`g`, `i`, `m`, `s`, `v`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct EditBlock {
    /// Text to find; `None` for a replace-only block.
    pub search: Option<String>,
    /// Text put in place of the match, verbatim (sed blocks expand `\1`…`\9`).
    pub replace: String,
    /// Sed flags; empty when none or when the block is literal.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub flags: String,
    /// Whether `search` is a sed regular expression.
    #[serde(default, skip_serializing_if = "is_false")]
    pub sed: bool,
}

#[allow(clippy::trivially_copy_pass_by_ref)]
fn is_false(value: &bool) -> bool {
    !*value
}

impl EditBlock {
    /// A literal search/replace block.
    pub fn literal(search: impl Into<String>, replace: impl Into<String>) -> Self {
        Self {
            search: Some(search.into()),
            replace: replace.into(),
            flags: String::new(),
            sed: false,
        }
    }

    /// A replace-only block: its text becomes the whole new body.
    pub fn replace_only(replace: impl Into<String>) -> Self {
        Self {
            search: None,
            replace: replace.into(),
            flags: String::new(),
            sed: false,
        }
    }

    /// A sed block: `search` is a regular expression applied line by line.
    pub fn sed(
        search: impl Into<String>,
        replace: impl Into<String>,
        flags: impl Into<String>,
    ) -> Self {
        Self {
            search: Some(search.into()),
            replace: replace.into(),
            flags: flags.into(),
            sed: true,
        }
    }
}
