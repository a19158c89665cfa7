//! The audit of admins' changes to what the server shares (`admin_changes`): people, caps.

use diesel::prelude::*;
use diesel::sql_types::{BigInt, Text};

use crate::db::statement::statement;
use crate::db::{Conn, DbError};

/// One change as stored.
#[derive(Debug, Clone, PartialEq, Eq, QueryableByName)]
pub(crate) struct AdminChangeRow {
    #[diesel(sql_type = BigInt)]
    pub id: i64,
    /// `YYYY-MM-DD HH:MM:SS` UTC.
    #[diesel(sql_type = Text)]
    pub made_at: String,
    /// Who made it ('' for the operator).
    #[diesel(sql_type = Text)]
    pub made_by: String,
    /// The method that made it (`people/add`, `caps/set` …).
    #[diesel(sql_type = Text)]
    pub action: String,
    /// The person, project or scope it changed.
    #[diesel(sql_type = Text)]
    pub subject: String,
    /// What changed, as JSON (never a token or a secret).
    #[diesel(sql_type = Text)]
    pub detail: String,
}

/// Notes a change.
pub(crate) fn record(
    conn: &mut Conn,
    made_by: &str,
    action: &str,
    subject: &str,
    detail: &str,
) -> Result<(), DbError> {
    statement("INSERT INTO admin_changes (made_by, action, subject, detail) VALUES (?, ?, ?, ?)")
        .bind::<Text, _>(made_by)
        .bind::<Text, _>(action)
        .bind::<Text, _>(subject)
        .bind::<Text, _>(detail)
        .execute(conn)?;
    Ok(())
}

/// Notes a change; its id.
pub(crate) fn record_returning_id(
    conn: &mut Conn,
    made_by: &str,
    action: &str,
    subject: &str,
    detail: &str,
) -> Result<i64, DbError> {
    #[derive(QueryableByName)]
    struct Id {
        #[diesel(sql_type = BigInt)]
        id: i64,
    }
    let row: Id = statement(
        "INSERT INTO admin_changes (made_by, action, subject, detail) VALUES (?, ?, ?, ?) \
         RETURNING id",
    )
    .bind::<Text, _>(made_by)
    .bind::<Text, _>(action)
    .bind::<Text, _>(subject)
    .bind::<Text, _>(detail)
    .get_result(conn)?;
    Ok(row.id)
}

/// The detail of the change `id`, when there is one.
pub(crate) fn detail_of(conn: &mut Conn, id: i64) -> Result<Option<String>, DbError> {
    #[derive(QueryableByName)]
    struct Detail {
        #[diesel(sql_type = Text)]
        detail: String,
    }
    let rows: Vec<Detail> = statement("SELECT detail FROM admin_changes WHERE id = ?")
        .bind::<BigInt, _>(id)
        .load(conn)?;
    Ok(rows.into_iter().next().map(|row| row.detail))
}

/// Replaces the detail of the change `id` (a count it keeps: `console::refusals`).
pub(crate) fn set_detail(conn: &mut Conn, id: i64, detail: &str) -> Result<(), DbError> {
    statement("UPDATE admin_changes SET detail = ? WHERE id = ?")
        .bind::<Text, _>(detail)
        .bind::<BigInt, _>(id)
        .execute(conn)?;
    Ok(())
}

/// The latest `limit` changes, newest first, those before `before` (an id) when given.
pub(crate) fn latest(
    conn: &mut Conn,
    limit: i64,
    before: Option<i64>,
) -> Result<Vec<AdminChangeRow>, DbError> {
    Ok(statement(
        "SELECT id, made_at, made_by, action, subject, detail FROM admin_changes \
         WHERE id < ? ORDER BY id DESC LIMIT ?",
    )
    .bind::<BigInt, _>(before.unwrap_or(i64::MAX))
    .bind::<BigInt, _>(limit)
    .load(conn)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::testing::TestDb;

    #[test]
    fn changes_are_read_newest_first_a_page_at_a_time() {
        let mut db = TestDb::new();
        for subject in ["mo", "olga", "zed"] {
            record(&mut db.conn, "ada", "people/add", subject, "{}").unwrap();
        }
        let page = latest(&mut db.conn, 2, None).unwrap();
        let subjects: Vec<_> = page.iter().map(|row| row.subject.as_str()).collect();
        assert_eq!(subjects, ["zed", "olga"]);
        let rest = latest(&mut db.conn, 2, Some(page[1].id)).unwrap();
        assert_eq!(rest.len(), 1);
        assert_eq!(
            (rest[0].made_by.as_str(), rest[0].subject.as_str()),
            ("ada", "mo")
        );
    }

    #[test]
    fn a_change_written_with_its_id_can_have_its_detail_replaced() {
        let mut db = TestDb::new();
        record(&mut db.conn, "ada", "people/add", "mo", "{}").unwrap();
        let id = record_returning_id(&mut db.conn, "", "x", "y", r#"{"count":1}"#).unwrap();
        assert_eq!(latest(&mut db.conn, 1, None).unwrap()[0].id, id);
        set_detail(&mut db.conn, id, r#"{"count":2}"#).unwrap();
        assert_eq!(
            detail_of(&mut db.conn, id).unwrap().as_deref(),
            Some(r#"{"count":2}"#)
        );
        assert_eq!(detail_of(&mut db.conn, id + 1).unwrap(), None);
    }
}
