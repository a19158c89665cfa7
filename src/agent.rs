//! The agent core: run actors that serialize turns, the loop queue, and the turn executor.
//!
//! A client's `ask`/`act` queues a loop through the [`RunRegistry`] in the mailbox of the
//! run's [`RunActor`](run_actor::RunActor), the run's loop queue (backed by the `loops`
//! table); the actor drains it one loop at a time ([`run_loop`]), each loop running turns
//! ([`turn`]) until it ends, and the waiting request gets the loop's
//! [`LoopOutcome`](outcome::LoopOutcome). How many loops may be active per project and per
//! person is [`admission`]'s to say. A loop may hand sub-tasks to child runs
//! ([`delegation`]).

pub(crate) mod admission;
pub(crate) mod allow;
pub(crate) mod changes;
pub(crate) mod context;
pub(crate) mod current;
pub(crate) mod delegation;
pub(crate) mod error;
pub(crate) mod loop_config;
pub(crate) mod machine;
pub(crate) mod outcome;
pub(crate) mod outlines;
pub(crate) mod paused;
mod reflect;
pub(crate) mod registry;
pub(crate) mod run_actor;
pub(crate) mod run_budget;
pub(crate) mod run_loop;
pub(crate) mod scan;
pub(crate) mod state;
pub(crate) mod turn;
pub(crate) mod verbs;

pub(crate) use context::{AgentContext, Replying};
pub(crate) use registry::RunRegistry;
