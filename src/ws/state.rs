//! [`ServerState`]: what the WebSocket sessions and the HTTP routes share.

use serde_json::Value;

use crate::access::Access;
use crate::agent::AgentContext;
use crate::db::ids::ProjectId;
use crate::db::models::RpcLogInsertForm;
use crate::error::AppError;
use crate::rpc::call::Reply;
use crate::rpc::envelope::Request;
use crate::ws::in_flight::InFlight;
use crate::ws::registry::ConnectionRegistry;

/// The agent core, the open connections and their requests in flight. Cheap to clone.
#[derive(Clone)]
pub struct ServerState {
    /// What the handlers work with.
    pub agent: AgentContext,
    /// Who may connect, and what each caller may do.
    pub access: Access,
    pub connections: ConnectionRegistry,
    pub in_flight: InFlight,
}

impl ServerState {
    /// Records one call in `rpc_log`, without waiting.
    pub fn audit(
        &self,
        project: Option<ProjectId>,
        request: &Request,
        outcome: &Result<Reply, AppError>,
    ) {
        let (result, error) = match outcome {
            Ok(reply) => (Some(reply.result.to_string()), None),
            Err(error) => (None, Some(error.to_string())),
        };
        self.agent.db.log_rpc(RpcLogInsertForm {
            project_id: project,
            method: request.method.clone(),
            rpc_id: request.id.as_ref().map(Value::to_string),
            params: Some(request.params.to_string()),
            result,
            error,
        });
    }
}
