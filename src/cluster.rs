//! Several rummy instances on one PostgreSQL store: who they are, which one drives a run,
//! how a client's call reaches it, and what they tell each other. A SQLite store has one
//! instance; the same code then finds no other to ask and no bus to send on.
//!
//! # The protocol
//!
//! **An instance** is one rummy process on the store, [`Instance`]: a random 128-bit id and a
//! heartbeat row in `instances` whose expiry ([`Instance::beat`]) it pushes
//! `RUMMY_LEASE_TTL_SECS` ahead three times per TTL. At start it joins ([`Instance::join`]):
//! alone on the store (SQLite, or no live row), it recovers as a restarted single instance
//! does (every run left at 100 or 102 ends 499, every old row goes); beside live instances it
//! releases only the expired ones.
//!
//! **The lease of a run** (`run_leases`) names the one instance that executes the run's
//! loops. A run's actor takes it with each loop it claims, in one unit of work
//! (`queries::instances::claim_loop`, the lease's row locked meanwhile), and gives it back
//! when nothing is pending for it; a loop whose client waits on some instance
//! (`loop_waiters`) is claimed only there. While another instance holds the lease, the loops
//! queued here stay pending and the actor looks again every heartbeat
//! (`agent::run_actor`). A lease lives as long as its holder's heartbeat row: one beat renews
//! every lease the instance holds. How many loops may run or wait per project and per person
//! is counted across instances in the store too (`agent::admission`,
//! `queries::loop_places`).
//!
//! **A call for a leased run.** A client's `run/abort`, `run/resolve` or `run/inject` is
//! checked (params, run, rights) by the instance the client sent it to. If that instance
//! runs a loop of the run, or no live instance other than it holds the lease, it executes
//! the call itself. Otherwise [`LeaseHolder::ask`] sends it to the holder as a command; the
//! holder acknowledges at once, executes it as its own client's call and answers with the
//! method's result or JSON-RPC error, which the asker returns to its client unchanged. No
//! acknowledgement within 30 seconds (`ACK_WAIT`), or the holder's row lapsing
//! before it acknowledged, and the asker executes the call itself; a holder that
//! acknowledged and then died is [`HolderGone`] (an internal error: the call may have taken
//! effect, so it is never executed twice). What the calls say is the RPC layer's
//! (`rpc::held_calls`, `rpc::handlers::held`).
//!
//! **The bus** ([`FrameBus`]) is PostgreSQL's LISTEN/NOTIFY, on dedicated connections, on
//! three channels: `rummy_frames`, each run notification frame with its project, run and the
//! `seq` the executing instance numbered it with, which every other instance's hub of the
//! project offers to its clients unchanged; `rummy_broadcasts`, a project's unnumbered
//! `ui/render` and `ui/notify`; `rummy_commands`, the lease holder's calls, acknowledgements
//! and answers (JSON), each addressed to one instance. A message past NOTIFY's payload
//! limit crosses in parts of one transaction. What is sent while a connection is lost is
//! lost: a client sees the gap in `seq` and asks for a replay.
//!
//! **When an instance dies** its heartbeat row expires; the next beat of any other instance
//! (or its start) releases it (`queries::instances::release`): its running loops go back to
//! pending, its runs left at 100 or 102 end 499, and its row goes with its leases and its
//! waiting claims, so any instance runs those loops when a client next drives the run.
//! Nothing runs that no client asked for. An instance that only stalled and finds its own
//! row gone cancels the loops it still runs and joins again. A clean stop gives its leases
//! back the same way ([`Instance::leave`]).
//!
//! The SQL lives in `db::queries::instances` and `db::queries::loop_places`; this module
//! calls it.

pub(crate) mod bus;
pub(crate) mod instance;
pub(crate) mod lease_holder;

pub(crate) use instance::Instance;
pub(crate) use lease_holder::{HolderGone, LeaseHolder};
