//! The known store and everything else rummy persists: migrations, schema, SQL functions and
//! the DB actor.
//!
//! Layers, bottom up: [`backend`] says which database holds the store (a SQLite file or
//! PostgreSQL) and is the connection type, [`Conn`]; [`connection`] opens connections and
//! applies each backend's embedded migrations; [`functions`] registers on SQLite the SQL
//! functions the schema needs (the PostgreSQL migrations define their own); [`entry_changes`] logs what a
//! unit of work did to entries; [`schema`] is diesel's view of
//! the tables; [`models`] holds row and form structs; [`queries`] holds plain functions over
//! `&mut Conn`; [`actor`] runs them on the single writer thread ([`watch`] says
//! how long its current unit has run), [`readers`] runs pattern reads beside it; [`handle`] is how the rest of the
//! server reaches all of it; [`testing`] holds the fixtures the tests and benches share. Every fallible
//! function returns [`DbError`]. Database rows are not wire types: the RPC layer builds its
//! own results from them.

pub mod actor;
pub mod backend;
pub mod connection;
pub mod entry_changes;
pub mod enums;
mod error;
pub mod functions;
pub mod handle;
pub mod ids;
pub mod json;
pub mod models;
pub mod paths;
pub mod queries;
pub mod readers;
pub mod schema;
pub mod statement;
pub mod testing;
pub mod watch;

pub use actor::transact::Transact;
pub use actor::{start_db, DbActor};
pub use backend::{Conn, MultiBackend, Store};
pub use connection::{open_connection, run_migrations, ConnectionSetup, DEFAULT_TOKEN_DIVISOR};
pub use error::{DbError, UnitError};
pub use handle::{DbHandle, DbOptions};
pub use readers::ReadPool;
pub use watch::DbWatch;
