//! Plain query functions over `&mut Conn`, grouped by table. They are what the
//! DB actor runs; tests call them directly.
//!
//! Conventions: a lookup by a client-given name or path returns `Option`; an operation on
//! a row that must exist returns [`DbError::NotFound`](super::DbError::NotFound) when it
//! does not; multi-statement writes run in a transaction of their own, a savepoint inside the unit of
//! work that calls them.

pub(crate) mod admin_changes;
pub(crate) mod command_rules;
pub(crate) mod console_sessions;
pub(crate) mod constraints;
pub(crate) mod context;
pub(crate) mod demotions;
pub(crate) mod entries;
pub(crate) mod entry_moves;
pub(crate) mod entry_revisions;
pub(crate) mod file_changes;
pub(crate) mod free_paths;
pub(crate) mod inbox;
pub(crate) mod instances;
pub(crate) mod key_policy;
pub(crate) mod loop_places;
pub(crate) mod loops;
pub(crate) mod memory;
pub(crate) mod models;
pub(crate) mod oidc;
pub(crate) mod paused_loops;
pub(crate) mod personal_tokens;
pub(crate) mod presence;
pub(crate) mod project_settings;
pub(crate) mod projects;
pub(crate) mod proposals;
pub(crate) mod provider_endpoints;
pub(crate) mod retention;
pub(crate) mod rpc_log;
pub(crate) mod run_actions;
pub(crate) mod run_events;
pub(crate) mod run_titles;
pub(crate) mod runs;
pub(crate) mod schemes;
pub(crate) mod secrets;
pub(crate) mod selected;
pub(crate) mod snapshot;
pub(crate) mod stored_caps;
pub(crate) mod turns;
pub(crate) mod usage;
pub(crate) mod webhooks;
