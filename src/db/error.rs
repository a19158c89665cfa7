//! `DbError`, the one error type of the database layer.
//!
//! Query functions and DB actor messages return it; the RPC layer maps each variant to a
//! JSON-RPC code through its error table. Diesel errors are classified here once, so callers
//! never look at SQLite error kinds or messages.

use diesel::result::{ConnectionError, DatabaseErrorKind, Error as DieselError};

/// What went wrong in the database layer.
#[derive(Debug, thiserror::Error)]
pub enum DbError {
    /// The row the operation needs does not exist.
    #[error("not found: {0}")]
    NotFound(String),
    /// A unique constraint was violated (a name that is already taken).
    #[error("conflict: {0}")]
    Conflict(String),
    /// The input breaks a constraint, a check or the run state machine.
    #[error("invalid: {0}")]
    Invalid(String),
    /// Pattern or edit work ran out of its budget, or its caller gave up.
    #[error("The request was stopped: {0}. Use a narrower pattern or a simpler expression.")]
    WorkLimit(crate::hedberg::WorkLimit),
    /// A JSON column holds text that is not the JSON it should; names the column and,
    /// when it was read beside it, the row.
    #[error("database error: {0}")]
    Corrupt(#[from] super::json::CorruptJson),
    /// Anything else: I/O, a broken connection, a migration failure, a bug.
    #[error("database error: {0}")]
    Internal(String),
}

/// The error of a unit of work that may refuse as well as fail. The store's failure rolls
/// the unit back; after a refusal what the unit wrote is kept (a refused tool call still
/// records its result). See [`DbHandle::call_refusable`](super::DbHandle::call_refusable).
pub trait UnitError: From<DbError> {
    /// The refusal, or the store's failure as `Err` (so that `?` passes it on).
    fn refusal(self) -> Result<Self, DbError>;
}

impl From<DieselError> for DbError {
    fn from(error: DieselError) -> Self {
        match error {
            DieselError::NotFound => DbError::NotFound("no such row".to_owned()),
            DieselError::DatabaseError(kind, info) => {
                let message = info.message().to_owned();
                match kind {
                    DatabaseErrorKind::UniqueViolation => DbError::Conflict(message),
                    DatabaseErrorKind::CheckViolation
                    | DatabaseErrorKind::NotNullViolation
                    | DatabaseErrorKind::ForeignKeyViolation => DbError::Invalid(message),
                    _ if message.contains("state transition") => DbError::Invalid(message),
                    _ => DbError::Internal(message),
                }
            }
            DieselError::DeserializationError(error) => match corrupt_json(error) {
                Ok(corrupt) => DbError::Corrupt(corrupt),
                Err(error) => DbError::Internal(error.to_string()),
            },
            other => DbError::Internal(other.to_string()),
        }
    }
}

impl From<ConnectionError> for DbError {
    fn from(error: ConnectionError) -> Self {
        DbError::Internal(error.to_string())
    }
}

impl From<serde_json::Error> for DbError {
    fn from(error: serde_json::Error) -> Self {
        DbError::Internal(format!("stored JSON is malformed: {error}"))
    }
}

/// The [`CorruptJson`](super::json::CorruptJson) a read failed on, as a JSON column's
/// `Queryable` gives it or wrapped in diesel's field error as its `FromSql` does.
fn corrupt_json(
    error: Box<dyn std::error::Error + Send + Sync>,
) -> Result<super::json::CorruptJson, Box<dyn std::error::Error + Send + Sync>> {
    let error = match error.downcast::<diesel::result::DeserializeFieldError>() {
        Ok(field) => field.error,
        Err(error) => error,
    };
    error.downcast().map(|corrupt| *corrupt)
}
