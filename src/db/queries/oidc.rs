//! The console's sign-ins through an identity provider (`console::oidc`): those sent to the
//! provider and not back yet (`oidc_logins`, each taken once), and the people who signed in
//! (`oidc_people`).

use diesel::prelude::*;
use diesel::sql_types::{BigInt, Text};

use crate::db::statement::statement;
use crate::db::{Conn, DbError};

/// A sign-in sent to the provider, as stored under the SHA-256 of its state.
#[derive(Debug, Clone, PartialEq, Eq, QueryableByName)]
pub(crate) struct PendingLogin {
    /// The SHA-256 (hex) of the cookie that binds it to the browser that began it.
    #[diesel(sql_type = Text)]
    pub browser_hash: String,
    #[diesel(sql_type = Text)]
    pub nonce: String,
    #[diesel(sql_type = Text)]
    pub pkce_verifier: String,
    /// Unix seconds after which it opens nothing.
    #[diesel(sql_type = BigInt)]
    pub expires_at: i64,
}

/// Stores a sign-in under `state_hash`, deleting those expired before `now` (unix seconds).
pub(crate) fn begin(
    conn: &mut Conn,
    state_hash: &str,
    login: &PendingLogin,
    now: i64,
) -> Result<(), DbError> {
    statement("DELETE FROM oidc_logins WHERE expires_at <= ?")
        .bind::<BigInt, _>(now)
        .execute(conn)?;
    statement(
        "INSERT INTO oidc_logins (state_hash, browser_hash, nonce, pkce_verifier, expires_at)
         VALUES (?, ?, ?, ?, ?)",
    )
    .bind::<Text, _>(state_hash)
    .bind::<Text, _>(&login.browser_hash)
    .bind::<Text, _>(&login.nonce)
    .bind::<Text, _>(&login.pkce_verifier)
    .bind::<BigInt, _>(login.expires_at)
    .execute(conn)?;
    Ok(())
}

/// Takes the sign-in stored under `state_hash` (deleting it, so no one takes it twice, on
/// any instance), expired or not; `None` when there is none.
pub(crate) fn take(conn: &mut Conn, state_hash: &str) -> Result<Option<PendingLogin>, DbError> {
    Ok(statement(
        "DELETE FROM oidc_logins WHERE state_hash = ?
         RETURNING browser_hash, nonce, pkce_verifier, expires_at",
    )
    .bind::<Text, _>(state_hash)
    .get_result(conn)
    .optional()?)
}

/// A person as the provider last named them.
#[derive(Debug, Clone, PartialEq, Eq, QueryableByName)]
pub(crate) struct SignedInPerson {
    #[diesel(sql_type = Text)]
    pub name: String,
    #[diesel(sql_type = Text)]
    pub issuer: String,
    #[diesel(sql_type = Text)]
    pub subject: String,
    /// A JSON array of strings.
    #[diesel(sql_type = Text)]
    pub groups: String,
}

impl SignedInPerson {
    /// The groups the provider last gave them (none when the stored text does not read).
    pub(crate) fn group_list(&self) -> Vec<String> {
        serde_json::from_str(&self.groups).unwrap_or_default()
    }
}

/// Everyone who signed in through the provider and is still known.
pub(crate) fn people(conn: &mut Conn) -> Result<Vec<SignedInPerson>, DbError> {
    Ok(
        statement("SELECT name, issuer, subject, groups FROM oidc_people ORDER BY name")
            .load(conn)?,
    )
}

/// The person called `name`.
pub(crate) fn person(conn: &mut Conn, name: &str) -> Result<Option<SignedInPerson>, DbError> {
    Ok(
        statement("SELECT name, issuer, subject, groups FROM oidc_people WHERE name = ?")
            .bind::<Text, _>(name)
            .get_result(conn)
            .optional()?,
    )
}

/// Notes that `person` signed in at `now` with their groups; a name another subject already
/// holds is not taken (`false`).
pub(crate) fn signed_in(
    conn: &mut Conn,
    person: &SignedInPerson,
    now: i64,
) -> Result<bool, DbError> {
    if let Some(known) = self::person(conn, &person.name)? {
        if (known.issuer.as_str(), known.subject.as_str())
            != (person.issuer.as_str(), person.subject.as_str())
        {
            return Ok(false);
        }
    }
    statement(
        "INSERT INTO oidc_people (name, issuer, subject, groups, signed_in_at)
         VALUES (?, ?, ?, ?, ?)
         ON CONFLICT (name) DO UPDATE SET groups = excluded.groups,
             signed_in_at = excluded.signed_in_at",
    )
    .bind::<Text, _>(&person.name)
    .bind::<Text, _>(&person.issuer)
    .bind::<Text, _>(&person.subject)
    .bind::<Text, _>(&person.groups)
    .bind::<BigInt, _>(now)
    .execute(conn)?;
    Ok(true)
}

/// Forgets the person called `name` and ends their console sessions (the provider gave
/// them no group this server maps).
pub(crate) fn forget(conn: &mut Conn, name: &str) -> Result<(), DbError> {
    statement("DELETE FROM oidc_people WHERE name = ?")
        .bind::<Text, _>(name)
        .execute(conn)?;
    statement("DELETE FROM console_sessions WHERE person = ? AND signed_in_with = 'oidc'")
        .bind::<Text, _>(name)
        .execute(conn)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::testing::TestDb;

    #[test]
    fn a_login_is_taken_once() {
        let mut db = TestDb::new();
        let login = PendingLogin {
            browser_hash: "b".into(),
            nonce: "n".into(),
            pkce_verifier: "v".into(),
            expires_at: 100,
        };
        begin(&mut db.conn, "s1", &login, 10).unwrap();
        assert_eq!(take(&mut db.conn, "s1").unwrap(), Some(login.clone()));
        assert_eq!(
            take(&mut db.conn, "s1").unwrap(),
            None,
            "a replay finds nothing"
        );
        begin(&mut db.conn, "s2", &login, 10).unwrap();
        begin(&mut db.conn, "s3", &login, 100).unwrap();
        assert_eq!(take(&mut db.conn, "s2").unwrap(), None, "expired ones go");
    }

    #[test]
    fn a_name_stays_with_its_subject() {
        let mut db = TestDb::new();
        let ana = SignedInPerson {
            name: "ana".into(),
            issuer: "https://idp".into(),
            subject: "1".into(),
            groups: r#"["dev"]"#.into(),
        };
        assert!(signed_in(&mut db.conn, &ana, 5).unwrap());
        let regrouped = SignedInPerson {
            groups: r#"["ops"]"#.into(),
            ..ana.clone()
        };
        assert!(signed_in(&mut db.conn, &regrouped, 6).unwrap());
        assert_eq!(people(&mut db.conn).unwrap(), vec![regrouped.clone()]);
        let other = SignedInPerson {
            subject: "2".into(),
            ..ana
        };
        assert!(!signed_in(&mut db.conn, &other, 7).unwrap());
        assert_eq!(person(&mut db.conn, "ana").unwrap(), Some(regrouped));
        forget(&mut db.conn, "ana").unwrap();
        assert_eq!(people(&mut db.conn).unwrap(), vec![]);
    }
}
