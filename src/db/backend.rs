//! Which database holds the store: a SQLite file (the default, nothing to install) or a
//! PostgreSQL server (`RUMMY_DATABASE_URL=postgres://…`), and [`Conn`], the connection
//! every query function takes, which is either.
//!
//! [`Conn`] is diesel's `MultiConnection`: a query written once with diesel's DSL or as a
//! [`Statement`](super::statement::Statement) runs on both, each backend rendering its own
//! bind placeholders. Where the two SQL dialects differ, the PostgreSQL migrations define
//! the SQLite functions rummy's SQL uses (`json_patch`, `datetime`, …) with the same
//! results, so the SQL text stays one.

// diesel's `MultiConnection` derive implements `Conn::establish` with each variant's, which
// clippy.toml forbids elsewhere (see `connection::connect_postgres`); nothing calls it.
#![allow(clippy::disallowed_methods)]

use std::fmt;
use std::path::PathBuf;

/// A connection to the store, SQLite or PostgreSQL.
///
/// PostgreSQL comes first: were `Connection::establish` ever given a URL, it tries the
/// variants in order, and SQLite would take any text for a file name.
#[derive(diesel::MultiConnection)]
pub enum Conn {
    Postgres(diesel::PgConnection),
    Sqlite(diesel::SqliteConnection),
}

/// Evaluates `$body` with `$inner` bound to the backend's own connection: written once,
/// compiled for each backend. Only for what the multi-backend connection cannot build
/// itself: batch inserts and `RETURNING` a `Selectable` row.
macro_rules! per_backend {
    ($conn:expr, |$inner:ident| $body:expr) => {
        match $conn {
            $crate::db::Conn::Sqlite($inner) => $body,
            $crate::db::Conn::Postgres($inner) => $body,
        }
    };
}
pub(crate) use per_backend;

/// Where the store lives. Its `Display` never shows a password.
#[derive(Clone, PartialEq, Eq)]
pub enum Store {
    /// A SQLite file (created when missing).
    Sqlite(PathBuf),
    /// A PostgreSQL database, by its `postgres://` or `postgresql://` URL.
    Postgres(String),
}

impl Store {
    /// A PostgreSQL store when `database_url` is set, else the SQLite file `db_path`.
    pub fn from_settings(database_url: &str, db_path: PathBuf) -> Store {
        match database_url.trim() {
            "" => Store::Sqlite(db_path),
            url => Store::Postgres(url.to_owned()),
        }
    }
}

impl Store {
    /// Whether other rummy instances may use it at the same time: a PostgreSQL database
    /// may be shared, a SQLite file is one instance's.
    pub fn is_shared(&self) -> bool {
        matches!(self, Store::Postgres(_))
    }
}

impl fmt::Display for Store {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Store::Sqlite(path) => write!(f, "{}", path.display()),
            Store::Postgres(url) => f.write_str(&without_password(url)),
        }
    }
}

impl fmt::Debug for Store {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Store({self})")
    }
}

/// `url` with its password, if any, replaced by `***`; a URL that does not parse is shown
/// as its scheme only, since where its password is cannot be told.
fn without_password(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(mut parsed) => {
            if parsed.password().is_some() {
                let _ = parsed.set_password(Some("***"));
            }
            parsed.to_string()
        }
        Err(_) => format!("{}://…", url.split("://").next().unwrap_or("postgres")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_store_is_shown_without_its_password() {
        let store = Store::from_settings("postgres://rummy:s3cret@db:5432/rummy", "x".into());
        assert_eq!(store.to_string(), "postgres://rummy:***@db:5432/rummy");
        assert!(!format!("{store:?}").contains("s3cret"));
        let odd = Store::Postgres("postgres://rummy:s3cret@[bad/rummy".into());
        assert!(!odd.to_string().contains("s3cret"));
        assert_eq!(
            Store::from_settings(" ", "/h/rummy.db".into()),
            Store::Sqlite("/h/rummy.db".into())
        );
    }
}
