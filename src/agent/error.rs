//! Why a loop could not go on.

use crate::db::{DbError, UnitError};
use crate::plugins::tool::ToolError;
use crate::project::ProjectError;

/// Why a loop could not go on (as opposed to ending normally).
#[derive(Debug, thiserror::Error)]
pub(crate) enum LoopError {
    /// The model alias is not in the catalogue.
    #[error("Unknown model alias '{0}'. Define RUMMY_MODEL_{0} in your environment.")]
    UnknownModel(String),
    /// The LLM failed after its retries.
    #[error("{0}")]
    Llm(#[from] crate::llm::LlmError),
    #[error("{0}")]
    Db(#[from] DbError),
    /// Dispatching the model's commands failed outside the store.
    #[error("{0}")]
    Tool(ToolError),
    /// A project's files could not be scanned.
    #[error("{0}")]
    Project(#[from] ProjectError),
    /// An actor the loop needs is gone: the server is stopping.
    #[error("{0} unavailable: the server is stopping")]
    Stopping(&'static str),
}

impl From<ToolError> for LoopError {
    /// The store's failure is the loop's [`LoopError::Db`]; any other is a tool's.
    fn from(error: ToolError) -> LoopError {
        match error.refusal() {
            Ok(refused) => LoopError::Tool(refused),
            Err(error) => LoopError::Db(error),
        }
    }
}
