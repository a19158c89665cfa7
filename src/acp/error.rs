//! What can go wrong between the editor, this agent and rummy, and the ACP error each
//! becomes.

use agent_client_protocol::Error as ProtocolError;

/// An error of the ACP agent.
#[derive(Debug, thiserror::Error)]
pub enum AcpError {
    /// rummy answered a call with a JSON-RPC error: its code and message go to the editor
    /// as they are.
    #[error("{message}")]
    Rpc {
        method: String,
        code: i32,
        message: String,
        /// The error's `data`, when rummy sent some (what happened to a proposal that is no
        /// longer pending: `agent::verbs::ProposalView`).
        data: Option<serde_json::Value>,
    },
    /// The WebSocket to rummy could not be opened.
    #[error("cannot reach rummy at {url}: {reason}")]
    Connect { url: String, reason: String },
    /// The server refused a connection without a token. `url` is shown without what
    /// could carry a secret (see `link::shown`).
    #[error(
        "the rummy server at {url} needs a token: put yours (from the server's admin) on the \
         first line of {file} and sign in (the editor's token-file method), or start the \
         agent with RUMMY_AUTH_TOKEN set to it (and no --token-file)"
    )]
    NoToken { url: String, file: String },
    /// The server refused the token it was given (never shown).
    #[error(
        "the rummy server at {url} refused the token this agent gave it: put a valid one \
         (from the server's admin, or a personal access token minted in the console: a \
         revoked or expired one is refused) on the first line of {file} and sign in again \
         (the editor's token-file method), or start the agent with RUMMY_AUTH_TOKEN set to \
         it (and no --token-file)"
    )]
    TokenRefused { url: String, file: String },
    /// `authenticate` could not read the token file.
    #[error("cannot read the token file {file}: {reason}")]
    TokenFile { file: String, reason: String },
    /// The editor named an authentication method this agent did not offer.
    #[error("no authentication method {0}: the one offered is token-file")]
    UnknownAuthMethod(String),
    /// The WebSocket to rummy closed while a call waited.
    #[error("the connection to rummy closed")]
    Disconnected,
    /// rummy answered with something this agent does not understand.
    #[error("rummy answered {method} unexpectedly: {detail}")]
    Unexpected { method: String, detail: String },
    /// The editor named a session this agent does not have.
    #[error("no session {0}")]
    UnknownSession(String),
    /// `session/load` named a session the project has no run of.
    #[error("no session {run} to load: the project at {project} has no run of that name")]
    NoRun { run: String, project: String },
    /// `session/list` was given a cursor it did not hand out.
    #[error("no session list cursor {0}")]
    BadCursor(String),
    /// `session/list` without the directory whose sessions to list.
    #[error("rummy lists the sessions of one project: give its directory (cwd)")]
    ListWithoutDirectory,
    /// `session/set_config_option` named an option or a value the session does not have.
    #[error("{0}")]
    BadOption(String),
    /// The editor named a mode other than ask and act.
    #[error("no mode {0}: the modes are ask and act")]
    UnknownMode(String),
    /// The editor sent a prompt block rummy does not take.
    #[error("rummy takes text, resource links and embedded text resources, not {0}")]
    UnsupportedContent(&'static str),
    /// The session's directory is no project root rummy can name.
    #[error("the session's directory {0} is not an absolute path with a name")]
    BadDirectory(String),
    /// The server has no model to run prompts with.
    #[error(
        "rummy has no model: configure one (RUMMY_MODEL_<alias>=<provider/model>) or pass --model"
    )]
    NoModel,
    /// A loop of the session's run failed.
    #[error("the run {run} failed: {reason}")]
    LoopFailed { run: String, reason: String },
    /// A request to the editor failed.
    #[error("the editor answered {method} with an error: {source}")]
    Editor {
        method: String,
        source: Box<ProtocolError>,
    },
    /// The ACP connection itself failed.
    #[error("the ACP connection failed: {0}")]
    Protocol(Box<ProtocolError>),
    /// The in-process server did not start.
    #[error("the local rummy server did not start: {0}")]
    Start(String),
}

impl AcpError {
    /// rummy's answer `answer` to `what` is not what this agent reads.
    pub(super) fn unexpected(what: &str, answer: &serde_json::Value) -> AcpError {
        AcpError::Unexpected {
            method: what.to_string(),
            detail: answer.to_string(),
        }
    }

    /// The ACP connection failed with `error`.
    pub fn protocol(error: ProtocolError) -> AcpError {
        AcpError::Protocol(Box::new(error))
    }
}

impl From<AcpError> for ProtocolError {
    fn from(error: AcpError) -> Self {
        let message = error.to_string();
        match error {
            AcpError::Rpc { code, .. } => ProtocolError::new(code, message),
            AcpError::NoRun { .. } => {
                let not_found: ProtocolError =
                    agent_client_protocol::v1::schema::Error::resource_not_found(None).into();
                not_found.data(message)
            }
            AcpError::UnknownSession(_)
            | AcpError::BadCursor(_)
            | AcpError::ListWithoutDirectory
            | AcpError::BadOption(_)
            | AcpError::UnknownMode(_)
            | AcpError::UnsupportedContent(_)
            | AcpError::BadDirectory(_)
            | AcpError::UnknownAuthMethod(_) => ProtocolError::invalid_params().data(message),
            AcpError::NoToken { .. }
            | AcpError::TokenRefused { .. }
            | AcpError::TokenFile { .. } => ProtocolError::auth_required().data(message),
            _ => ProtocolError::internal_error().data(message),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_rummy_error_keeps_its_code_and_message() {
        let error: ProtocolError = AcpError::Rpc {
            method: "init".into(),
            code: -32005,
            message: "not allowed in project x".into(),
            data: None,
        }
        .into();
        assert_eq!(
            serde_json::to_value(&error).unwrap(),
            json!({"code": -32005, "message": "not allowed in project x"})
        );
    }

    #[test]
    fn a_missing_or_refused_token_is_auth_required_with_what_to_do() {
        let (url, file) = (
            "wss://team/".to_string(),
            "/home/me/.rummy/token".to_string(),
        );
        let missing = AcpError::NoToken {
            url: url.clone(),
            file: file.clone(),
        };
        let refused = AcpError::TokenRefused { url, file };
        for (error, said) in [
            (missing, "needs a token"),
            (refused, "refused the token this agent gave it"),
        ] {
            let wire = serde_json::to_value(ProtocolError::from(error)).unwrap();
            assert_eq!(wire["code"], json!(-32000));
            let data = wire["data"].as_str().unwrap();
            assert!(
                data.starts_with("the rummy server at wss://team/ "),
                "{data}"
            );
            for part in [
                said,
                "first line of /home/me/.rummy/token and sign in",
                "token-file method",
                "RUMMY_AUTH_TOKEN set to it",
            ] {
                assert!(data.contains(part), "{part}: {data}");
            }
        }
    }

    #[test]
    fn bad_input_is_invalid_params_with_the_reason() {
        let error: ProtocolError = AcpError::UnknownMode("plan".into()).into();
        let wire = serde_json::to_value(&error).unwrap();
        assert_eq!(wire["code"], json!(-32602));
        assert_eq!(
            wire["data"],
            json!("no mode plan: the modes are ask and act")
        );
    }
}
