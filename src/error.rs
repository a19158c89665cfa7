//! Errors at the RPC edge, and the one table that maps them to JSON-RPC codes.
//!
//! Which error type each layer uses:
//! - `db` returns `DbError`, `project` returns `ProjectError`, `llm` returns `LlmError`,
//!   `hedberg` and `parser` never fail (they heal and warn);
//! - RPC handlers return [`AppError`], which wraps the subsystem errors;
//! - only [`AppError::to_rpc`] knows JSON-RPC codes and the reference message texts;
//! - `anyhow` appears only in `main`.

use crate::access::AccessError;
use crate::agent::admission::{LoopsFull, NotAdmitted};
use crate::agent::allow::RuleError;
use crate::agent::verbs::VerbError;
use crate::db::DbError;
use crate::mcp::attached::AttachError;
use crate::mcp::changes::ChangeError;
use crate::mcp::edit::EditError;
use crate::plugins::method::MethodError;
use crate::project::ProjectError;
use crate::usage::Standing;

/// JSON-RPC 2.0 and rummy application error codes.
pub(crate) mod code {
    use super::ErrorCode;

    /// Invalid JSON was received.
    pub(crate) const PARSE_ERROR: ErrorCode = ErrorCode(-32700);
    /// The JSON sent is not a valid request object.
    pub(crate) const INVALID_REQUEST: ErrorCode = ErrorCode(-32600);
    /// The method does not exist.
    pub(crate) const METHOD_NOT_FOUND: ErrorCode = ErrorCode(-32601);
    /// A parameter is missing or has the wrong type.
    pub(crate) const INVALID_PARAMS: ErrorCode = ErrorCode(-32602);
    /// Anything the server did not expect.
    pub(crate) const INTERNAL: ErrorCode = ErrorCode(-32603);
    /// The connection has not called `init`.
    pub(crate) const NOT_INITIALIZED: ErrorCode = ErrorCode(-32001);
    /// The run alias names no run (of this project).
    pub(crate) const RUN_NOT_FOUND: ErrorCode = ErrorCode(-32002);
    /// The model alias is not in the catalogue.
    pub(crate) const UNKNOWN_MODEL: ErrorCode = ErrorCode(-32003);
    /// A name is taken, or the state does not allow the request.
    pub(crate) const CONFLICT: ErrorCode = ErrorCode(-32004);
    /// Authentication failed.
    pub(crate) const UNAUTHORIZED: ErrorCode = ErrorCode(-32005);
    /// Too many requests in flight, or loops running or queued.
    pub(crate) const OVERLOADED: ErrorCode = ErrorCode(-32006);
    /// The reply would be larger than the frame limit.
    pub(crate) const TOO_LARGE: ErrorCode = ErrorCode(-32007);
    /// The request needs more work (time, steps, memory) than the server allows one call.
    pub(crate) const WORK_LIMIT: ErrorCode = ErrorCode(-32008);
    /// Some of the notifications asked for are no longer kept (`getRun` has the state).
    pub(crate) const NOT_KEPT: ErrorCode = ErrorCode(-32009);
    /// A client's tool call would carry the run's context past its budget.
    pub(crate) const CONTEXT_FULL: ErrorCode = ErrorCode(-32010);
    /// A spend cap of the run, its person, its project or the server is reached; `data`
    /// names it (scope, subject, period, unit, limit, spent, left, resets).
    pub(crate) const CAP_REACHED: ErrorCode = ErrorCode(-32011);
}

/// What went wrong while serving one request.
#[derive(Debug, thiserror::Error)]
pub(crate) enum AppError {
    /// The frame is not JSON.
    #[error("Parse error: {0}")]
    Parse(String),
    /// The frame is JSON but not a request object.
    #[error("Invalid request: {0}")]
    InvalidRequest(String),
    /// No method by that name.
    #[error("Method '{0}' not found.")]
    MethodNotFound(String),
    /// A parameter is missing or ill-typed.
    #[error("{0} is required")]
    MissingParam(String),
    /// A parameter is present but its value is not acceptable.
    #[error("{0}")]
    InvalidParam(String),
    /// The method needs `init` first.
    #[error("Project not initialized.")]
    NotInitialized,
    /// No such run (the wording of most methods).
    #[error("Run '{0}' not found.")]
    RunNotFound(String),
    /// No such run (the wording of `store`, `skill/*`, `getSkills`, `persona/set`).
    #[error("Run not found: {0}")]
    RunNotFoundShort(String),
    /// The model alias is not in the catalogue.
    #[error("Unknown model alias '{0}'. Define RUMMY_MODEL_{0} in your environment.")]
    UnknownModel(String),
    /// `run/rename` with a name outside `[A-Za-z0-9_]+`.
    #[error("Name must match [a-z_]+.")]
    BadRunName,
    /// `run/rename` to an alias in use.
    #[error("Name '{0}' is already taken.")]
    NameTaken(String),
    /// A short method ran past `RUMMY_RPC_TIMEOUT`.
    #[error("RPC '{method}' timed out after {timeout_ms}ms.")]
    Timeout { method: String, timeout_ms: u64 },
    /// The connection closed (the client's close, a frame it could not have sent, the
    /// server stopping) while the request was served; what it did may have taken effect.
    #[error(
        "The connection closed before '{0}' was answered; it may or may not have taken effect."
    )]
    Closing(String),
    /// Too many requests in flight on this connection.
    #[error("Too many requests in flight ({0}); wait for replies before sending more.")]
    Overloaded(usize),
    /// Too many requests in flight of this person, across their connections.
    #[error("Too many requests in flight across your connections ({0}); wait for replies before sending more.")]
    PersonOverloaded(usize),
    /// An `ask`/`act` past a bound on active loops, refused.
    #[error(transparent)]
    LoopsFull(#[from] LoopsFull),
    /// The reply would not fit in one frame of `RUMMY_MAX_FRAME_BYTES`.
    #[error("Reply too large: {bytes} bytes exceed the {limit}-byte frame limit. Ask for less (a narrower pattern, limit and offset).")]
    ReplyTooLarge {
        /// The encoded reply's size.
        bytes: usize,
        /// The frame limit.
        limit: usize,
    },
    /// `run/replay` from a seq after which some notification is no longer kept (or more
    /// than one replay delivers, or one the run's numbering never gave): the client resyncs
    /// with `getRun`, then follows from `latest`, the run's latest seq (its `data`).
    #[error("Notifications of run '{run}' since seq {since} are no longer kept; call getRun.")]
    NotificationsNotKept {
        run: String,
        since: u64,
        latest: u64,
    },
    /// A tool call's pattern or edit work ran out of its budget (the message says which
    /// limit).
    #[error("{0}")]
    WorkLimit(String),
    /// A tool call's growth of the run's context was refused by the run's write gate, as a
    /// model command's would be (the message says how much would not fit).
    #[error("{0}")]
    ContextFull(String),
    /// An `ask`/`act` refused: a spend cap it would count against is reached.
    #[error("{}", .0.describe())]
    CapReached(Box<Standing>),
    /// The caller may not do this (role, project), or a project's root is taken.
    #[error(transparent)]
    Access(#[from] AccessError),
    #[error(transparent)]
    Db(#[from] DbError),
    /// A path or project file operation failed.
    #[error(transparent)]
    Project(#[from] ProjectError),
    /// An admin's change to the configured MCP servers was not made (`mcp::changes`).
    #[error(transparent)]
    McpChange(#[from] ChangeError),
    /// A client's MCP servers were not attached.
    #[error(transparent)]
    Attach(#[from] AttachError),
    /// A plugin's method failed.
    #[error(transparent)]
    Plugin(#[from] MethodError),
    /// A command rule named or made wrong (`agent::allow`).
    #[error(transparent)]
    Rule(#[from] RuleError),
    /// A verb of a run refused or failed (`agent::verbs`).
    #[error(transparent)]
    Verb(VerbError),
    /// The error of a call the instance holding the run's lease executed
    /// (`cluster::lease_holder`), returned as it answered it.
    #[error("{}", .0.message)]
    Relayed(RpcError),
    /// Something the server did not expect.
    #[error("{0}")]
    Internal(String),
}

impl From<VerbError> for AppError {
    fn from(error: VerbError) -> AppError {
        match error {
            VerbError::NotAdmitted(refused) => AppError::from(refused),
            VerbError::CapReached(cap) => AppError::CapReached(cap),
            VerbError::Db(error) => AppError::Db(error),
            VerbError::Rule(error) => AppError::Rule(error),
            other => AppError::Verb(other),
        }
    }
}

impl From<NotAdmitted> for AppError {
    fn from(error: NotAdmitted) -> AppError {
        match error {
            NotAdmitted::Full(full) => AppError::LoopsFull(full),
            NotAdmitted::Db(error) => AppError::Db(error),
        }
    }
}

/// A JSON-RPC error code: one of [`code`]'s, or the one another instance answered with (a
/// relayed error). On the wire, the integer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(transparent)]
pub(crate) struct ErrorCode(i64);

impl ErrorCode {
    pub(crate) const fn get(self) -> i64 {
        self.0
    }
}

/// A JSON-RPC error object: code, message and, when there is any, data.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) struct RpcError {
    pub code: ErrorCode,
    /// Human-readable text (the reference wording where one exists).
    pub message: String,
    /// Detail for programs; absent from the wire when `None`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<serde_json::Value>,
}

impl AppError {
    /// The one table from domain errors to wire codes.
    pub(crate) fn to_rpc(&self) -> RpcError {
        let code = match self {
            AppError::Parse(_) => code::PARSE_ERROR,
            AppError::InvalidRequest(_) => code::INVALID_REQUEST,
            AppError::MethodNotFound(_) => code::METHOD_NOT_FOUND,
            AppError::MissingParam(_) | AppError::InvalidParam(_) | AppError::BadRunName => {
                code::INVALID_PARAMS
            }
            AppError::NotInitialized => code::NOT_INITIALIZED,
            AppError::RunNotFound(_) | AppError::RunNotFoundShort(_) => code::RUN_NOT_FOUND,
            AppError::UnknownModel(_) => code::UNKNOWN_MODEL,
            AppError::NameTaken(_) => code::CONFLICT,
            AppError::Overloaded(_) | AppError::PersonOverloaded(_) | AppError::LoopsFull(_) => {
                code::OVERLOADED
            }
            AppError::ReplyTooLarge { .. } => code::TOO_LARGE,
            AppError::WorkLimit(_) => code::WORK_LIMIT,
            AppError::ContextFull(_) => code::CONTEXT_FULL,
            AppError::CapReached(_) => code::CAP_REACHED,
            AppError::NotificationsNotKept { .. } => code::NOT_KEPT,
            AppError::Project(error) => project_code(error),
            AppError::Access(AccessError::UsersFile(_)) => code::INTERNAL,
            AppError::Access(
                AccessError::NoUsersFile
                | AccessError::NoSuchPerson { .. }
                | AccessError::Refused(_),
            ) => code::INVALID_PARAMS,
            AppError::Access(AccessError::PersonExists { .. }) => code::CONFLICT,
            AppError::Access(_) => code::UNAUTHORIZED,
            AppError::Db(error) => db_code(error),
            AppError::Attach(error) => attach_code(error),
            AppError::McpChange(error) => change_code(error),
            AppError::Plugin(MethodError::InvalidParams(_)) => code::INVALID_PARAMS,
            AppError::Plugin(MethodError::RunNotFound(_)) => code::RUN_NOT_FOUND,
            AppError::Plugin(MethodError::Db(error)) => db_code(error),
            AppError::Plugin(MethodError::Failed(_)) => code::INTERNAL,
            AppError::Verb(error) => verb_code(error),
            AppError::Rule(RuleError::NotYours { .. }) => code::UNAUTHORIZED,
            AppError::Rule(_) => code::INVALID_PARAMS,
            AppError::Timeout { .. } | AppError::Closing(_) | AppError::Internal(_) => {
                code::INTERNAL
            }
            AppError::Relayed(error) => return error.clone(),
        };
        let message = match self {
            // Its text names a path on the server; the log keeps it (see `ws::session`).
            AppError::Project(ProjectError::Io { .. }) => {
                "A file operation on the server failed; its log has the detail.".to_owned()
            }
            _ => self.to_string(),
        };
        let data = match self {
            AppError::CapReached(cap) => serde_json::to_value(cap.view()).ok(),
            AppError::Verb(error) => error
                .proposal()
                .and_then(|view| serde_json::to_value(view).ok()),
            AppError::NotificationsNotKept { latest, .. } => {
                Some(serde_json::json!({"resync": true, "latest": latest}))
            }
            _ => None,
        };
        RpcError {
            code,
            message,
            data,
        }
    }
}

/// A change the file or the running servers do not allow is the caller's mistake (a name
/// taken, or too many servers, a conflict); a file that cannot be written, the server's.
fn change_code(error: &ChangeError) -> ErrorCode {
    match error {
        ChangeError::Edit(EditError::Exists { .. }) | ChangeError::TooMany => code::CONFLICT,
        ChangeError::Edit(_) | ChangeError::NoHome | ChangeError::NotRunning { .. } => {
            code::INVALID_PARAMS
        }
        ChangeError::Io(_) => code::INTERNAL,
    }
}

/// A proposal that is not (or no longer) pending, a refusal and a move the run's state
/// machine does not allow are the client's mistake, as the reference answers a resolution
/// of a path that is not pending (`data` says what happened to the proposal, and who did
/// it); the rest is the server's.
fn verb_code(error: &VerbError) -> ErrorCode {
    match error {
        VerbError::NotAProposal { .. }
        | VerbError::NoLongerPending(_)
        | VerbError::BeingResolved(_)
        | VerbError::CommandRunning { .. }
        | VerbError::Refused(_)
        | VerbError::Illegal { .. }
        | VerbError::NoSuchLoop { .. }
        | VerbError::NothingToRevert { .. } => code::INVALID_PARAMS,
        VerbError::Busy { .. } | VerbError::RevertPending { .. } => code::CONFLICT,
        VerbError::NotYours { .. } => code::UNAUTHORIZED,
        VerbError::NotAdmitted(NotAdmitted::Full(_)) => code::OVERLOADED,
        VerbError::CapReached(_) => code::CAP_REACHED,
        VerbError::NotAdmitted(NotAdmitted::Db(error)) | VerbError::Db(error) => db_code(error),
        VerbError::LoopLost | VerbError::RunGone(_) | VerbError::Elsewhere => code::INTERNAL,
        VerbError::Rule(RuleError::NotYours { .. }) => code::UNAUTHORIZED,
        VerbError::Rule(_) => code::INVALID_PARAMS,
    }
}

fn db_code(error: &DbError) -> ErrorCode {
    match error {
        DbError::NotFound(_) => code::INVALID_PARAMS,
        DbError::Conflict(_) => code::CONFLICT,
        DbError::Invalid(_) => code::INVALID_PARAMS,
        DbError::WorkLimit(_) => code::WORK_LIMIT,
        _ => code::INTERNAL,
    }
}

fn attach_code(error: &AttachError) -> ErrorCode {
    match error {
        AttachError::Off | AttachError::CommandRefused(_) | AttachError::Unreachable { .. } => {
            code::UNAUTHORIZED
        }
        AttachError::Taken(_) => code::CONFLICT,
        AttachError::Invalid { .. } | AttachError::TooMany => code::INVALID_PARAMS,
    }
}

fn project_code(error: &ProjectError) -> ErrorCode {
    match error {
        ProjectError::Io { .. } => code::INTERNAL,
        ProjectError::OutsideProjectDirs(_) | ProjectError::RootOverlaps(_) => code::UNAUTHORIZED,
        _ => code::INVALID_PARAMS,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_failure_tells_the_client_no_server_path() {
        let error = AppError::Project(ProjectError::io(
            "/srv/rummy-home/skills/deploy.md",
            std::io::Error::other("disk on fire"),
        ));
        let rpc = error.to_rpc();
        assert_eq!(rpc.code, code::INTERNAL);
        assert!(!rpc.message.contains("/srv"), "{}", rpc.message);
        assert!(error
            .to_string()
            .contains("/srv/rummy-home/skills/deploy.md"));
    }

    #[test]
    fn an_error_object_carries_data_only_when_it_has_some() {
        let plain = RpcError {
            code: code::CONTEXT_FULL,
            message: "full".into(),
            data: None,
        };
        assert_eq!(
            serde_json::to_string(&plain).unwrap(),
            r#"{"code":-32010,"message":"full"}"#
        );
        let detailed = RpcError {
            data: Some(serde_json::json!({"tokens": 12})),
            ..plain
        };
        let text = serde_json::to_string(&detailed).unwrap();
        assert_eq!(
            text,
            r#"{"code":-32010,"message":"full","data":{"tokens":12}}"#
        );
        assert_eq!(serde_json::from_str::<RpcError>(&text).unwrap(), detailed);
    }

    #[test]
    fn a_relayed_error_reaches_the_client_as_the_holder_answered_it() {
        let relayed = RpcError {
            code: code::RUN_NOT_FOUND,
            message: "Run 'x' not found.".into(),
            data: Some(serde_json::json!({"run": "x"})),
        };
        assert_eq!(AppError::Relayed(relayed.clone()).to_rpc(), relayed);
    }
}
