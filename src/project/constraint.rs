//! File constraints: project-level rules that pin files into the model's view (`active`,
//! `readonly`) or hide them (`ignore`). Patterns are normalized against the project root
//! before they are stored, and matched against scanned [`ProjectPath`](super::ProjectPath)s.
//!
//! A pattern is a glob when it contains `*` or `?` (`*` stays within one segment, `**`
//! crosses segments, `{a,b}` and `[ab]` work inside globs); otherwise it is a literal path,
//! which matches that file and, when it names a directory, everything below it.
//! When several constraints match one file the most specific wins: an exact literal, then
//! the deepest literal directory, then globs; among equals the most restrictive
//! (`ignore` over `readonly` over `active`).

use std::collections::HashMap;
use std::fmt;
use std::str::FromStr;

use globset::{Glob, GlobBuilder, GlobSet, GlobSetBuilder};
use serde::{Deserialize, Serialize};

use super::{ProjectError, ProjectRoot};

/// What a constraint does to the files it matches, ordered from least to most restrictive
/// (the order decides between equally specific constraints).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Visibility {
    /// Shown to the model in full.
    Active,
    /// Shown in full, but the model may not edit it.
    Readonly,
    /// Hidden: not scanned, not shown.
    Ignore,
}

/// A constraint pattern normalized relative to the project root.
#[derive(Debug, Clone)]
pub(crate) struct ConstraintPattern {
    text: String,
    glob: Option<Glob>,
}

/// One constraint: a pattern and what it does.
#[derive(Debug, Clone)]
pub(crate) struct FileConstraint {
    /// Which files it applies to.
    pub pattern: ConstraintPattern,
    /// What it does to them.
    pub visibility: Visibility,
}

/// A project's constraints, compiled for matching many paths.
#[derive(Debug, Clone, Default)]
pub(crate) struct ConstraintSet {
    literals: HashMap<String, Visibility>,
    globs: GlobSet,
    glob_visibilities: Vec<Visibility>,
}

impl Visibility {
    /// The wire and database spelling: `active`, `readonly` or `ignore`.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Active => "active",
            Self::Readonly => "readonly",
            Self::Ignore => "ignore",
        }
    }
}

impl FromStr for Visibility {
    type Err = ProjectError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text {
            "active" => Ok(Self::Active),
            "readonly" => Ok(Self::Readonly),
            "ignore" => Ok(Self::Ignore),
            other => Err(ProjectError::UnknownVisibility(other.to_string())),
        }
    }
}

impl fmt::Display for Visibility {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(self.as_str())
    }
}

impl ConstraintPattern {
    /// Normalizes a client-given pattern: an absolute path inside the root becomes relative,
    /// `.`/`..`/empty segments are resolved lexically, and a pattern escaping the root, empty,
    /// holding a NUL byte, with `..` after a wildcard, or with invalid glob syntax is refused.
    /// The disk is not consulted (a constraint may name files that do not exist yet).
    pub(crate) fn normalize(root: &ProjectRoot, raw: &str) -> Result<Self, ProjectError> {
        let mut seen_wildcard = false;
        for segment in raw.split('/') {
            if segment == ".." && seen_wildcard {
                return Err(ProjectError::ParentAfterWildcard(raw.to_string()));
            }
            seen_wildcard |= is_glob(segment);
        }
        let text = root.relative_segments(raw)?.join("/");
        if text.is_empty() {
            return Err(ProjectError::EmptyPath);
        }
        let glob = if is_glob(&text) {
            Some(compile(&text)?)
        } else {
            None
        };
        Ok(Self { text, glob })
    }

    /// A pattern as stored, already normalized by [`ConstraintPattern::normalize`]; compiled
    /// without consulting the disk.
    pub(crate) fn stored(text: &str) -> Result<Self, ProjectError> {
        let glob = if is_glob(text) {
            Some(compile(text)?)
        } else {
            None
        };
        Ok(Self {
            text: text.to_string(),
            glob,
        })
    }

    /// The normalized pattern, as it should be stored.
    pub(crate) fn as_str(&self) -> &str {
        &self.text
    }

    /// Whether the pattern is a glob rather than a literal path.
    #[cfg(test)]
    pub(crate) fn is_glob(&self) -> bool {
        self.glob.is_some()
    }
}

impl fmt::Display for ConstraintPattern {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(&self.text)
    }
}

impl ConstraintSet {
    /// The project's constraints as the store keeps them (`(pattern, visibility)`), each
    /// normalized against `root`; one that no longer normalizes or parses is left out.
    pub(crate) fn stored(
        root: &ProjectRoot,
        stored: &[(String, String)],
    ) -> Result<Self, ProjectError> {
        Self::new(stored.iter().filter_map(|(pattern, visibility)| {
            Some(FileConstraint {
                pattern: ConstraintPattern::normalize(root, pattern).ok()?,
                visibility: visibility.parse::<Visibility>().ok()?,
            })
        }))
    }

    /// Compiles constraints for matching. Duplicate literal patterns keep the most
    /// restrictive visibility.
    pub(crate) fn new(
        constraints: impl IntoIterator<Item = FileConstraint>,
    ) -> Result<Self, ProjectError> {
        let mut literals: HashMap<String, Visibility> = HashMap::new();
        let mut builder = GlobSetBuilder::new();
        let mut glob_visibilities = Vec::new();
        for FileConstraint {
            pattern,
            visibility,
        } in constraints
        {
            match pattern.glob {
                Some(glob) => {
                    builder.add(glob);
                    glob_visibilities.push(visibility);
                }
                None => {
                    let slot = literals.entry(pattern.text).or_insert(visibility);
                    *slot = (*slot).max(visibility);
                }
            }
        }
        let globs = builder
            .build()
            .map_err(|source| ProjectError::InvalidGlob {
                pattern: String::from("<constraint set>"),
                source,
            })?;
        Ok(Self {
            literals,
            globs,
            glob_visibilities,
        })
    }

    /// The visibility that applies to `path` (relative, `/`-separated), if any constraint
    /// matches it.
    pub(crate) fn visibility_of(&self, path: &str) -> Option<Visibility> {
        if let Some(visibility) = self.deepest_literal(path) {
            return Some(visibility);
        }
        self.globs
            .matches(path)
            .into_iter()
            .filter_map(|index| self.glob_visibilities.get(index).copied())
            .max()
    }

    /// Literal paths pinned `active` or `readonly`: files the client asked for by name, to be
    /// listed even when `.gitignore` or the hidden-file rule would skip them.
    pub(crate) fn pinned_literals(&self) -> impl Iterator<Item = &str> {
        self.literals
            .iter()
            .filter(|(_, visibility)| **visibility != Visibility::Ignore)
            .map(|(path, _)| path.as_str())
    }

    /// The literal matching `path` exactly, else the one naming its deepest ancestor.
    fn deepest_literal(&self, path: &str) -> Option<Visibility> {
        if self.literals.is_empty() {
            return None;
        }
        let mut candidate = path;
        loop {
            if let Some(visibility) = self.literals.get(candidate) {
                return Some(*visibility);
            }
            candidate = candidate.rsplit_once('/')?.0;
        }
    }
}

/// Whether a pattern (or one segment of it) uses wildcards.
fn is_glob(pattern: &str) -> bool {
    pattern.contains(['*', '?'])
}

fn compile(pattern: &str) -> Result<Glob, ProjectError> {
    GlobBuilder::new(pattern)
        .literal_separator(true)
        .backslash_escape(true)
        .build()
        .map_err(|source| ProjectError::InvalidGlob {
            pattern: pattern.to_string(),
            source,
        })
}

#[cfg(test)]
mod tests;
