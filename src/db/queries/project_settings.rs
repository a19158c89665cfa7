//! A project's own settings (`project/config`): one JSON object per project, stored as the
//! admin gave it; what it means and what it may hold is the caller's.

use diesel::prelude::*;
use diesel::sql_types::{BigInt, Nullable, Text};

use crate::db::ids::ProjectId;
use crate::db::statement::statement;
use crate::db::{Conn, DbError};

#[derive(QueryableByName)]
struct Stored {
    #[diesel(sql_type = Text)]
    settings: String,
}

/// The project's settings as stored, `None` when it has none of its own.
pub(crate) fn get(conn: &mut Conn, project: ProjectId) -> Result<Option<String>, DbError> {
    let stored: Option<Stored> =
        statement("SELECT settings FROM project_settings WHERE project_id = ?")
            .bind::<BigInt, _>(project.0)
            .get_result(conn)
            .optional()?;
    Ok(stored.map(|stored| stored.settings))
}

/// Every project's settings as stored.
pub(crate) fn all(conn: &mut Conn) -> Result<Vec<String>, DbError> {
    let stored: Vec<Stored> = statement("SELECT settings FROM project_settings").load(conn)?;
    Ok(stored.into_iter().map(|stored| stored.settings).collect())
}

/// Replaces the project's settings with `settings`, set by `person` (`None`: the operator).
pub(crate) fn put(
    conn: &mut Conn,
    project: ProjectId,
    settings: &str,
    person: Option<&str>,
) -> Result<(), DbError> {
    statement(
        "INSERT INTO project_settings (project_id, settings, updated_by) VALUES (?, ?, ?)
         ON CONFLICT (project_id) DO UPDATE SET
             settings = excluded.settings,
             updated_by = excluded.updated_by,
             updated_at = datetime('now')",
    )
    .bind::<BigInt, _>(project.0)
    .bind::<Text, _>(settings)
    .bind::<Nullable<Text>, _>(person)
    .execute(conn)?;
    Ok(())
}
