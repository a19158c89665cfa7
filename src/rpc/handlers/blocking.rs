//! File work of handlers, kept off the executor threads.

use crate::error::AppError;

/// Runs blocking file work on the blocking pool, never on an executor thread.
pub(super) async fn blocking<T, F>(work: F) -> Result<T, AppError>
where
    F: FnOnce() -> Result<T, AppError> + Send + 'static,
    T: Send + 'static,
{
    actix_web::web::block(work)
        .await
        .map_err(|error| AppError::Internal(format!("blocking task failed: {error}")))?
}
