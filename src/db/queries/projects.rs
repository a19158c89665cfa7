//! Projects: a name and the root it was first opened with, on `init`; no two roots overlap.

use crate::db::statement::statement;
use crate::db::Conn;
use diesel::prelude::*;
use diesel::sql_types::{Nullable, Text};
use std::path::{Path, PathBuf};

use crate::db::ids::ProjectId;
use crate::db::models::{ProjectInsertForm, ProjectRow};
use crate::db::schema::projects;
use crate::db::DbError;

/// Inserts the project, or updates the one with the same name; a `None` root keeps the
/// stored value.
pub(crate) fn upsert_project(
    conn: &mut Conn,
    form: &ProjectInsertForm,
) -> Result<ProjectRow, DbError> {
    Ok(statement(
        "INSERT INTO projects (name, project_root) VALUES (?, ?)
         ON CONFLICT (name) DO UPDATE SET
             project_root = COALESCE(excluded.project_root, projects.project_root)
         RETURNING *",
    )
    .bind::<Text, _>(&form.name)
    .bind::<Nullable<Text>, _>(&form.project_root)
    .get_result(conn)?)
}

/// What [`open_project`] found.
#[derive(Debug, PartialEq)]
pub(crate) enum Opening {
    /// The project, created now or found with the same root.
    Opened(ProjectRow),
    /// A project of that name exists with another root; nothing changed.
    OtherRoot,
    /// No project of that name, and the caller may not create one; nothing changed.
    Absent,
    /// The root is, holds or lies inside another project's root; nothing changed.
    Overlaps,
}

/// How [`open_project`] compares roots: where a stored root leads now, and whether two
/// roots overlap (the `project` module's `resolve` and `overlap`, given by the caller).
pub(crate) struct RootRules<Resolve, Overlap> {
    pub resolve: Resolve,
    pub overlap: Overlap,
}

/// Opens the project `form.name` at `form.project_root` (resolved): creates it when it does
/// not exist and `may_create`, finds it when its stored root is the same, or leads to the
/// same place (a project's root never changes; the stored spelling is then replaced by the
/// resolved one), and never stores a root that is, holds or lies inside another project's
/// root, compared both as stored and as it leads now. In one unit of work, so two `init`s
/// cannot both take overlapping roots.
pub(crate) fn open_project<Resolve, Overlap>(
    conn: &mut Conn,
    form: &ProjectInsertForm,
    may_create: bool,
    rules: &RootRules<Resolve, Overlap>,
) -> Result<Opening, DbError>
where
    Resolve: Fn(&Path) -> Option<PathBuf>,
    Overlap: Fn(&Path, &Path) -> bool,
{
    if form.project_root.is_none() {
        return Err(DbError::Invalid("a project needs a root".to_owned()));
    }
    let root = Path::new(form_root(form));
    let existing: Option<ProjectRow> = projects::table
        .filter(projects::name.eq(&form.name))
        .select(ProjectRow::as_select())
        .first(conn)
        .optional()?;
    match existing
        .as_ref()
        .and_then(|project| project.project_root.as_deref())
    {
        Some(stored) if stored == form_root(form) => {
            return Ok(Opening::Opened(existing.clone().ok_or_else(|| {
                DbError::Internal("the project vanished".to_owned())
            })?))
        }
        Some(stored) if (rules.resolve)(Path::new(stored)).as_deref() != Some(root) => {
            return Ok(Opening::OtherRoot)
        }
        Some(_) => {}
        None if existing.is_none() && !may_create => return Ok(Opening::Absent),
        None => {}
    }
    let others: Vec<(String, Option<String>)> = projects::table
        .filter(projects::name.ne(&form.name))
        .select((projects::name, projects::project_root))
        .load(conn)?;
    let overlapping = others
        .iter()
        .filter_map(|(_, other)| other.as_deref().map(Path::new))
        .any(|other| {
            (rules.overlap)(other, root)
                || (rules.resolve)(other).is_some_and(|now| (rules.overlap)(&now, root))
        });
    if overlapping {
        return Ok(Opening::Overlaps);
    }
    upsert_project(conn, form).map(Opening::Opened)
}

/// The root `form` names ("" without one, which [`open_project`] refuses first).
fn form_root(form: &ProjectInsertForm) -> &str {
    form.project_root.as_deref().unwrap_or_default()
}

/// Every project, by name.
pub(crate) fn all_projects(conn: &mut Conn) -> Result<Vec<ProjectRow>, DbError> {
    Ok(projects::table
        .order(projects::name.asc())
        .select(ProjectRow::as_select())
        .load(conn)?)
}

/// The project with this id.
pub(crate) fn get_project(conn: &mut Conn, id: ProjectId) -> Result<Option<ProjectRow>, DbError> {
    Ok(projects::table
        .find(id)
        .select(ProjectRow::as_select())
        .first(conn)
        .optional()?)
}

/// The project `name` when its stored root is `root` exactly: what [`open_project`] finds
/// without writing, read on a reader so a client re-opening its project does not wait for
/// the writer.
pub(crate) fn opened_at(
    conn: &mut Conn,
    name: &str,
    root: &str,
) -> Result<Option<ProjectRow>, DbError> {
    Ok(projects::table
        .filter(projects::name.eq(name))
        .filter(projects::project_root.eq(root))
        .select(ProjectRow::as_select())
        .first(conn)
        .optional()?)
}

/// The project with this name.
pub(crate) fn find_project(conn: &mut Conn, name: &str) -> Result<Option<ProjectRow>, DbError> {
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

    fn form(name: &str, root: Option<&str>) -> ProjectInsertForm {
        ProjectInsertForm {
            name: name.into(),
            project_root: root.map(Into::into),
        }
    }

    /// Lexical rules, with `/link` leading to `/a` (a stored spelling through a symlink).
    fn rules() -> RootRules<impl Fn(&Path) -> Option<PathBuf>, impl Fn(&Path, &Path) -> bool> {
        RootRules {
            resolve: |path: &Path| {
                Some(match path.strip_prefix("/link") {
                    Ok(rest) => Path::new("/a").join(rest),
                    Err(_) => path.to_path_buf(),
                })
            },
            overlap: |one: &Path, other: &Path| one.starts_with(other) || other.starts_with(one),
        }
    }

    fn open(db: &mut TestDb, name: &str, root: &str, may_create: bool) -> Opening {
        open_project(&mut db.conn, &form(name, Some(root)), may_create, &rules()).unwrap()
    }

    #[test]
    fn upsert_keeps_the_old_root_when_none_is_given() {
        let mut db = TestDb::new();
        let first = upsert_project(&mut db.conn, &form("p", Some("/a"))).unwrap();
        let second = upsert_project(&mut db.conn, &form("p", None)).unwrap();
        assert_eq!(first.id, second.id);
        assert_eq!(second.project_root.as_deref(), Some("/a"));
        let third = upsert_project(&mut db.conn, &form("p", Some("/b"))).unwrap();
        assert_eq!(third.project_root.as_deref(), Some("/b"));
        let other = upsert_project(&mut db.conn, &form("q", Some("/q"))).unwrap();
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
        assert_eq!(open(&mut db, "p", "/a", false), Opening::Absent);
        assert_eq!(find_project(&mut db.conn, "p").unwrap(), None);
        let Opening::Opened(created) = open(&mut db, "p", "/a", true) else {
            panic!("not created");
        };
        assert_eq!(open(&mut db, "p", "/b", true), Opening::OtherRoot);
        let Opening::Opened(again) = open(&mut db, "p", "/a", false) else {
            panic!("not opened");
        };
        assert_eq!(again, created);
        let rootless = upsert_project(&mut db.conn, &form("q", None)).unwrap();
        let Opening::Opened(rooted) = open(&mut db, "q", "/q", false) else {
            panic!("a project without a root takes the first one given");
        };
        assert_eq!(rooted.id, rootless.id);
        assert_eq!(rooted.project_root.as_deref(), Some("/q"));
        assert!(matches!(
            open_project(&mut db.conn, &form("r", None), true, &rules()),
            Err(DbError::Invalid(_))
        ));
    }

    #[test]
    fn no_root_is_holds_or_lies_inside_another_projects_root() {
        let mut db = TestDb::new();
        assert!(matches!(
            open(&mut db, "beta", "/p/beta", true),
            Opening::Opened(_)
        ));
        for (name, root) in [
            ("same", "/p/beta"),
            ("inside", "/p/beta/src"),
            ("holds", "/p"),
            ("everything", "/"),
        ] {
            assert_eq!(open(&mut db, name, root, true), Opening::Overlaps, "{root}");
            assert_eq!(find_project(&mut db.conn, name).unwrap(), None, "{root}");
        }
        assert!(matches!(
            open(&mut db, "beta2", "/p/beta2", true),
            Opening::Opened(_)
        ));
        let rootless = upsert_project(&mut db.conn, &form("late", None)).unwrap();
        assert_eq!(open(&mut db, "late", "/p/beta/x", false), Opening::Overlaps);
        assert_eq!(
            find_project(&mut db.conn, "late").unwrap(),
            Some(rootless),
            "a refused root is not taken"
        );
    }

    #[test]
    fn a_stored_root_is_compared_where_it_leads_and_stored_resolved_once_opened() {
        let mut db = TestDb::new();
        upsert_project(&mut db.conn, &form("old", Some("/link/old"))).unwrap();
        assert_eq!(
            open(&mut db, "new", "/a/old/inner", true),
            Opening::Overlaps,
            "a stored spelling through a symlink is compared where it leads"
        );
        let Opening::Opened(opened) = open(&mut db, "old", "/a/old", false) else {
            panic!("its own resolved root opens it");
        };
        assert_eq!(opened.project_root.as_deref(), Some("/a/old"));
        assert_eq!(
            find_project(&mut db.conn, "old")
                .unwrap()
                .unwrap()
                .project_root
                .as_deref(),
            Some("/a/old")
        );
        upsert_project(&mut db.conn, &form("beta", Some("/a/beta"))).unwrap();
        upsert_project(&mut db.conn, &form("moved", Some("/link/beta"))).unwrap();
        assert_eq!(
            open(&mut db, "moved", "/a/beta", false),
            Opening::Overlaps,
            "a root that now leads into another project is not stored there"
        );
    }
}
