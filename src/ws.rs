//! WebSocket transport: the upgrade and its gates (a token, or the console's session
//! cookie), the address a connection comes from, the session actor per client and the pump
//! that writes for it, the bounds on requests in flight, the registry used at shutdown, the
//! state the sessions and the HTTP routes share, the audit row each call leaves, and what
//! the frame log (`RUMMY_DEBUG`) writes of an inbound frame (never a secret param).

pub(crate) mod audit;
pub(crate) mod client_addr;
pub(crate) mod cookie;
pub(crate) mod frame_log;
pub(crate) mod frames;
pub(crate) mod gate;
pub(crate) mod in_flight;
pub(crate) mod pump;
pub(crate) mod registry;
pub(crate) mod session;
pub(crate) mod state;
pub(crate) mod upgrade;
