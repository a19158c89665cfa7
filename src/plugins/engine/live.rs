//! [`LiveTools`]: tools a plugin adds while the server runs (an admin's new MCP server),
//! beside those registered at the start. The registry reads the list each time it is asked
//! (which tags the parser knows, what a loop is offered, which tool owns a scheme), so a
//! tool added now is offered from the next turn; an empty list costs a lock and nothing
//! else.

use std::sync::{Arc, PoisonError, RwLock};

use crate::plugins::tool::Tool;

/// The tools added while the server runs; cheap to clone (one list shared).
///
/// A tool is kept for the rest of the process (`'static`: the registry lends its tools for
/// as long as it lives), so a plugin adds one only on a person's explicit change.
#[derive(Clone, Default)]
pub struct LiveTools(Arc<RwLock<Vec<&'static dyn Tool>>>);

impl LiveTools {
    /// Adds `tool`, replacing in place an added tool of the same name.
    pub fn add(&self, tool: &'static dyn Tool) {
        let mut tools = self.0.write().unwrap_or_else(PoisonError::into_inner);
        match tools.iter_mut().find(|added| added.name() == tool.name()) {
            Some(added) => *added = tool,
            None => tools.push(tool),
        }
    }

    /// The tools added so far, in the order they were.
    pub fn now(&self) -> Vec<&'static dyn Tool> {
        self.0
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The added tool named `name`.
    pub fn find(&self, name: &str) -> Option<&'static dyn Tool> {
        self.0
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .find(|tool| tool.name() == name)
            .copied()
    }
}
