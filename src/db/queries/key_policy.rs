//! Whether a project requires its runs to call providers with their starter's own key
//! (`projects.personal_keys_required`, `keys/required`); read at each call's admission with
//! whom it counts for (`usage::paying`), when [`anyone_keyed`] said at start that a key or a
//! requirement is stored (`llm::personal_keys`).

use diesel::prelude::*;
use diesel::sql_types::{BigInt, Bool};

use crate::db::ids::ProjectId;
use crate::db::statement::statement;
use crate::db::{Conn, DbError};

#[derive(QueryableByName)]
struct Required {
    #[diesel(sql_type = Bool)]
    personal_keys_required: bool,
}

/// Whether `project` requires people's own keys.
pub(crate) fn required(conn: &mut Conn, project: ProjectId) -> Result<bool, DbError> {
    let row: Required = statement("SELECT personal_keys_required FROM projects WHERE id = ?")
        .bind::<BigInt, _>(project.0)
        .get_result(conn)?;
    Ok(row.personal_keys_required)
}

/// Whether any person's own provider key is stored, or any project requires them.
pub(crate) fn anyone_keyed(conn: &mut Conn) -> Result<bool, DbError> {
    #[derive(QueryableByName)]
    struct Keyed {
        #[diesel(sql_type = Bool)]
        keyed: bool,
    }
    let row: Keyed = statement(
        "SELECT (EXISTS (SELECT 1 FROM secrets WHERE kind = 'provider') \
                 OR EXISTS (SELECT 1 FROM projects WHERE personal_keys_required = TRUE)) AS keyed",
    )
    .get_result(conn)?;
    Ok(row.keyed)
}

/// Sets whether `project` requires people's own keys.
pub(crate) fn set_required(
    conn: &mut Conn,
    project: ProjectId,
    required: bool,
) -> Result<(), DbError> {
    statement("UPDATE projects SET personal_keys_required = ? WHERE id = ?")
        .bind::<Bool, _>(required)
        .bind::<BigInt, _>(project.0)
        .execute(conn)?;
    Ok(())
}
