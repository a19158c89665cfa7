//! Why a loop could not go on.

use crate::db::DbError;
use crate::error::AppError;

/// Why a loop could not go on (as opposed to ending normally).
#[derive(Debug, thiserror::Error)]
pub enum LoopError {
    /// The model alias is not in the catalogue.
    #[error("Unknown model alias '{0}'. Define RUMMY_MODEL_{0} in your environment.")]
    UnknownModel(String),
    /// The LLM failed after its retries.
    #[error("{0}")]
    Llm(#[from] crate::llm::LlmError),
    /// The store failed.
    #[error("{0}")]
    Db(#[from] DbError),
    /// Dispatching the model's commands failed outside the store.
    #[error("{0}")]
    Tool(crate::plugins::tool::ToolError),
    /// Anything else.
    #[error("{0}")]
    App(#[from] AppError),
}
