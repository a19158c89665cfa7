//! Sealed secrets (`secrets`, `crate::secrets`): one row per person, kind and name, its value
//! sealed under the server key named beside it. Nothing here seals or opens.

use diesel::prelude::*;
use diesel::sql_types::{BigInt, Binary, Nullable, Text};

use crate::db::ids::RunId;
use crate::db::statement::statement;
use crate::db::{Conn, DbError};

/// One stored secret, sealed.
#[derive(Clone, PartialEq, Eq, QueryableByName)]
pub(crate) struct SecretRow {
    #[diesel(sql_type = BigInt)]
    pub id: i64,
    #[diesel(sql_type = Text)]
    pub person: String,
    #[diesel(sql_type = Text)]
    pub kind: String,
    #[diesel(sql_type = Text)]
    pub name: String,
    /// Nonce and ciphertext.
    #[diesel(sql_type = Binary)]
    pub sealed: Vec<u8>,
    #[diesel(sql_type = Text)]
    pub key_id: String,
}

/// What may be shown of a stored secret: never its value.
#[derive(Debug, Clone, PartialEq, Eq, QueryableByName)]
pub(crate) struct SecretMeta {
    #[diesel(sql_type = Text)]
    pub name: String,
    /// `YYYY-MM-DD HH:MM:SS` UTC, as are the others.
    #[diesel(sql_type = Text)]
    pub created_at: String,
    #[diesel(sql_type = Text)]
    pub updated_at: String,
    #[diesel(sql_type = Nullable<Text>)]
    pub last_used_at: Option<String>,
}

/// Stores `sealed` (sealed under `key_id`) as `person`'s `kind` `name`, replacing what was.
pub(crate) fn put(
    conn: &mut Conn,
    person: &str,
    kind: &str,
    name: &str,
    sealed: &[u8],
    key_id: &str,
) -> Result<(), DbError> {
    statement(
        "INSERT INTO secrets (person, kind, name, sealed, key_id) VALUES (?, ?, ?, ?, ?)
         ON CONFLICT (person, kind, name) DO UPDATE SET
             sealed = excluded.sealed,
             key_id = excluded.key_id,
             updated_at = datetime('now')",
    )
    .bind::<Text, _>(person)
    .bind::<Text, _>(kind)
    .bind::<Text, _>(name)
    .bind::<Binary, _>(sealed)
    .bind::<Text, _>(key_id)
    .execute(conn)?;
    Ok(())
}

/// `person`'s `kind` `name`, sealed, when stored.
pub(crate) fn get(
    conn: &mut Conn,
    person: &str,
    kind: &str,
    name: &str,
) -> Result<Option<SecretRow>, DbError> {
    Ok(statement(
        "SELECT id, person, kind, name, sealed, key_id FROM secrets
         WHERE person = ? AND kind = ? AND name = ?",
    )
    .bind::<Text, _>(person)
    .bind::<Text, _>(kind)
    .bind::<Text, _>(name)
    .get_result(conn)
    .optional()?)
}

/// What may be shown of `person`'s secrets of `kind`, by name.
pub(crate) fn list(conn: &mut Conn, person: &str, kind: &str) -> Result<Vec<SecretMeta>, DbError> {
    Ok(statement(
        "SELECT name, created_at, updated_at, last_used_at FROM secrets
         WHERE person = ? AND kind = ? ORDER BY name",
    )
    .bind::<Text, _>(person)
    .bind::<Text, _>(kind)
    .load(conn)?)
}

/// Removes `person`'s `kind` `name`; whether there was one.
pub(crate) fn remove(
    conn: &mut Conn,
    person: &str,
    kind: &str,
    name: &str,
) -> Result<bool, DbError> {
    let removed = statement("DELETE FROM secrets WHERE person = ? AND kind = ? AND name = ?")
        .bind::<Text, _>(person)
        .bind::<Text, _>(kind)
        .bind::<Text, _>(name)
        .execute(conn)?;
    Ok(removed > 0)
}

/// Notes that `person`'s `kind` `name` was used now.
pub(crate) fn used(conn: &mut Conn, person: &str, kind: &str, name: &str) -> Result<(), DbError> {
    statement(
        "UPDATE secrets SET last_used_at = datetime('now')
         WHERE person = ? AND kind = ? AND name = ?",
    )
    .bind::<Text, _>(person)
    .bind::<Text, _>(kind)
    .bind::<Text, _>(name)
    .execute(conn)?;
    Ok(())
}

/// One of a run's starter's secrets of a kind, as [`of_starter`] reads it: the starter
/// (none: the operator), and a secret of theirs, if they have any.
#[derive(QueryableByName)]
pub(crate) struct StarterSecret {
    #[diesel(sql_type = Nullable<Text>)]
    pub person: Option<String>,
    #[diesel(sql_type = Nullable<BigInt>)]
    id: Option<i64>,
    #[diesel(sql_type = Nullable<Text>)]
    kind: Option<String>,
    #[diesel(sql_type = Nullable<Text>)]
    name: Option<String>,
    #[diesel(sql_type = Nullable<Binary>)]
    sealed: Option<Vec<u8>>,
    #[diesel(sql_type = Nullable<Text>)]
    key_id: Option<String>,
}

impl StarterSecret {
    /// The secret of the row, if the starter has one.
    pub(crate) fn secret(self) -> Option<SecretRow> {
        Some(SecretRow {
            id: self.id?,
            person: self.person?,
            kind: self.kind?,
            name: self.name?,
            sealed: self.sealed?,
            key_id: self.key_id?,
        })
    }
}

/// Who started run `run` (a sub-agent's run: the run that delegated the first sub-task)
/// and their secrets of `kind`, sealed, in one statement: one row per secret, or one with
/// none when they have none.
pub(crate) fn of_starter(
    conn: &mut Conn,
    run: RunId,
    kind: &str,
) -> Result<Vec<StarterSecret>, DbError> {
    Ok(statement(
        "WITH RECURSIVE up (id, delegated_by) AS ( \
             SELECT id, delegated_by FROM runs WHERE id = ? \
             UNION ALL SELECT r.id, r.delegated_by FROM runs AS r JOIN up ON r.id = up.delegated_by) \
         SELECT r.created_by AS person, s.id, s.kind, s.name, s.sealed, s.key_id \
         FROM up JOIN runs AS r ON r.id = up.id \
         LEFT JOIN secrets AS s ON s.person = r.created_by AND s.kind = ? \
         WHERE up.delegated_by IS NULL",
    )
    .bind::<BigInt, _>(run)
    .bind::<Text, _>(kind)
    .load(conn)?)
}

/// Every secret not sealed under `key_id`.
pub(crate) fn not_under(conn: &mut Conn, key_id: &str) -> Result<Vec<SecretRow>, DbError> {
    Ok(statement(
        "SELECT id, person, kind, name, sealed, key_id FROM secrets WHERE key_id <> ? ORDER BY id",
    )
    .bind::<Text, _>(key_id)
    .load(conn)?)
}

/// Replaces row `id`'s sealed value (the same value, sealed again under `key_id`) when it is
/// still sealed under `was` (a value set since stays as set).
pub(crate) fn reseal(
    conn: &mut Conn,
    id: i64,
    was: &str,
    sealed: &[u8],
    key_id: &str,
) -> Result<(), DbError> {
    statement("UPDATE secrets SET sealed = ?, key_id = ? WHERE id = ? AND key_id = ?")
        .bind::<Binary, _>(sealed)
        .bind::<Text, _>(key_id)
        .bind::<BigInt, _>(id)
        .bind::<Text, _>(was)
        .execute(conn)?;
    Ok(())
}
