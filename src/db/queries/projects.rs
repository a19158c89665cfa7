//! Projects: upserted by name on `init`.

use diesel::prelude::*;

use crate::db::ids::ProjectId;
use crate::db::models::{ProjectInsertForm, ProjectRow};
use crate::db::schema::projects;
use crate::db::DbError;

/// Inserts the project, or updates the one with the same name; a `None` root or config
/// path keeps the stored value.
pub fn upsert_project(
    conn: &mut SqliteConnection,
    form: &ProjectInsertForm,
) -> Result<ProjectRow, DbError> {
    Ok(diesel::insert_into(projects::table)
        .values(form)
        .on_conflict(projects::name)
        .do_update()
        .set(form)
        .returning(ProjectRow::as_returning())
        .get_result(conn)?)
}

/// The project with this id.
pub fn get_project(
    conn: &mut SqliteConnection,
    id: ProjectId,
) -> Result<Option<ProjectRow>, DbError> {
    Ok(projects::table
        .find(id)
        .select(ProjectRow::as_select())
        .first(conn)
        .optional()?)
}

#[cfg(test)]
/// The project with this name.
pub fn find_project(
    conn: &mut SqliteConnection,
    name: &str,
) -> Result<Option<ProjectRow>, DbError> {
    Ok(projects::table
        .filter(projects::name.eq(name))
        .select(ProjectRow::as_select())
        .first(conn)
        .optional()?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::testing::TestDb;

    fn form(name: &str, root: Option<&str>, config: Option<&str>) -> ProjectInsertForm {
        ProjectInsertForm {
            name: name.into(),
            project_root: root.map(Into::into),
            config_path: config.map(Into::into),
        }
    }

    #[test]
    fn upsert_keeps_old_values_when_new_ones_are_missing() {
        let mut db = TestDb::new();
        let first = upsert_project(&mut db.conn, &form("p", Some("/a"), Some("/a/c"))).unwrap();
        let second = upsert_project(&mut db.conn, &form("p", None, None)).unwrap();
        assert_eq!(first.id, second.id);
        assert_eq!(second.project_root.as_deref(), Some("/a"));
        let third = upsert_project(&mut db.conn, &form("p", Some("/b"), None)).unwrap();
        assert_eq!(third.project_root.as_deref(), Some("/b"));
        assert_eq!(third.config_path.as_deref(), Some("/a/c"));
        let other = upsert_project(&mut db.conn, &form("q", Some("/q"), None)).unwrap();
        assert_ne!(other.id, first.id);
        assert_eq!(
            find_project(&mut db.conn, "q").unwrap(),
            Some(other.clone())
        );
        assert_eq!(get_project(&mut db.conn, other.id).unwrap(), Some(other));
        assert_eq!(find_project(&mut db.conn, "missing").unwrap(), None);
    }
}
