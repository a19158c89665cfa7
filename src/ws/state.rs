//! [`ServerState`]: what the WebSocket sessions and the HTTP routes share.

use std::time::Duration;

use crate::access::Access;
use crate::agent::AgentContext;
use crate::db::ids::ProjectId;
use crate::error::AppError;
use crate::rpc::call::Reply;
use crate::rpc::envelope::Request;
use crate::ws::audit::{self, Call};
use crate::ws::in_flight::InFlight;
use crate::ws::registry::ConnectionRegistry;

/// The agent core, the open connections and their requests in flight. Cheap to clone.
#[derive(Clone)]
pub(crate) struct ServerState {
    /// What the handlers work with.
    pub agent: AgentContext,
    /// Who may connect, and what each caller may do.
    pub access: Access,
    pub connections: ConnectionRegistry,
    pub in_flight: InFlight,
}

impl ServerState {
    /// Records one call in `rpc_log` as `RUMMY_RPC_LOG` asks, without waiting.
    pub(crate) fn audit(
        &self,
        project: Option<ProjectId>,
        person: Option<String>,
        request: &Request,
        outcome: &Result<Reply, AppError>,
        duration: Duration,
    ) {
        let call = Call {
            project,
            person,
            request,
            outcome,
            duration,
        };
        if let Some(row) = audit::row(&self.agent.settings.audit, call) {
            self.agent.db.log_rpc(row);
        }
    }
}
