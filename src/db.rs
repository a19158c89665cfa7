//! The known store and everything else rummy persists: migrations, schema, SQL functions and
//! the DB actor.
//!
//! Layers, bottom up: [`backend`] says which database holds the store (a SQLite file or
//! PostgreSQL) and is the connection type, [`Conn`]; [`connection`] opens connections (every
//! PostgreSQL one, the frame bus's too) and applies each backend's embedded migrations, and [`counted`] counts
//! the statements the server's connections send; [`functions`] registers on SQLite the SQL
//! functions the schema needs (the PostgreSQL migrations define their own); [`entry_changes`] logs what a
//! unit of work did to entries; [`events`] makes a run's notifications durable before they
//! are sent; [`schema`] is diesel's view of
//! the tables; [`models`] holds row and form structs; [`queries`] holds plain functions over
//! `&mut Conn`; [`actor`] runs them on the single writer thread, reached through [`writer`] ([`watch`] says
//! how long its current unit has run), [`readers`] runs pattern reads beside it; [`handle`] is how the rest of the
//! server reaches all of it; [`testing`] holds the fixtures the tests and benches share. Every fallible
//! function returns [`DbError`]. Database rows are not wire types: the RPC layer builds its
//! own results from them.

pub(crate) mod actor;
pub(crate) mod backend;
pub(crate) mod connection;
pub(crate) mod counted;
pub(crate) mod entry_changes;
pub(crate) mod enums;
mod error;
pub(crate) mod event_batch;
pub(crate) mod events;
pub(crate) mod functions;
pub(crate) mod handle;
pub(crate) mod ids;
pub(crate) mod json;
pub(crate) mod models;
pub(crate) mod paths;
pub(crate) mod queries;
pub(crate) mod readers;
pub(crate) mod schema;
pub(crate) mod statement;
#[cfg(any(test, feature = "testing"))]
pub(crate) mod testing;
pub(crate) mod watch;
pub(crate) mod writer;

pub(crate) use actor::DbActor;
// A test's own connection (`rummy::testing::Database`) is one of the server's.
#[cfg_attr(not(feature = "testing"), allow(unreachable_pub))]
pub use backend::Conn;
#[cfg_attr(not(feature = "testing"), allow(unreachable_pub))]
pub use backend::MultiBackend;
pub(crate) use backend::Store;
pub(crate) use connection::{
    connect_postgres, open_connection, run_migrations, ConnectionSetup, DEFAULT_TOKEN_DIVISOR,
};
#[cfg_attr(not(feature = "testing"), allow(unreachable_pub))]
pub use error::DbError;
pub(crate) use error::UnitError;
pub(crate) use handle::{DbHandle, DbOptions};
pub(crate) use readers::ReadPool;
pub(crate) use watch::DbWatch;
