//! The agent core: run actors that serialize turns, the loop queue, and the turn executor.

pub mod registry;

pub use registry::RunRegistry;
