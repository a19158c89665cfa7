//! The JSON-RPC edge: envelope, method table, typed params, handlers.
//!
//! Only this module and `ws` know JSON-RPC; handlers take typed params and return
//! serializable results or an [`AppError`](crate::error::AppError).

pub mod call;
pub mod dispatch;
pub mod envelope;
pub mod handlers;
pub mod held_calls;
pub mod methods;
pub mod params;
