//! The flags a loop runs with, stored as JSON in `loops.config`.

use serde::{Deserialize, Serialize};

use crate::db::enums::LoopMode;
use crate::db::json::LoopOptions;
use crate::plugins::policy::ToolPolicy;

/// Flags of one loop; resumed loops inherit them from the loop they continue.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(crate) struct LoopConfig {
    /// Skip project file scanning.
    pub no_repo: bool,
    /// No `ask_user`.
    pub no_interaction: bool,
    /// No `search`.
    pub no_web: bool,
    /// No `ask_user`, `env` or `sh`.
    pub no_proposals: bool,
    /// Temperature the loop's request gave (see [`LoopConfig::effective_temperature`]).
    pub temperature: Option<f64>,
    /// This loop is the retry of a loop that overflowed; it will not panic again.
    pub panic_attempted: bool,
    /// Its own turn limit, below `RUMMY_MAX_TURNS` (a sub-agent's).
    pub max_turns: Option<u32>,
    /// How many `<delegate>`s below a client's run its run is (0: a client's run).
    pub delegation_depth: u32,
}

impl LoopConfig {
    /// The flags a loop's stored options hold; a flag of the wrong type (never written by
    /// rummy) leaves them all off.
    pub(crate) fn of(options: &LoopOptions) -> LoopConfig {
        LoopConfig::deserialize(serde::de::value::MapDeserializer::new(
            options.iter().map(|(key, value)| (key.as_str(), value)),
        ))
        .unwrap_or_default()
    }

    /// The JSON stored in `loops.config`.
    pub(crate) fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(self).unwrap_or_default()
    }

    /// The temperature this loop's requests are sent with: the one its request gave, else
    /// the run's stored one, else `RUMMY_TEMPERATURE`; `None` leaves it to the provider.
    pub(crate) fn effective_temperature(
        &self,
        run: Option<f64>,
        setting: Option<f64>,
    ) -> Option<f64> {
        self.temperature.or(run).or(setting)
    }

    /// The tool policy of a loop in `mode` with these flags.
    pub(crate) fn policy(&self, mode: LoopMode, search_available: bool) -> ToolPolicy {
        ToolPolicy {
            mode,
            no_interaction: self.no_interaction,
            no_web: self.no_web,
            no_proposals: self.no_proposals,
            search_available,
            mcp_servers: crate::plugins::policy::ConfiguredSet::NONE,
            plugin_processes: crate::plugins::policy::ConfiguredSet::NONE,
            client_mcp: false,
            subagents: false,
            optional_tools: true,
        }
    }
}
