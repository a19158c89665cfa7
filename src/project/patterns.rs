//! [`ProjectPatterns`]: a set of project names or globs, as the users file (who may open
//! what) and `mcp.toml` (which projects a server serves) write them.

use globset::{Glob, GlobSet, GlobSetBuilder};

/// Project names or globs, and what they match.
#[derive(Debug, Clone)]
pub(crate) struct ProjectPatterns {
    /// As written, for messages and clients.
    written: Vec<String>,
    set: GlobSet,
}

impl ProjectPatterns {
    /// The set of `patterns`; `Err` says which one does not parse.
    pub(crate) fn new(patterns: Vec<String>) -> Result<ProjectPatterns, String> {
        let mut set = GlobSetBuilder::new();
        for pattern in &patterns {
            let glob = Glob::new(pattern)
                .map_err(|error| format!("project pattern {pattern:?}: {error}"))?;
            set.add(glob);
        }
        let set = set
            .build()
            .map_err(|error| format!("project patterns: {error}"))?;
        Ok(ProjectPatterns {
            written: patterns,
            set,
        })
    }

    /// No project (a server attached to one run by a client, not served to projects).
    pub(crate) fn none() -> ProjectPatterns {
        ProjectPatterns {
            written: Vec::new(),
            set: GlobSet::empty(),
        }
    }

    /// Whether the project called `name` is among them.
    pub(crate) fn matches(&self, name: &str) -> bool {
        self.set.is_match(name)
    }

    /// The patterns as written.
    pub(crate) fn written(&self) -> &[String] {
        &self.written
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn patterns(written: &[&str]) -> Result<ProjectPatterns, String> {
        ProjectPatterns::new(written.iter().map(|p| p.to_string()).collect())
    }

    #[test]
    fn names_and_globs_match_whole_names() {
        let set = patterns(&["web", "api-*"]).unwrap();
        assert!(set.matches("web"));
        assert!(set.matches("api-v2"));
        assert!(!set.matches("webshop"));
        assert!(!set.matches("old-api-v2"));
        assert_eq!(set.written(), ["web", "api-*"]);
    }

    #[test]
    fn none_match_nothing_and_a_bad_glob_is_named() {
        assert!(!patterns(&[]).unwrap().matches("web"));
        let refused = patterns(&["ok", "["]).unwrap_err();
        assert!(refused.contains("\"[\""), "{refused}");
    }
}
