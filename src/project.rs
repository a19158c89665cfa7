//! tmp
pub mod confine;
mod error;
pub use confine::{ProjectPath, ProjectRoot};
pub use error::ProjectError;
