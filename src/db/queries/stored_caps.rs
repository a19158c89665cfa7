//! Spend caps an admin set at run time (`stored_caps`, `caps/set`): one row per scope and
//! subject, its caps as `usage::CapLimits` JSON. Read whole into memory (`llm::stored_caps`),
//! never per model call.

use diesel::prelude::*;
use diesel::sql_types::Text;

use crate::db::statement::statement;
use crate::db::{Conn, DbError};

/// One scope's stored caps.
#[derive(Debug, Clone, PartialEq, Eq, QueryableByName)]
pub(crate) struct StoredCapRow {
    /// `server`, `project` or `person`.
    #[diesel(sql_type = Text)]
    pub scope: String,
    /// The project's or the person's name; '' for the server.
    #[diesel(sql_type = Text)]
    pub subject: String,
    /// `usage::CapLimits` as JSON.
    #[diesel(sql_type = Text)]
    pub caps: String,
    /// Who set them ('' for the operator).
    #[diesel(sql_type = Text)]
    pub set_by: String,
    /// `YYYY-MM-DD HH:MM:SS` UTC.
    #[diesel(sql_type = Text)]
    pub set_at: String,
}

/// Every stored cap, by scope then subject.
pub(crate) fn all(conn: &mut Conn) -> Result<Vec<StoredCapRow>, DbError> {
    Ok(statement(
        "SELECT scope, subject, caps, set_by, set_at FROM stored_caps ORDER BY scope, subject",
    )
    .load(conn)?)
}

/// Sets the caps of `scope` and `subject` to `caps` (JSON), replacing any stored before.
pub(crate) fn set(
    conn: &mut Conn,
    scope: &str,
    subject: &str,
    caps: &str,
    set_by: &str,
) -> Result<(), DbError> {
    statement(
        "INSERT INTO stored_caps (scope, subject, caps, set_by) VALUES (?, ?, ?, ?) \
         ON CONFLICT (scope, subject) DO UPDATE SET caps = excluded.caps, \
         set_by = excluded.set_by, set_at = excluded.set_at",
    )
    .bind::<Text, _>(scope)
    .bind::<Text, _>(subject)
    .bind::<Text, _>(caps)
    .bind::<Text, _>(set_by)
    .execute(conn)?;
    Ok(())
}

/// Removes the caps of `scope` and `subject`; whether there were any.
pub(crate) fn clear(conn: &mut Conn, scope: &str, subject: &str) -> Result<bool, DbError> {
    let removed = statement("DELETE FROM stored_caps WHERE scope = ? AND subject = ?")
        .bind::<Text, _>(scope)
        .bind::<Text, _>(subject)
        .execute(conn)?;
    Ok(removed > 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::testing::TestDb;

    #[test]
    fn a_scope_s_caps_are_set_replaced_and_cleared() {
        let mut db = TestDb::new();
        set(&mut db.conn, "person", "mo", r#"{"day_tokens":5}"#, "ada").unwrap();
        set(&mut db.conn, "server", "", r#"{"day_dollars":1.0}"#, "").unwrap();
        set(&mut db.conn, "person", "mo", r#"{"day_tokens":9}"#, "bo").unwrap();
        let rows = all(&mut db.conn).unwrap();
        let seen: Vec<_> = rows
            .iter()
            .map(|row| {
                (
                    row.scope.as_str(),
                    row.subject.as_str(),
                    row.caps.as_str(),
                    row.set_by.as_str(),
                )
            })
            .collect();
        assert_eq!(
            seen,
            [
                ("person", "mo", r#"{"day_tokens":9}"#, "bo"),
                ("server", "", r#"{"day_dollars":1.0}"#, "")
            ]
        );
        assert!(clear(&mut db.conn, "person", "mo").unwrap());
        assert!(!clear(&mut db.conn, "person", "mo").unwrap());
        assert_eq!(all(&mut db.conn).unwrap().len(), 1);
    }
}
