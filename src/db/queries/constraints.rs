//! Project-level file constraints (`active`, `readonly`, `ignore`), kept across runs.

use crate::db::statement::statement;
use crate::db::Conn;
use diesel::prelude::*;
use diesel::sql_types::{BigInt, Text};

use crate::db::enums::Visibility;
use crate::db::ids::ProjectId;
use crate::db::models::ConstraintRow;
use crate::db::queries::projects::get_project;
use crate::db::schema::file_constraints;
use crate::db::DbError;

/// Sets the constraint for `pattern` (insert or change its visibility). A pattern under
/// the project root given as an absolute path is stored relative to the root.
pub(crate) fn set_constraint(
    conn: &mut Conn,
    project_id: ProjectId,
    pattern: &str,
    visibility: Visibility,
) -> Result<ConstraintRow, DbError> {
    let pattern = relative_pattern(conn, project_id, pattern)?;
    Ok(statement(
        "INSERT INTO file_constraints (project_id, pattern, visibility) VALUES (?, ?, ?)
         ON CONFLICT (project_id, pattern) DO UPDATE SET visibility = excluded.visibility
         RETURNING *",
    )
    .bind::<BigInt, _>(project_id)
    .bind::<Text, _>(pattern)
    .bind::<Text, _>(visibility)
    .get_result(conn)?)
}

/// The project's constraints, in creation order.
pub(crate) fn list_constraints(
    conn: &mut Conn,
    project_id: ProjectId,
) -> Result<Vec<ConstraintRow>, DbError> {
    Ok(
        statement("SELECT * FROM file_constraints WHERE project_id = ? ORDER BY id")
            .bind::<BigInt, _>(project_id)
            .load(conn)?,
    )
}

/// Drops the constraint for `pattern`; `false` when there was none.
pub(crate) fn delete_constraint(
    conn: &mut Conn,
    project_id: ProjectId,
    pattern: &str,
) -> Result<bool, DbError> {
    let pattern = relative_pattern(conn, project_id, pattern)?;
    let deleted = diesel::delete(
        file_constraints::table
            .filter(file_constraints::project_id.eq(project_id))
            .filter(file_constraints::pattern.eq(pattern)),
    )
    .execute(conn)?;
    Ok(deleted > 0)
}

fn relative_pattern(
    conn: &mut Conn,
    project_id: ProjectId,
    pattern: &str,
) -> Result<String, DbError> {
    let project = get_project(conn, project_id)?
        .ok_or_else(|| DbError::NotFound(format!("project {project_id}")))?;
    let relative = project
        .project_root
        .as_deref()
        .map(|root| root.trim_end_matches('/'))
        .filter(|root| !root.is_empty())
        .and_then(|root| pattern.strip_prefix(root))
        .and_then(|rest| rest.strip_prefix('/'))
        .filter(|rest| !rest.is_empty());
    Ok(relative.unwrap_or(pattern).to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::testing::{sample_run, TestDb};

    #[test]
    fn constraints_are_upserted_relative_to_the_root() {
        let mut db = TestDb::new();
        let conn = &mut db.conn;
        let project = sample_run(conn).project_id;
        let active = set_constraint(conn, project, "/p/src/app.js", Visibility::Active).unwrap();
        assert_eq!(active.pattern, "src/app.js");
        let readonly = set_constraint(conn, project, "src/app.js", Visibility::Readonly).unwrap();
        assert_eq!(readonly.id, active.id);
        assert_eq!(readonly.visibility, Visibility::Readonly);
        set_constraint(conn, project, "/elsewhere/x", Visibility::Ignore).unwrap();
        let patterns: Vec<String> = list_constraints(conn, project)
            .unwrap()
            .into_iter()
            .map(|c| c.pattern)
            .collect();
        assert_eq!(patterns, ["src/app.js", "/elsewhere/x"]);
        assert!(delete_constraint(conn, project, "/p/src/app.js").unwrap());
        assert!(!delete_constraint(conn, project, "src/app.js").unwrap());
        assert!(matches!(
            set_constraint(conn, ProjectId(99), "x", Visibility::Active),
            Err(DbError::NotFound(_))
        ));
    }
}
