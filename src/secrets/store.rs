//! [`SecretStore`]: the secrets of a person (or the server) by kind and name, sealed on the
//! way into the store and opened on the way out; and [`SecretStore::reseal_all`], the
//! start-up step that seals again under the current key every value an old key sealed.

use std::sync::Arc;

use secrecy::SecretString;

use super::{Binding, Keyring, Sealed, SecretsError};
use crate::db::ids::RunId;
use crate::db::queries::secrets::{self, SecretMeta, SecretRow};
use crate::db::{Conn, DbError, DbHandle};

/// The sealed store. Cheap to clone.
#[derive(Clone)]
pub(crate) struct SecretStore {
    db: DbHandle,
    keyring: Arc<Keyring>,
}

impl SecretStore {
    pub(crate) fn new(db: DbHandle, keyring: Arc<Keyring>) -> SecretStore {
        SecretStore { db, keyring }
    }

    pub(crate) fn keyring(&self) -> &Keyring {
        &self.keyring
    }

    /// Seals `value` and stores it as `person`'s `kind` `name`, replacing what was; `also`
    /// runs in the same unit of work, told whether a value was replaced (the caller's audit).
    pub(crate) async fn put<F>(
        &self,
        person: &str,
        kind: &str,
        name: &str,
        value: &SecretString,
        also: F,
    ) -> Result<(), SecretsError>
    where
        F: FnOnce(&mut Conn, bool) -> Result<(), DbError> + Send + 'static,
    {
        let sealed = self.keyring.seal(Binding { person, kind, name }, value)?;
        let (person, kind, name) = (person.to_owned(), kind.to_owned(), name.to_owned());
        self.db
            .call(move |conn| {
                let replaced = secrets::get(conn, &person, &kind, &name)?.is_some();
                secrets::put(conn, &person, &kind, &name, &sealed.bytes, &sealed.key_id)?;
                also(conn, replaced)
            })
            .await?;
        Ok(())
    }

    /// `person`'s `kind` `name`, opened, when stored.
    pub(crate) async fn open(
        &self,
        person: &str,
        kind: &str,
        name: &str,
    ) -> Result<Option<SecretString>, SecretsError> {
        let (owned_person, owned_kind, owned_name) =
            (person.to_owned(), kind.to_owned(), name.to_owned());
        let row = self
            .db
            .read(move |conn| secrets::get(conn, &owned_person, &owned_kind, &owned_name))
            .await?;
        row.map(|row| self.open_row(&row)).transpose()
    }

    /// What may be shown of `person`'s secrets of `kind`.
    pub(crate) async fn list(
        &self,
        person: &str,
        kind: &str,
    ) -> Result<Vec<SecretMeta>, SecretsError> {
        let (person, kind) = (person.to_owned(), kind.to_owned());
        Ok(self
            .db
            .read(move |conn| secrets::list(conn, &person, &kind))
            .await?)
    }

    /// Removes `person`'s `kind` `name`; whether there was one. `also` runs in the same unit
    /// of work when there was (the caller's audit).
    pub(crate) async fn remove<F>(
        &self,
        person: &str,
        kind: &str,
        name: &str,
        also: F,
    ) -> Result<bool, SecretsError>
    where
        F: FnOnce(&mut Conn) -> Result<(), DbError> + Send + 'static,
    {
        let (person, kind, name) = (person.to_owned(), kind.to_owned(), name.to_owned());
        Ok(self
            .db
            .call(move |conn| {
                let removed = secrets::remove(conn, &person, &kind, &name)?;
                if removed {
                    also(conn)?;
                }
                Ok(removed)
            })
            .await?)
    }

    /// Who started `run` (a sub-agent's: its delegating run's starter; `None`: the
    /// operator) and their secrets of `kind`, sealed (one read).
    pub(crate) async fn of_starter(
        &self,
        run: RunId,
        kind: &str,
    ) -> Result<(Option<String>, Vec<SecretRow>), SecretsError> {
        let kind = kind.to_owned();
        let rows = self
            .db
            .read(move |conn| secrets::of_starter(conn, run, &kind))
            .await?;
        let person = rows.first().and_then(|row| row.person.clone());
        let held = rows.into_iter().filter_map(|row| row.secret()).collect();
        Ok((person, held))
    }

    /// Notes that `person`'s `kind` `name` was used now; `also` runs in the same unit of
    /// work (the caller's audit).
    pub(crate) async fn used<F>(
        &self,
        person: &str,
        kind: &str,
        name: &str,
        also: F,
    ) -> Result<(), SecretsError>
    where
        F: FnOnce(&mut Conn) -> Result<(), DbError> + Send + 'static,
    {
        let (person, kind, name) = (person.to_owned(), kind.to_owned(), name.to_owned());
        self.db
            .call(move |conn| {
                secrets::used(conn, &person, &kind, &name)?;
                also(conn)
            })
            .await?;
        Ok(())
    }

    /// A stored row's value, opened (checked against the row it is in).
    pub(crate) fn open_row(&self, row: &SecretRow) -> Result<SecretString, SecretsError> {
        self.keyring.open(
            Binding {
                person: &row.person,
                kind: &row.kind,
                name: &row.name,
            },
            &Sealed {
                key_id: row.key_id.clone(),
                bytes: row.sealed.clone(),
            },
        )
    }

    /// Seals again under the current key every value an old key sealed; how many. Every
    /// such value is opened first, so one that does not open fails the step (naming it)
    /// before anything is written; the new seals are written in one unit of work.
    pub(crate) async fn reseal_all(&self) -> Result<usize, SecretsError> {
        let current = self.keyring.current_id().to_owned();
        let stale = self
            .db
            .read(move |conn| secrets::not_under(conn, &current))
            .await?;
        let mut resealed = Vec::with_capacity(stale.len());
        for row in &stale {
            let value = self.open_row(row)?;
            let binding = Binding {
                person: &row.person,
                kind: &row.kind,
                name: &row.name,
            };
            resealed.push((
                row.id,
                row.key_id.clone(),
                self.keyring.seal(binding, &value)?,
            ));
        }
        let count = resealed.len();
        if count > 0 {
            self.db
                .call(move |conn| {
                    for (id, was, sealed) in &resealed {
                        secrets::reseal(conn, *id, was, &sealed.bytes, &sealed.key_id)?;
                    }
                    Ok(())
                })
                .await?;
        }
        Ok(count)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::queries::secrets as rows;
    use crate::db::testing::TestDb;
    use crate::db::{ConnectionSetup, DbOptions};
    use secrecy::ExposeSecret;

    const HEX_A: &str = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";
    const HEX_B: &str = "ffeeddccbbaa99887766554433221100ffeeddccbbaa99887766554433221100";

    fn store_on(test_db: &TestDb, keys: &str) -> SecretStore {
        let db = DbHandle::open(
            &test_db.store(),
            DbOptions {
                setup: ConnectionSetup::default(),
                writer_limits: crate::hedberg::Limits::default(),
                request_limits: crate::hedberg::Limits::default(),
                readers: 1,
                rpc_log: crate::db::queries::rpc_log::RpcLogBounds::default(),
                entry_changes: None,
                events: crate::db::queries::run_events::EventBounds::default(),
                sent: None,
                work: Arc::default(),
            },
        )
        .unwrap();
        SecretStore::new(db, Arc::new(Keyring::parse(keys).unwrap()))
    }

    fn secret(text: &str) -> SecretString {
        SecretString::from(text.to_owned())
    }

    #[actix::test]
    async fn a_secret_is_set_replaced_listed_and_removed_per_person_and_kind() {
        let test_db = TestDb::new();
        let store = store_on(&test_db, &format!("a:{HEX_A}"));
        store
            .put("ada", "provider", "openai", &secret("sk-1"), |_, _| Ok(()))
            .await
            .unwrap();
        store
            .put("ada", "provider", "openai", &secret("sk-2"), |_, _| Ok(()))
            .await
            .unwrap();
        store
            .put("ada", "provider", "xai", &secret("xai-1"), |_, _| Ok(()))
            .await
            .unwrap();
        store
            .put(
                "bob",
                "provider",
                "openai",
                &secret("sk-bob"),
                |_, _| Ok(()),
            )
            .await
            .unwrap();
        store
            .put("ada", "host", "git.example", &secret("h"), |_, _| Ok(()))
            .await
            .unwrap();
        let opened = store
            .open("ada", "provider", "openai")
            .await
            .unwrap()
            .unwrap();
        assert_eq!(opened.expose_secret(), "sk-2");
        assert!(store
            .open("ada", "provider", "ollama")
            .await
            .unwrap()
            .is_none());
        let names: Vec<String> = store
            .list("ada", "provider")
            .await
            .unwrap()
            .into_iter()
            .map(|info| info.name)
            .collect();
        assert_eq!(names, ["openai", "xai"]);
        assert!(store
            .remove("ada", "provider", "openai", |_| Ok(()))
            .await
            .unwrap());
        assert!(!store
            .remove("ada", "provider", "openai", |_| Ok(()))
            .await
            .unwrap());
        assert!(store
            .open("ada", "provider", "openai")
            .await
            .unwrap()
            .is_none());
        let bob = store
            .open("bob", "provider", "openai")
            .await
            .unwrap()
            .unwrap();
        assert_eq!(bob.expose_secret(), "sk-bob");
    }

    #[actix::test]
    async fn the_callers_work_runs_in_the_same_unit_and_its_failure_keeps_what_was() {
        let test_db = TestDb::new();
        let store = store_on(&test_db, &format!("a:{HEX_A}"));
        let (told, heard) = std::sync::mpsc::channel();
        for value in ["sk-1", "sk-2"] {
            let told = told.clone();
            store
                .put(
                    "ada",
                    "provider",
                    "openai",
                    &secret(value),
                    move |_, replaced| {
                        told.send(replaced).unwrap();
                        Ok(())
                    },
                )
                .await
                .unwrap();
        }
        assert_eq!(heard.try_iter().collect::<Vec<_>>(), [false, true]);
        let refused = store
            .put("ada", "provider", "openai", &secret("sk-3"), |_, _| {
                Err(DbError::Invalid("no audit".into()))
            })
            .await;
        assert!(refused.is_err());
        let kept = store
            .open("ada", "provider", "openai")
            .await
            .unwrap()
            .unwrap();
        assert_eq!(kept.expose_secret(), "sk-2");
        let refused = store
            .remove("ada", "provider", "openai", |_| {
                Err(DbError::Invalid("no audit".into()))
            })
            .await;
        assert!(refused.is_err());
        assert!(store
            .open("ada", "provider", "openai")
            .await
            .unwrap()
            .is_some());
        let (told, heard) = std::sync::mpsc::channel();
        for _ in 0..2 {
            let told = told.clone();
            store
                .remove("ada", "provider", "openai", move |_| {
                    told.send(()).unwrap();
                    Ok(())
                })
                .await
                .unwrap();
        }
        assert_eq!(heard.try_iter().count(), 1);
    }

    #[actix::test]
    async fn rotation_reseals_every_value_under_the_new_key_and_keeps_it_readable() {
        let test_db = TestDb::new();
        let old = store_on(&test_db, &format!("old:{HEX_A}"));
        old.put(
            "ada",
            "provider",
            "openai",
            &secret("sk-ada"),
            |_, _| Ok(()),
        )
        .await
        .unwrap();
        old.put("", "provider", "xai", &secret("xai-server"), |_, _| Ok(()))
            .await
            .unwrap();
        old.put("bob", "mcp", "github", &secret("ghp-bob"), |_, _| Ok(()))
            .await
            .unwrap();
        assert_eq!(old.reseal_all().await.unwrap(), 0);
        let rotated = store_on(&test_db, &format!("new:{HEX_B}\nold:{HEX_A}"));
        assert_eq!(rotated.reseal_all().await.unwrap(), 3);
        assert_eq!(rotated.reseal_all().await.unwrap(), 0);
        let mut conn = test_db.connect();
        for row in rows::not_under(&mut conn, "").unwrap() {
            assert_eq!(row.key_id, "new");
        }
        let only_new = store_on(&test_db, &format!("new:{HEX_B}"));
        for (person, kind, name, value) in [
            ("ada", "provider", "openai", "sk-ada"),
            ("", "provider", "xai", "xai-server"),
            ("bob", "mcp", "github", "ghp-bob"),
        ] {
            let opened = only_new.open(person, kind, name).await.unwrap().unwrap();
            assert_eq!(opened.expose_secret(), value);
        }
    }

    #[actix::test]
    async fn a_value_that_does_not_open_stops_the_rotation_before_it_writes() {
        let test_db = TestDb::new();
        let old = store_on(&test_db, &format!("old:{HEX_A}"));
        old.put(
            "ada",
            "provider",
            "openai",
            &secret("sk-ada"),
            |_, _| Ok(()),
        )
        .await
        .unwrap();
        old.put(
            "bob",
            "provider",
            "openai",
            &secret("sk-bob"),
            |_, _| Ok(()),
        )
        .await
        .unwrap();
        let mut conn = test_db.connect();
        let ada = rows::get(&mut conn, "ada", "provider", "openai")
            .unwrap()
            .unwrap();
        rows::put(
            &mut conn,
            "bob",
            "provider",
            "openai",
            &ada.sealed,
            &ada.key_id,
        )
        .unwrap();
        let error = old
            .open("bob", "provider", "openai")
            .await
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("provider/openai of bob") && error.contains("moved"),
            "{error}"
        );
        let rotated = store_on(&test_db, &format!("new:{HEX_B}\nold:{HEX_A}"));
        assert!(rotated.reseal_all().await.is_err());
        assert_eq!(rows::not_under(&mut conn, "new").unwrap().len(), 2);
    }
}
