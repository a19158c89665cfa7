//! `rummy acp`: an Agent Client Protocol agent on stdin/stdout, for editors (Zed,
//! JetBrains, Neovim) that start it as a subprocess. It is a client of rummy's own
//! JSON-RPC over WebSocket, so a local and a remote server are mapped the same way: in the
//! local mode it starts the server in this process first ([`local`]); in the remote mode it
//! connects to a running team server with a person's token.
//!
//! stdout carries ACP frames only: logs go to stderr. The protocol is ACP v1, through the
//! crate `agent-client-protocol`; docs/src/editors.md is the user's side.
//!
//! [`local`] makes the in-process server's settings; [`link`] is the WebSocket client;
//! `agent` holds the ACP handlers, `session` one session (`session/resume` catches up through
//! `run/replay`), `idle` what it shows between prompts (a proposal raised on the idle run,
//! asked about at the next prompt), `turn` its prompt turn, `outcome` the loop outcomes a turn reads and the
//! stop reason each ends it with; `stream` holds a session's notifications and turns each
//! `run/state` into session updates: `words` the model's words as they stream
//! (`run/delta`), `updates` its log, `plan`
//! its open questions into the plan, `usage` its telemetry into `usage_update`,
//! `permission` a proposal into a permission request; `prompt` reads a prompt's content
//! blocks; `mode`, `options` and `commands` are a session's mode, config options and slash
//! commands; `mcp` attaches the editor's MCP servers; [`AcpError`] is what goes wrong.

mod agent;
mod commands;
mod error;
mod idle;
mod link;
pub mod local;
mod mcp;
mod mode;
mod options;
mod outcome;
mod permission;
mod plan;
mod prompt;
mod session;
mod stream;
mod turn;
mod updates;
mod usage;
mod words;

use std::path::{Path, PathBuf};
use std::sync::Arc;

pub use error::AcpError;

use crate::config::{Secret, Settings};
use link::{Dialer, Endpoint};

/// Which server the agent works with.
pub enum Target {
    /// rummy in this process, with the settings [`local::environment`] made.
    Local(Box<Settings>),
    /// A running server at `url` (`ws://…` or `wss://…`), with a person's token if it is
    /// known yet, else the one `authenticate` reads from `token_file`.
    Remote {
        url: String,
        token: Option<Secret>,
        token_file: PathBuf,
    },
}

/// The token on the first line of `file`; `None` when the file does not exist or its first
/// line is empty.
pub fn read_token_file(file: &Path) -> Result<Option<Secret>, AcpError> {
    match std::fs::read_to_string(file) {
        Ok(text) => Ok(Some(text.lines().next().unwrap_or("").trim())
            .filter(|token| !token.is_empty())
            .map(|token| Secret::new(token.to_string()))),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(error) => Err(AcpError::TokenFile {
            file: file.display().to_string(),
            reason: error.to_string(),
        }),
    }
}

/// Serves ACP until the editor closes stdin, then stops the local server if there is one.
/// Runs on an actix system (the WebSocket client and the local server need one).
pub async fn serve(target: Target, model: Option<String>) -> Result<(), AcpError> {
    let (endpoint, server) = match target {
        Target::Local(settings) => {
            let token = settings.server.auth_token.clone();
            let server = crate::app::start(*settings)
                .await
                .map_err(|error| AcpError::Start(format!("{error:#}")))?;
            let endpoint = Endpoint {
                url: format!("ws://{}/", server.addr),
                token,
                token_file: None,
            };
            (endpoint, Some(server))
        }
        Target::Remote {
            url,
            token,
            token_file,
        } => {
            let endpoint = Endpoint {
                url,
                token,
                token_file: Some(token_file),
            };
            (endpoint, None)
        }
    };
    let bridge = agent::Bridge::new(endpoint, Dialer::start(), model);
    let served = agent::serve(Arc::new(bridge)).await;
    if let Some(server) = server {
        server.stop().await;
    }
    served
}
