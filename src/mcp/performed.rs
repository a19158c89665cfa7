//! The outcomes of calls made before the unit of work that records them.
//!
//! A tool handler runs on the DB writer inside a transaction and must not wait on a server,
//! so a reply's direct calls are made before its commands are dispatched
//! ([`crate::mcp::McpServers::perform`]), and an accepted proposal's call before the
//! resolution's unit of work ([`crate::mcp::McpServers::perform_accepted`]). Their
//! [`CallOutcomes`] go to that unit as one kind of
//! [`Answers`](crate::plugins::answers::Answers), where the handler (or the acceptance)
//! takes each by its [`CallKey`]; what it does not take (a command the dispatch cancelled)
//! is dropped with the unit.

use crate::mcp::outcome::CallOutcome;
use crate::plugins::answers::Keyed;

/// Which command of the unit an outcome belongs to.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum CallKey {
    /// A call written in the reply: the server's tag and name, the tool and its arguments
    /// as written.
    Reply {
        tag: String,
        server: String,
        tool: String,
        arguments: String,
    },
    /// The call of the accepted proposal at `path`.
    Accepted { path: String },
}

/// The outcomes of one unit's calls, by the command they belong to.
pub type CallOutcomes = Keyed<CallKey, CallOutcome>;
