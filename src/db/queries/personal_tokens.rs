//! Personal access tokens (`tokens`): each row a token's hash, its person, name and scope,
//! and when it was made, expires, was last used and was revoked (unix seconds).

use diesel::prelude::*;
use diesel::sql_types::{BigInt, Nullable, Text};

use crate::db::statement::statement;
use crate::db::{Conn, DbError};

/// What a token is minted with (its hash, never the token).
#[derive(Debug, Clone)]
pub(crate) struct NewToken {
    pub person: String,
    pub name: String,
    pub token_hash: String,
    pub prefix: String,
    pub read_only: bool,
    pub project: Option<String>,
    pub created_at: i64,
    pub expires_at: i64,
}

/// One stored token, without its hash.
#[derive(Debug, Clone, PartialEq, Eq, QueryableByName)]
pub(crate) struct TokenRow {
    #[diesel(sql_type = BigInt)]
    pub id: i64,
    #[diesel(sql_type = Text)]
    pub person: String,
    #[diesel(sql_type = Text)]
    pub name: String,
    #[diesel(sql_type = Text)]
    pub prefix: String,
    /// 1: read-only.
    #[diesel(sql_type = BigInt)]
    pub read_only: i64,
    #[diesel(sql_type = Nullable<Text>)]
    pub project: Option<String>,
    #[diesel(sql_type = BigInt)]
    pub created_at: i64,
    #[diesel(sql_type = BigInt)]
    pub expires_at: i64,
    #[diesel(sql_type = Nullable<BigInt>)]
    pub last_used_at: Option<i64>,
    #[diesel(sql_type = Nullable<BigInt>)]
    pub revoked_at: Option<i64>,
    #[diesel(sql_type = Nullable<Text>)]
    pub revoked_by: Option<String>,
}

#[derive(QueryableByName)]
struct Id {
    #[diesel(sql_type = BigInt)]
    id: i64,
}

#[derive(QueryableByName)]
struct Count {
    #[diesel(sql_type = BigInt)]
    n: i64,
}

/// Stores `token`; its id.
pub(crate) fn insert(conn: &mut Conn, token: &NewToken) -> Result<i64, DbError> {
    let row: Id = statement(
        "INSERT INTO personal_tokens (person, name, token_hash, prefix, read_only, project, \
         created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
    )
    .bind::<Text, _>(&token.person)
    .bind::<Text, _>(&token.name)
    .bind::<Text, _>(&token.token_hash)
    .bind::<Text, _>(&token.prefix)
    .bind::<BigInt, _>(i64::from(token.read_only))
    .bind::<Nullable<Text>, _>(token.project.as_deref())
    .bind::<BigInt, _>(token.created_at)
    .bind::<BigInt, _>(token.expires_at)
    .get_result(conn)?;
    Ok(row.id)
}

/// How many of `person`'s tokens are neither revoked nor expired by `now`.
pub(crate) fn live_count(conn: &mut Conn, person: &str, now: i64) -> Result<i64, DbError> {
    let count: Count = statement(
        "SELECT COUNT(*) AS n FROM personal_tokens \
         WHERE person = ? AND revoked_at IS NULL AND expires_at > ?",
    )
    .bind::<Text, _>(person)
    .bind::<BigInt, _>(now)
    .get_result(conn)?;
    Ok(count.n)
}

/// The token whose SHA-256 (hex) is `hash`, revoked or not.
pub(crate) fn by_hash(conn: &mut Conn, hash: &str) -> Result<Option<TokenRow>, DbError> {
    Ok(statement(
        "SELECT id, person, name, prefix, read_only, project, created_at, expires_at, \
         last_used_at, revoked_at, revoked_by FROM personal_tokens WHERE token_hash = ?",
    )
    .bind::<Text, _>(hash)
    .get_result(conn)
    .optional()?)
}

/// The token `id`.
pub(crate) fn by_id(conn: &mut Conn, id: i64) -> Result<Option<TokenRow>, DbError> {
    Ok(statement(
        "SELECT id, person, name, prefix, read_only, project, created_at, expires_at, \
         last_used_at, revoked_at, revoked_by FROM personal_tokens WHERE id = ?",
    )
    .bind::<BigInt, _>(id)
    .get_result(conn)
    .optional()?)
}

/// `person`'s tokens (everyone's for `None`), newest first.
pub(crate) fn list(conn: &mut Conn, person: Option<&str>) -> Result<Vec<TokenRow>, DbError> {
    let rows = match person {
        Some(person) => statement(
            "SELECT id, person, name, prefix, read_only, project, created_at, expires_at, \
             last_used_at, revoked_at, revoked_by FROM personal_tokens \
             WHERE person = ? ORDER BY id DESC",
        )
        .bind::<Text, _>(person)
        .load(conn)?,
        None => statement(
            "SELECT id, person, name, prefix, read_only, project, created_at, expires_at, \
             last_used_at, revoked_at, revoked_by FROM personal_tokens ORDER BY id DESC",
        )
        .load(conn)?,
    };
    Ok(rows)
}

/// Revokes the token `id` at `now` by `by` ('' for the operator); whether it was live
/// (not revoked before).
pub(crate) fn revoke(conn: &mut Conn, id: i64, by: &str, now: i64) -> Result<bool, DbError> {
    let revoked = statement(
        "UPDATE personal_tokens SET revoked_at = ?, revoked_by = ? \
         WHERE id = ? AND revoked_at IS NULL",
    )
    .bind::<BigInt, _>(now)
    .bind::<Text, _>(by)
    .bind::<BigInt, _>(id)
    .execute(conn)?;
    Ok(revoked > 0)
}

/// Notes that the token `id` was used at `now`, unless a use within the minute before was
/// noted already; whether it wrote.
pub(crate) fn touch(conn: &mut Conn, id: i64, now: i64) -> Result<bool, DbError> {
    let touched = statement(
        "UPDATE personal_tokens SET last_used_at = ? \
         WHERE id = ? AND (last_used_at IS NULL OR last_used_at <= ?)",
    )
    .bind::<BigInt, _>(now)
    .bind::<BigInt, _>(id)
    .bind::<BigInt, _>(now - NOTE_EVERY_SECS)
    .execute(conn)?;
    Ok(touched > 0)
}

/// Notes a refused use of the token `id` at `now`, unless one within the minute before was
/// noted; whether it did (and the refusal is then audited).
pub(crate) fn note_refused(conn: &mut Conn, id: i64, now: i64) -> Result<bool, DbError> {
    let noted = statement(
        "UPDATE personal_tokens SET refused_at = ? \
         WHERE id = ? AND (refused_at IS NULL OR refused_at <= ?)",
    )
    .bind::<BigInt, _>(now)
    .bind::<BigInt, _>(id)
    .bind::<BigInt, _>(now - NOTE_EVERY_SECS)
    .execute(conn)?;
    Ok(noted > 0)
}

/// The least time between two notes of a token's use (or of its refused uses).
pub(crate) const NOTE_EVERY_SECS: i64 = 60;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::testing::TestDb;

    fn token(person: &str, hash: &str) -> NewToken {
        NewToken {
            person: person.into(),
            name: "laptop".into(),
            token_hash: hash.into(),
            prefix: "rpat_12345678".into(),
            read_only: true,
            project: Some("web".into()),
            created_at: 100,
            expires_at: 1000,
        }
    }

    #[test]
    fn a_token_is_found_by_hash_listed_by_person_and_revoked_once() {
        let db = TestDb::new();
        let mut conn = db.connect();
        let id = insert(&mut conn, &token("ana", "h1")).unwrap();
        let other = insert(&mut conn, &token("bo", "h2")).unwrap();
        let found = by_hash(&mut conn, "h1").unwrap().unwrap();
        assert_eq!((found.id, found.person.as_str()), (id, "ana"));
        assert_eq!(
            (found.read_only, found.project.as_deref()),
            (1, Some("web"))
        );
        assert_eq!(by_hash(&mut conn, "h3").unwrap(), None);
        assert_eq!(by_id(&mut conn, other).unwrap().unwrap().person, "bo");
        assert_eq!(list(&mut conn, Some("ana")).unwrap().len(), 1);
        let all: Vec<i64> = list(&mut conn, None)
            .unwrap()
            .iter()
            .map(|t| t.id)
            .collect();
        assert_eq!(all, [other, id], "newest first");
        assert_eq!(live_count(&mut conn, "ana", 999).unwrap(), 1);
        assert_eq!(live_count(&mut conn, "ana", 1000).unwrap(), 0, "expired");
        assert!(revoke(&mut conn, id, "ada", 500).unwrap());
        assert!(!revoke(&mut conn, id, "ada", 501).unwrap(), "once");
        let revoked = by_id(&mut conn, id).unwrap().unwrap();
        assert_eq!(revoked.revoked_at, Some(500));
        assert_eq!(revoked.revoked_by.as_deref(), Some("ada"));
        assert_eq!(live_count(&mut conn, "ana", 200).unwrap(), 0);
    }

    #[test]
    fn a_use_and_a_refusal_are_noted_at_most_once_a_minute() {
        let db = TestDb::new();
        let mut conn = db.connect();
        let id = insert(&mut conn, &token("ana", "h1")).unwrap();
        assert!(touch(&mut conn, id, 1000).unwrap());
        assert!(!touch(&mut conn, id, 1059).unwrap());
        assert!(touch(&mut conn, id, 1060).unwrap());
        assert_eq!(
            by_id(&mut conn, id).unwrap().unwrap().last_used_at,
            Some(1060)
        );
        assert!(note_refused(&mut conn, id, 1000).unwrap());
        assert!(!note_refused(&mut conn, id, 1059).unwrap());
        assert!(note_refused(&mut conn, id, 1060).unwrap());
    }
}
