//! WebSocket transport: the upgrade and its gates, the address a connection comes from, the
//! session actor per client and the pump that writes for it, the bounds on requests in
//! flight, the registry used at shutdown, the state the sessions and the HTTP routes share,
//! and the audit row each call leaves.

pub mod audit;
pub mod client_addr;
pub mod frames;
pub mod gate;
pub mod in_flight;
pub mod pump;
pub mod registry;
pub mod session;
pub mod state;
pub mod upgrade;
