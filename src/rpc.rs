//! The JSON-RPC edge: envelope, method table, typed params, handlers.
//!
//! Only this module and `ws` know JSON-RPC; handlers take typed params and return
//! serializable results or an [`AppError`](crate::error::AppError).

pub(crate) mod call;
pub(crate) mod dispatch;
pub(crate) mod envelope;
pub(crate) mod handlers;
pub(crate) mod held_calls;
pub(crate) mod methods;
pub(crate) mod params;
