//! tmp
pub mod confine;
pub mod constraint;
mod error;
pub use confine::{ProjectPath, ProjectRoot};
pub use constraint::{ConstraintPattern, ConstraintSet, FileConstraint, Visibility};
pub use error::ProjectError;
