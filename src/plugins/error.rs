//! The error of dispatching and resolving tool commands.

use crate::db::{DbError, UnitError};

/// What went wrong while dispatching or resolving, apart from failures the model is told
/// about (those are entries with a 4xx status, not errors).
#[derive(Debug, thiserror::Error)]
pub enum ToolError {
    /// The store failed; the whole dispatch is rolled back.
    #[error(transparent)]
    Db(#[from] DbError),
    /// A client named a tool that is not registered.
    #[error("Unknown tool: {0}")]
    UnknownTool(String),
    /// A client call is missing something or names a path outside the project.
    #[error("{0}")]
    InvalidParams(String),
    /// The path is not a pending proposal of the run.
    #[error("No pending proposal at {0}")]
    NotPending(String),
    /// The server could not apply an accepted file change.
    #[error("{0}")]
    Disk(String),
    /// The command's pattern or edit work ran out of its budget; dispatch records it as a
    /// 422 at the command's result path.
    #[error("{}", crate::hedberg::HedbergError::WorkLimit(*.0))]
    WorkLimit(crate::hedberg::WorkLimit),
    /// A resolution action other than accept, reject or error.
    #[error("Invalid resolution action: {0}. Use 'accept' or 'reject'.")]
    InvalidResolution(String),
    /// An accepted change would write a file under a `readonly` constraint; the message is
    /// the one the model sees, and nothing changed.
    #[error("{0}")]
    Readonly(String),
    /// The project's stored file constraints could not be compiled.
    #[error("file constraints: {0}")]
    Constraints(#[from] crate::project::ProjectError),
}

/// A tool's own error is a refusal: the unit of work keeps the result entries it wrote.
impl UnitError for ToolError {
    fn refusal(self) -> Result<Self, DbError> {
        match self {
            ToolError::Db(error) => Err(error),
            refusal => Ok(refusal),
        }
    }
}

impl From<diesel::result::Error> for ToolError {
    fn from(error: diesel::result::Error) -> Self {
        ToolError::Db(DbError::from(error))
    }
}
