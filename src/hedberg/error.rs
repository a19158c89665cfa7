//! The error type of hedberg's public functions.

/// Why an edit or a pattern could not be applied. Edit errors (`SearchNotFound`,
/// `AmbiguousSearch`) are reported to the model with status 409; their texts are
/// model-facing and name what to do next.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HedbergError {
    /// The SEARCH text matched nowhere, not even after whitespace-tolerant matching.
    #[error("SEARCH blocks are matched literally, not as a pattern. Could not find the SEARCH block in the file.")]
    SearchNotFound,
    /// The SEARCH text matched several places; nothing was edited.
    #[error("SEARCH block matched {locations} locations, so nothing was edited. Add surrounding lines to the SEARCH block until it matches exactly one location.")]
    AmbiguousSearch {
        /// How many places matched.
        locations: usize,
    },
    /// The work ran out of its budget (steps, time, output size) or its caller gave up.
    #[error("Stopped: {0}. Use a narrower path, a simpler pattern or a smaller edit.")]
    WorkLimit(#[from] super::WorkLimit),
    /// A pattern (regex body, sed flags) could not be compiled.
    #[error("invalid pattern {pattern:?}: {reason}")]
    InvalidPattern {
        /// The pattern as given.
        pattern: String,
        /// What is wrong with it.
        reason: String,
    },
}
