//! [`ServerState`]: what the WebSocket sessions and the HTTP routes share.

use std::ops::Deref;
use std::sync::Arc;
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

/// The agent core, the open connections and their requests in flight: one for the server,
/// behind an `Arc`, so a clone (every connection keeps one) is a pointer, not a copy of
/// every handle (several of which allocate when cloned).
#[derive(Clone)]
pub(crate) struct ServerState(Arc<Shared>);

/// What [`ServerState`] shares.
pub(crate) struct Shared {
    /// What the handlers work with.
    pub agent: AgentContext,
    /// Who may connect, and what each caller may do.
    pub access: Access,
    pub connections: ConnectionRegistry,
    pub in_flight: InFlight,
    /// The refused console sign-ins of the last minute, which bound their audit rows.
    pub sign_in_refusals: crate::console::refusals::RefusalNotes,
}

impl Deref for ServerState {
    type Target = Shared;

    fn deref(&self) -> &Shared {
        &self.0
    }
}

impl ServerState {
    /// The state of a server with no connection open yet.
    pub(crate) fn new(agent: AgentContext, access: Access) -> Self {
        ServerState(Arc::new(Shared {
            in_flight: InFlight::new(&agent.settings.server),
            agent,
            access,
            connections: ConnectionRegistry::default(),
            sign_in_refusals: crate::console::refusals::RefusalNotes::default(),
        }))
    }

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
