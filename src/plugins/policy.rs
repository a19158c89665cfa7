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
    /// The MCP servers the loop's project uses (`$RUMMY_HOME/mcp.toml`).
    pub mcp_servers: ConfiguredSet,
    /// The plugin processes that serve the loop's project (by their place among them).
    pub plugin_processes: ConfiguredSet,
    /// A client attached MCP servers to the loop's run (`run/mcp`).
    pub client_mcp: bool,
    /// The loop may hand sub-tasks to sub-agents (its run is less deep than
    /// `RUMMY_SUBAGENT_MAX_DEPTH`).
    pub subagents: bool,
    /// The optional tools (memory's, sub-agents, web search, MCP servers) are offered: the
    /// window has room for every offered tool's doc (`Plugins::fitted`).
    pub optional_tools: bool,
}

/// A set of MCP servers or plugin processes, by their place in the configuration (at most
/// 64).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ConfiguredSet(u64);

impl ConfiguredSet {
    /// No server.
    pub const NONE: ConfiguredSet = ConfiguredSet(0);

    /// This set and the `index`-th server (an index past 63 adds none).
    pub fn with(self, index: usize) -> ConfiguredSet {
        ConfiguredSet(self.0 | bit(index))
    }

    /// Whether the `index`-th server is in the set.
    pub fn contains(self, index: usize) -> bool {
        self.0 & bit(index) != 0
    }
}

/// The bit of the `index`-th server (none past 63).
fn bit(index: usize) -> u64 {
    u32::try_from(index)
        .ok()
        .and_then(|shift| 1u64.checked_shl(shift))
        .unwrap_or(0)
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
            mcp_servers: ConfiguredSet::NONE,
            plugin_processes: ConfiguredSet::NONE,
            client_mcp: false,
            subagents: true,
            optional_tools: true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::ConfiguredSet;

    #[test]
    fn a_server_set_holds_the_servers_added_and_no_others() {
        let set = ConfiguredSet::NONE.with(0).with(63).with(64);
        let held: Vec<usize> = (0..70).filter(|index| set.contains(*index)).collect();
        assert_eq!(held, [0, 63]);
    }
}
