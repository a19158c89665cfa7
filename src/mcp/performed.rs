//! The calls made before the unit of work that records them.
//!
//! A tool handler runs on the DB writer inside a transaction and must not wait on a server,
//! so a server tool's gather half makes the calls of a reply that run at once
//! ([`gather_direct`])
//! and its acceptance's half the call of an accepted proposal ([`accepted_call`]). The
//! unit hands the outcomes to the handler (or the acceptance) in its scope; a reply's are
//! [`CallOutcomes`], each taken by its [`CallKey`], and what the handler does not take (a
//! command the dispatch cancelled) is dropped with the unit.

use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use crate::db::models::entry::EntryRow;
use crate::mcp::outcome::CallOutcome;
use crate::mcp::server::{parse_arguments, McpCall, Plan, Server};
use crate::plugins::gather::{Gather, Gathering, Keyed};

/// Which call of a reply an outcome belongs to: its server's name, the tool and its
/// arguments as written.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(super) struct CallKey {
    server: String,
    tool: String,
    arguments: String,
}

impl CallKey {
    /// The key of `call` to `server`.
    pub(super) fn of(server: &Server, call: &McpCall) -> CallKey {
        CallKey {
            server: server.config.name.clone(),
            tool: call.tool.clone(),
            arguments: call.arguments_text(),
        }
    }
}

/// The outcomes of one reply's calls, by the command they belong to.
pub(super) type CallOutcomes = Keyed<CallKey, CallOutcome>;

/// The gather half that makes those of `calls` that run at once (their plan is
/// [`Plan::Direct`]), for a loop's reply (`at.loop_row`; a client's call makes none); `None`
/// when there are none.
pub(super) fn gather_direct<'a>(
    at: &'a Gathering<'a>,
    calls: impl IntoIterator<Item = (Arc<Server>, McpCall)>,
) -> Option<Gather<'a>> {
    at.loop_row?;
    let direct: Vec<(Arc<Server>, McpCall)> = calls
        .into_iter()
        .filter(|(server, call)| server.plan(call) == Plan::Direct)
        .collect();
    (!direct.is_empty()).then(|| Gather::of(perform(direct, at.cancel)))
}

/// Makes `calls`, each to its server within the server's timeout, in order; an abort
/// (`cancel`) stops them.
async fn perform(calls: Vec<(Arc<Server>, McpCall)>, cancel: &CancellationToken) -> CallOutcomes {
    let mut performed = CallOutcomes::default();
    for (server, call) in calls {
        let outcome = server.call(&call, cancel).await;
        if outcome == CallOutcome::Cancelled {
            break;
        }
        performed.put(CallKey::of(&server, &call), outcome);
    }
    performed
}

/// The call `proposal` proposed: its `tool` and `arguments` attributes.
pub(super) fn accepted_call(proposal: &EntryRow) -> McpCall {
    let text = |name: &str| {
        proposal
            .attributes
            .text(name)
            .unwrap_or_default()
            .to_owned()
    };
    McpCall {
        tool: text("tool"),
        arguments: parse_arguments(&text("arguments")),
    }
}
