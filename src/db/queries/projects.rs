//! Projects: a name and the root it was first opened with, on `init`.

use crate::db::statement::statement;
use crate::db::Conn;
use diesel::prelude::*;
use diesel::sql_types::{Nullable, Text};

use crate::db::ids::ProjectId;
use crate::db::models::{ProjectInsertForm, ProjectRow};
use crate::db::schema::projects;
use crate::db::DbError;

/// Inserts the project, or updates the one with the same name; a `None` root or config
/// path keeps the stored value.
pub fn upsert_project(conn: &mut Conn, form: &ProjectInsertForm) -> Result<ProjectRow, DbError> {
    Ok(statement(
        "INSERT INTO projects (name, project_root, config_path) VALUES (?, ?, ?)
         ON CONFLICT (name) DO UPDATE SET
             project_root = COALESCE(excluded.project_root, projects.project_root),
             config_path = COALESCE(excluded.config_path, projects.config_path)
         RETURNING *",
    )
    .bind::<Text, _>(&form.name)
    .bind::<Nullable<Text>, _>(&form.project_root)
    .bind::<Nullable<Text>, _>(&form.config_path)
    .get_result(conn)?)
}

/// What [`open_project`] found.
#[derive(Debug, PartialEq)]
pub enum Opening {
    /// The project, created now or found with the same root.
    Opened(ProjectRow),
    /// A project of that name exists with another root; nothing changed.
    OtherRoot,
    /// No project of that name, and the caller may not create one; nothing changed.
    Absent,
}

/// Opens the project `form.name` at `form.project_root`: creates it when it does not exist
/// and `may_create`, finds it when its stored root is the same (a project's root never
/// changes), and then stores a given config path.
pub fn open_project(
    conn: &mut Conn,
    form: &ProjectInsertForm,
    may_create: bool,
) -> Result<Opening, DbError> {
    let existing: Option<ProjectRow> = projects::table
        .filter(projects::name.eq(&form.name))
        .select(ProjectRow::as_select())
        .first(conn)
        .optional()?;
    match existing {
        Some(project)
            if project.project_root.is_some() && project.project_root != form.project_root =>
        {
            Ok(Opening::OtherRoot)
        }
        None if !may_create => Ok(Opening::Absent),
        _ => upsert_project(conn, form).map(Opening::Opened),
    }
}

/// The project with this id.
pub fn get_project(conn: &mut Conn, id: ProjectId) -> Result<Option<ProjectRow>, DbError> {
    Ok(projects::table
        .find(id)
        .select(ProjectRow::as_select())
        .first(conn)
        .optional()?)
}

#[cfg(test)]
/// The project with this name.
pub fn find_project(conn: &mut Conn, name: &str) -> Result<Option<ProjectRow>, DbError> {
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

    #[test]
    fn a_project_opens_only_at_its_first_root_and_is_created_only_when_allowed() {
        let mut db = TestDb::new();
        assert_eq!(
            open_project(&mut db.conn, &form("p", Some("/a"), None), false).unwrap(),
            Opening::Absent
        );
        assert_eq!(find_project(&mut db.conn, "p").unwrap(), None);
        let Opening::Opened(created) =
            open_project(&mut db.conn, &form("p", Some("/a"), None), true).unwrap()
        else {
            panic!("not created");
        };
        assert_eq!(
            open_project(&mut db.conn, &form("p", Some("/b"), None), true).unwrap(),
            Opening::OtherRoot
        );
        let Opening::Opened(again) =
            open_project(&mut db.conn, &form("p", Some("/a"), Some("/a/c")), false).unwrap()
        else {
            panic!("not opened");
        };
        assert_eq!(again.id, created.id);
        assert_eq!(again.project_root.as_deref(), Some("/a"));
        assert_eq!(again.config_path.as_deref(), Some("/a/c"));
        let rootless = upsert_project(&mut db.conn, &form("q", None, None)).unwrap();
        let Opening::Opened(rooted) =
            open_project(&mut db.conn, &form("q", Some("/q"), None), false).unwrap()
        else {
            panic!("a project without a root takes the first one given");
        };
        assert_eq!(rooted.id, rootless.id);
        assert_eq!(rooted.project_root.as_deref(), Some("/q"));
    }
}
