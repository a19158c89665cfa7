//! The web console's sign-ins (`console`): each row keyed by the SHA-256 of its session id.

use diesel::prelude::*;
use diesel::sql_types::{BigInt, Bool, Nullable, Text};

use crate::db::statement::statement;
use crate::db::{Conn, DbError};

/// One stored sign-in.
#[derive(Debug, Clone, PartialEq, Eq, QueryableByName)]
pub(crate) struct ConsoleSession {
    /// Whom it acts for; `None`: the operator.
    #[diesel(sql_type = Nullable<Text>)]
    pub person: Option<String>,
    /// The SHA-256 (hex) of the token signed in with; '' for a sign-in through the identity
    /// provider.
    #[diesel(sql_type = Text)]
    pub token_hash: String,
    /// Signed in through the identity provider (`console::oidc`), not with a token.
    #[diesel(sql_type = Bool)]
    pub oidc: bool,
    /// Unix seconds after which it opens nothing.
    #[diesel(sql_type = BigInt)]
    pub expires_at: i64,
}

/// Stores a sign-in under `id_hash`, deleting those expired before `now` (unix seconds).
pub(crate) fn create(
    conn: &mut Conn,
    id_hash: &str,
    session: &ConsoleSession,
    now: i64,
) -> Result<(), DbError> {
    statement("DELETE FROM console_sessions WHERE expires_at <= ?")
        .bind::<BigInt, _>(now)
        .execute(conn)?;
    statement(
        "INSERT INTO console_sessions (id_hash, person, token_hash, signed_in_with, expires_at)
         VALUES (?, ?, ?, CASE WHEN ? THEN 'oidc' ELSE 'token' END, ?)",
    )
    .bind::<Text, _>(id_hash)
    .bind::<Nullable<Text>, _>(session.person.as_deref())
    .bind::<Text, _>(&session.token_hash)
    .bind::<Bool, _>(session.oidc)
    .bind::<BigInt, _>(session.expires_at)
    .execute(conn)?;
    Ok(())
}

/// The sign-in stored under `id_hash` that has not expired by `now`.
pub(crate) fn find(
    conn: &mut Conn,
    id_hash: &str,
    now: i64,
) -> Result<Option<ConsoleSession>, DbError> {
    Ok(statement(
        "SELECT person, token_hash, signed_in_with = 'oidc' AS oidc, expires_at
         FROM console_sessions
         WHERE id_hash = ? AND expires_at > ?",
    )
    .bind::<Text, _>(id_hash)
    .bind::<BigInt, _>(now)
    .get_result(conn)
    .optional()?)
}

/// Ends the sign-in stored under `id_hash`; whether there was one.
pub(crate) fn delete(conn: &mut Conn, id_hash: &str) -> Result<bool, DbError> {
    let deleted = statement("DELETE FROM console_sessions WHERE id_hash = ?")
        .bind::<Text, _>(id_hash)
        .execute(conn)?;
    Ok(deleted > 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::testing::TestDb;

    #[test]
    fn a_session_is_found_until_it_expires_or_is_deleted() {
        let db = TestDb::new();
        let mut conn = db.connect();
        let session = ConsoleSession {
            person: Some("ana".into()),
            token_hash: "ab".repeat(32),
            oidc: false,
            expires_at: 100,
        };
        create(&mut conn, "h1", &session, 10).unwrap();
        assert_eq!(find(&mut conn, "h1", 99).unwrap(), Some(session.clone()));
        assert_eq!(find(&mut conn, "h1", 100).unwrap(), None, "expired");
        assert_eq!(find(&mut conn, "h2", 10).unwrap(), None);
        create(
            &mut conn,
            "h2",
            &ConsoleSession {
                expires_at: 500,
                ..session
            },
            200,
        )
        .unwrap();
        assert!(
            !delete(&mut conn, "h1").unwrap(),
            "the expired one went at the next sign-in"
        );
        assert!(delete(&mut conn, "h2").unwrap());
        assert_eq!(find(&mut conn, "h2", 10).unwrap(), None);
    }
}
