//! The criterion benchmarks of the server's parts, kept in the crate so they reach its
//! internals without making them public; each `benches/<name>.rs` runs one of these.

pub mod context;
pub mod recall;
pub mod replay;
pub mod sandbox;
pub mod scan;
pub mod store;
