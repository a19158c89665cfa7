//! WebSocket transport: the upgrade and its gates, the session actor per client, the
//! bounds on requests in flight, the registry used at shutdown, and the state the sessions
//! and the HTTP routes share.

pub mod frames;
pub mod gate;
pub mod in_flight;
pub mod registry;
pub mod session;
pub mod state;
pub mod upgrade;
