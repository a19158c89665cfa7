//! What a handler is given ([`CallContext`]) and what it answers ([`Reply`]).

use std::path::PathBuf;

use serde::Serialize;
use serde_json::Value;

use crate::access::{Access, Caller, Grant};
use crate::agent::AgentContext;
use crate::db::ids::ProjectId;
use crate::error::AppError;
use crate::hub::notifications::Client;
use crate::hub::{ConnId, Outbound};
use crate::presence::Someone;
use actix::Recipient;

/// The project a connection is bound to by `init`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ProjectBinding {
    pub id: ProjectId,
    pub name: String,
    /// Absolute project root.
    pub root: PathBuf,
    /// The client the connection said it is at `init`.
    pub client: Client,
}

/// What a handler can see of the server and of the calling connection.
#[derive(Clone)]
pub(crate) struct CallContext {
    /// The agent core the handlers work with.
    pub agent: AgentContext,
    pub conn: ConnId,
    /// Who the connection acts for.
    pub caller: Caller,
    /// The address the connection comes from (`ws::client_addr`), for the audit.
    pub client_addr: Option<std::net::IpAddr>,
    /// Who may do what.
    pub access: Access,
    /// Its project, once `init` has run.
    pub project: Option<ProjectBinding>,
    /// Where notifications for this connection alone go (`inbox/changed`).
    pub outbound: Recipient<Outbound>,
}

impl CallContext {
    /// The bound project, or the reference's "not initialized" error.
    pub(crate) fn project(&self) -> Result<&ProjectBinding, AppError> {
        self.project.as_ref().ok_or(AppError::NotInitialized)
    }

    /// What the caller may do now.
    pub(crate) fn grant(&self) -> Result<Grant, AppError> {
        Ok(self.access.grant(&self.caller)?)
    }

    /// This connection as presence names it (`init` must have run).
    pub(crate) fn someone(&self) -> Result<Someone, AppError> {
        Ok(Someone {
            conn: self.conn,
            person: self.person(),
            client: self.project()?.client.clone(),
        })
    }

    /// The caller's name, for the rows that record who did what.
    pub(crate) fn person(&self) -> Option<String> {
        self.caller.person().map(str::to_owned)
    }

    /// The connection, named across instances (`Instance::connection_key`): what a loop
    /// records of the request that queued it, besides the person.
    pub(crate) fn connection(&self) -> i64 {
        self.agent.runs.instance().connection_key(self.conn)
    }

    /// The key of whom the per-person limits (requests in flight, loops running or queued)
    /// count this call against: the person, or for the operator, who is nobody in
    /// particular, the connection.
    pub(crate) fn limit_key(&self) -> String {
        match self.caller.person() {
            Some(name) => format!("person {name}"),
            None => format!("connection {}", self.conn),
        }
    }
}

/// A handler's answer: the result, and a new project binding when `init` ran.
#[derive(Debug)]
pub(crate) struct Reply {
    pub result: Value,
    /// Bind the connection to this project.
    pub bind: Option<ProjectBinding>,
}

impl Reply {
    /// A reply of `result` that binds no project.
    pub(crate) fn of<T: Serialize>(result: T) -> Result<Reply, AppError> {
        let result = serde_json::to_value(result)
            .map_err(|error| AppError::Internal(format!("cannot encode result: {error}")))?;
        Ok(Reply { result, bind: None })
    }
}
