//! WebSocket transport: the session actor per client and the registry used at shutdown.

pub mod registry;
pub mod session;
