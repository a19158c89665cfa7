//! `readonly` file constraints, enforced: the model may read such a file but no tool may
//! change it. Edits, writes, removals, moves away from it and copies or moves onto it are
//! refused (403) before any proposal exists, and with `RUMMY_APPLY_EDITS=server` an accepted
//! proposal whose file became readonly meanwhile is refused instead of applied.
//!
//! The constraints are read from the store on every dispatch and resolution, so a
//! constraint pinned a moment ago already holds.

use crate::db::Conn;

use crate::db::ids::RunId;
use crate::db::paths::is_file;
use crate::db::queries::{constraints, runs};
use crate::plugins::error::ToolError;
use crate::project::{ConstraintPattern, ConstraintSet, FileConstraint, Visibility};

/// What the model is told when a readonly file would change.
const REFUSAL: &str = include_str!("../text/readonly.md");

/// The file constraints of one project, asked only whether a file is readonly.
#[derive(Debug, Clone, Default)]
pub struct ReadonlyFiles {
    constraints: ConstraintSet,
}

impl ReadonlyFiles {
    /// The constraints of the run's project as stored (none when the run is unknown).
    pub fn of_run(conn: &mut Conn, run_id: RunId) -> Result<Self, ToolError> {
        let Some(run) = runs::get_run(conn, run_id)? else {
            return Ok(Self::default());
        };
        let rows = constraints::list_constraints(conn, run.project_id)?;
        let mut rules = Vec::with_capacity(rows.len());
        for row in rows {
            rules.push(FileConstraint {
                pattern: ConstraintPattern::stored(&row.pattern)?,
                visibility: row.visibility.as_str().parse::<Visibility>()?,
            });
        }
        Ok(Self {
            constraints: ConstraintSet::new(rules)?,
        })
    }

    /// Whether `path` is a project file whose governing constraint is `readonly`. The path
    /// is compared lexically normalized (`./a//b` is `a/b`), so a spelling cannot slip past.
    pub fn contains(&self, path: &str) -> bool {
        if !is_file(path) {
            return false;
        }
        let normalized: Vec<&str> = path
            .split('/')
            .filter(|segment| !segment.is_empty() && *segment != ".")
            .collect();
        self.constraints.visibility_of(&normalized.join("/")) == Some(Visibility::Readonly)
    }

    /// The model-facing refusal when `tool` would change `path`, `None` when it may.
    pub fn refusal(&self, tool: &str, path: &str) -> Option<String> {
        self.contains(path).then(|| {
            REFUSAL
                .trim_end()
                .replace("{path}", path)
                .replace("{tool}", tool)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plugins::bundled::tools::testing::TestRun;

    #[test]
    fn the_governing_constraint_decides_and_spellings_do_not_matter() {
        let mut run = TestRun::new();
        run.constrain("generated/**", crate::db::enums::Visibility::Readonly);
        run.constrain("generated/keep.rs", crate::db::enums::Visibility::Active);
        run.constrain("LICENSE", crate::db::enums::Visibility::Readonly);
        let readonly = ReadonlyFiles::of_run(&mut run.conn, run.run_id).unwrap();
        assert!(readonly.contains("generated/api.rs"));
        assert!(readonly.contains("./generated//api.rs"));
        assert!(readonly.contains("LICENSE"));
        assert!(!readonly.contains("generated/keep.rs"));
        assert!(!readonly.contains("src/app.rs"));
        assert!(!readonly.contains("known://LICENSE"));
        let refusal = readonly.refusal("set", "LICENSE").unwrap();
        assert!(refusal.contains("LICENSE") && refusal.contains("<set>"));
        assert!(refusal.contains("YOU MUST NOT"));
        assert_eq!(readonly.refusal("set", "src/app.rs"), None);
    }
}
