//! Handlers, one file per method group; the method table (`rpc::methods`) routes to them.

pub(crate) mod admin_changes;
mod blocking;
pub(crate) mod cancel;
pub(crate) mod caps_edit;
pub(crate) mod entries;
pub(crate) mod fork;
pub(crate) mod held;
pub(crate) mod inbox;
pub(crate) mod loops;
pub(crate) mod mcp;
pub(crate) mod models;
pub(crate) mod people;
pub(crate) mod people_edit;
pub(crate) mod plugin_methods;
pub(crate) mod presence;
pub(crate) mod project_config;
pub(crate) mod replay;
pub(crate) mod resume;
pub(crate) mod rules;
pub(crate) mod run_settings;
pub(crate) mod runs;
pub(crate) mod session;
pub(crate) mod skills;
pub(crate) mod tools;
pub(crate) mod usage;
pub(crate) mod webhooks;
