//! The agent core: run actors that serialize turns, the loop queue, and the turn executor.
//!
//! A client's `ask`/`act` queues a loop through the [`RunRegistry`] in the mailbox of the
//! run's [`RunActor`](run_actor::RunActor), the run's loop queue (backed by the `loops`
//! table); the actor drains it one loop at a time ([`run_loop`]), each loop running turns
//! ([`turn`]) until it ends, and the waiting request gets the loop's
//! [`LoopOutcome`](outcome::LoopOutcome). How many loops may be active per project and per
//! person is [`admission`]'s to say. A loop may hand sub-tasks to child runs
//! ([`delegation`]).

pub mod admission;
pub mod context;
pub mod delegation;
pub mod error;
pub mod loop_config;
pub mod outcome;
pub mod outlines;
mod reflect;
pub mod registry;
pub mod resume;
pub mod run_actor;
pub mod run_budget;
pub mod run_loop;
pub mod scan;
pub mod state;
pub mod turn;

pub use context::{AgentContext, Replying};
pub use registry::RunRegistry;
