//! The process-wide registry of runs that are executing, so abort and inject work from any
//! connection of the project.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::db::ids::RunId;

/// Executing runs, by id.
#[derive(Clone, Default)]
pub struct RunRegistry {
    active: Arc<Mutex<HashMap<RunId, ()>>>,
}

impl RunRegistry {
    /// Aborts the current loop of `run`; false when it is not executing.
    pub fn abort(&self, run: RunId) -> bool {
        self.active
            .lock()
            .map(|active| active.contains_key(&run))
            .unwrap_or(false)
    }
}
