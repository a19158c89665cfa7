//! The tolerant parser that turns model output into commands, and the response healer.
