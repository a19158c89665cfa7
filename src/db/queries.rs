//! Plain query functions over `&mut Conn`, grouped by table. They are what the
//! DB actor runs; tests call them directly.
//!
//! Conventions: a lookup by a client-given name or path returns `Option`; an operation on
//! a row that must exist returns [`DbError::NotFound`](super::DbError::NotFound) when it
//! does not; multi-statement writes run in a transaction of their own, a savepoint inside the unit of
//! work that calls them.

pub mod constraints;
pub mod context;
pub mod demotions;
pub mod entries;
pub mod entry_moves;
pub mod free_paths;
pub mod instances;
pub mod loop_places;
pub mod loops;
pub mod memory;
pub mod models;
pub mod projects;
pub mod retention;
pub mod rpc_log;
pub mod run_actions;
pub mod runs;
pub mod schemes;
pub mod selected;
pub mod turns;
pub mod usage;
