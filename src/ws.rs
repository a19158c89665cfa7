//! WebSocket transport: the upgrade and its gates, the address a connection comes from, the session actor per client, the
//! registry used at shutdown, and the state the sessions and the HTTP routes share.

pub mod client_addr;
pub mod frames;
pub mod gate;
pub mod registry;
pub mod session;
pub mod state;
pub mod upgrade;
