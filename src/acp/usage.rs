//! `usage_update`: the context a run's latest turn filled, of its window, and what the run
//! has cost, from `run/state`'s telemetry.

use agent_client_protocol::v1::schema::{Cost, SessionUpdate, UsageUpdate};
use serde::Deserialize;

/// The part of `run/state.telemetry` a `usage_update` says.
#[derive(Debug, Clone, Deserialize)]
pub(super) struct Telemetry {
    /// Tokens of the latest turn's context.
    #[serde(default)]
    context_tokens: u64,
    /// The context window in tokens.
    #[serde(default)]
    context_size: u64,
    /// US dollars the run's calls cost so far.
    #[serde(default)]
    cost: f64,
}

impl Telemetry {
    /// The `usage_update` of this telemetry.
    pub(super) fn update(&self) -> SessionUpdate {
        SessionUpdate::UsageUpdate(
            UsageUpdate::new(self.context_tokens, self.context_size)
                .cost(Cost::new(self.cost, "USD")),
        )
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_runs_telemetry_is_the_context_used_of_its_window_and_its_cost() {
        let telemetry: Telemetry = serde_json::from_value(json!({
            "modelAlias": "fake", "context_size": 32768, "context_tokens": 1505,
            "cost": 0.25, "cost_micros": 250000, "calls": []
        }))
        .unwrap();
        let update = serde_json::to_value(telemetry.update()).unwrap();
        assert_eq!(
            update,
            json!({"sessionUpdate": "usage_update", "used": 1505, "size": 32768,
                   "cost": {"amount": 0.25, "currency": "USD"}})
        );
    }
}
