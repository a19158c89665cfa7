//! WebSocket transport: the upgrade and its gates, the session actor per client, the
//! registry used at shutdown, the state the sessions and the HTTP routes share, and the
//! audit row each call leaves.

pub mod audit;
pub mod frames;
pub mod gate;
pub mod registry;
pub mod session;
pub mod state;
pub mod upgrade;
