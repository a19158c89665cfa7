//! Which tools a loop may use: its mode and flags.

use crate::db::enums::LoopMode;

/// The mode and flags of the loop a command comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ToolPolicy {
    /// ask (no file changes, no sh), act, or panic (context recovery).
    pub mode: LoopMode,
    /// No `ask_user`.
    pub no_interaction: bool,
    /// No `search`.
    pub no_web: bool,
    /// No `ask_user`, `env` or `sh`.
    pub no_proposals: bool,
    /// A search backend is configured (otherwise `search` is not offered).
    pub search_available: bool,
}

impl ToolPolicy {
    /// An act loop with no flags: everything but search without a backend.
    pub fn act() -> ToolPolicy {
        ToolPolicy {
            mode: LoopMode::Act,
            no_interaction: false,
            no_web: false,
            no_proposals: false,
            search_available: false,
        }
    }
}
