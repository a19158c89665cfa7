//! The agent core: run actors that serialize turns, the loop queue, and the turn executor.
//!
//! A client's `ask`/`act` enqueues a loop (a row of `loops`, the queue) and wakes the run's
//! [`RunActor`](run_actor::RunActor) through the [`RunRegistry`]; the actor drains the
//! queue one loop at a time ([`run_loop`]), each loop running turns ([`turn`]) until it
//! ends, and the waiting request gets the loop's [`LoopOutcome`](outcome::LoopOutcome).

pub mod context;
pub mod error;
pub mod loop_config;
pub mod outcome;
pub mod registry;
pub mod resume;
pub mod run_actor;
pub mod run_loop;
pub mod scan;
pub mod state;
pub mod turn;

pub use context::AgentContext;
pub use registry::RunRegistry;
