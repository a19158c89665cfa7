//! People's command rules of a project (`command_rules`, "allow always": `agent::allow`),
//! and each project's count of them (`projects.command_rules`), kept by the units that add
//! and revoke them so that a loop of a project without rules looks none up.

use diesel::prelude::*;
use diesel::sql_types::{BigInt, Nullable, Text};

use crate::db::ids::ProjectId;
use crate::db::statement::statement;
use crate::db::{Conn, DbError};

/// One rule as stored.
#[derive(Debug, Clone, PartialEq, Eq, QueryableByName)]
pub(crate) struct CommandRuleRow {
    #[diesel(sql_type = BigInt)]
    pub id: i64,
    #[diesel(sql_type = BigInt)]
    pub project_id: i64,
    /// Whose rule it is ('' for the operator).
    #[diesel(sql_type = Text)]
    pub person: String,
    #[diesel(sql_type = Text)]
    pub pattern: String,
    /// Who made it ('' for the operator).
    #[diesel(sql_type = Text)]
    pub made_by: String,
    /// `YYYY-MM-DD HH:MM:SS` UTC.
    #[diesel(sql_type = Text)]
    pub made_at: String,
}

/// Adds `person`'s rule `pattern` to `project`, made by `made_by`; a rule they already have
/// is kept as it was. The rule either way.
pub(crate) fn add(
    conn: &mut Conn,
    project: ProjectId,
    person: &str,
    pattern: &str,
    made_by: &str,
) -> Result<CommandRuleRow, DbError> {
    statement(
        "INSERT INTO command_rules (project_id, person, pattern, made_by) VALUES (?, ?, ?, ?) \
         ON CONFLICT (project_id, person, pattern) DO NOTHING",
    )
    .bind::<BigInt, _>(project.0)
    .bind::<Text, _>(person)
    .bind::<Text, _>(pattern)
    .bind::<Text, _>(made_by)
    .execute(conn)?;
    recount(conn, project)?;
    Ok(statement(
        "SELECT id, project_id, person, pattern, made_by, made_at FROM command_rules \
         WHERE project_id = ? AND person = ? AND pattern = ?",
    )
    .bind::<BigInt, _>(project.0)
    .bind::<Text, _>(person)
    .bind::<Text, _>(pattern)
    .get_result(conn)?)
}

/// `project`'s rules, oldest first: `person`'s only, or everyone's for `None`.
pub(crate) fn of_project(
    conn: &mut Conn,
    project: ProjectId,
    person: Option<&str>,
) -> Result<Vec<CommandRuleRow>, DbError> {
    Ok(statement(
        "SELECT id, project_id, person, pattern, made_by, made_at FROM command_rules \
         WHERE project_id = ? AND (? IS NULL OR person = ?) ORDER BY id",
    )
    .bind::<BigInt, _>(project.0)
    .bind::<Nullable<Text>, _>(person)
    .bind::<Nullable<Text>, _>(person)
    .load(conn)?)
}

/// The rule `id`, if there is one.
pub(crate) fn get(conn: &mut Conn, id: i64) -> Result<Option<CommandRuleRow>, DbError> {
    Ok(statement(
        "SELECT id, project_id, person, pattern, made_by, made_at FROM command_rules \
         WHERE id = ?",
    )
    .bind::<BigInt, _>(id)
    .get_result(conn)
    .optional()?)
}

/// Deletes the rule `id`; whether there was one.
pub(crate) fn revoke(conn: &mut Conn, id: i64) -> Result<bool, DbError> {
    let Some(rule) = get(conn, id)? else {
        return Ok(false);
    };
    statement("DELETE FROM command_rules WHERE id = ?")
        .bind::<BigInt, _>(id)
        .execute(conn)?;
    recount(conn, ProjectId(rule.project_id))?;
    Ok(true)
}

/// Sets the project's count of rules to what it has.
fn recount(conn: &mut Conn, project: ProjectId) -> Result<(), DbError> {
    statement(
        "UPDATE projects SET command_rules = \
         (SELECT count(*) FROM command_rules WHERE project_id = ?) WHERE id = ?",
    )
    .bind::<BigInt, _>(project.0)
    .bind::<BigInt, _>(project.0)
    .execute(conn)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::testing::{sample_run, TestDb};

    fn rules_counted(conn: &mut Conn, project: ProjectId) -> i32 {
        crate::db::queries::projects::get_project(conn, project)
            .unwrap()
            .unwrap()
            .command_rules
    }

    #[test]
    fn rules_are_kept_per_person_once_and_the_project_counts_them() {
        let mut db = TestDb::new();
        let project = sample_run(&mut db.conn).project_id;
        assert_eq!(rules_counted(&mut db.conn, project), 0);
        let alice = add(&mut db.conn, project, "alice", "cargo test *", "alice").unwrap();
        let again = add(&mut db.conn, project, "alice", "cargo test *", "alice").unwrap();
        assert_eq!(alice, again);
        add(&mut db.conn, project, "", "make *", "").unwrap();
        assert_eq!(rules_counted(&mut db.conn, project), 2);
        let hers = of_project(&mut db.conn, project, Some("alice")).unwrap();
        assert_eq!(hers, vec![alice.clone()]);
        assert_eq!(of_project(&mut db.conn, project, None).unwrap().len(), 2);
        assert!(revoke(&mut db.conn, alice.id).unwrap());
        assert!(!revoke(&mut db.conn, alice.id).unwrap());
        assert_eq!(get(&mut db.conn, alice.id).unwrap(), None);
        assert_eq!(rules_counted(&mut db.conn, project), 1);
    }
}
