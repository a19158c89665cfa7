//! The run's verbs: what clients do to a run, each in one module as a short list of named
//! stages, like the turn's (`agent::turn`) — [`start`] a loop (`ask`, `act`), [`resolve`] a
//! proposal (`run/resolve`), [`inject`] a message (`run/inject`), [`abort`] the run
//! (`run/abort`) [`cancel`] one's own loops of it (`run/cancel`) and [`revert`] a file the run changed
//! (`run/revert`, a proposal like the model's). Every change of a run's status they make is a named transition of one
//! state machine (`agent::machine`, which the store's trigger mirrors), every refusal a
//! [`VerbError`]; the RPC handlers, `rummy acp`, the console and the calls held for another
//! instance only translate to and from them.
//!
//! Races between verbs, from any number of clients and instances, are decided in the
//! store, on the writer: a proposal is resolved by the first unit of work that finds it
//! pending (and, when accepting it needs work outside the store, claimed first, so that no
//! other request carries it out again); an abort is settled in one unit of work that drops
//! every loop queued on the run and either finds the run's loop running here (and cancels
//! it there, on the writer, before the loop can store another outcome) or stops the idle
//! run whole, its proposals withdrawn; a cancel is settled the same way for the caller's own
//! loops only. A loop a verb queues is inserted in the verb's own unit of work ([`queue`]),
//! so an abort or a cancel that comes after it finds it.

pub(crate) mod abort;
pub(crate) mod announce;
pub(crate) mod answer;
pub(crate) mod cancel;
mod error;
pub(crate) mod inject;
mod queue;
pub(crate) mod resolve;
pub(crate) mod revert;
pub(crate) mod start;

pub(crate) use answer::Answer;
pub(crate) use error::{ProposalView, VerbError};
