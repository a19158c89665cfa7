//! `usage_update`: the context a run's latest turn filled, of its window, and what the run
//! has cost, from `run/state`'s telemetry (the server's own [`Telemetry`]).

use agent_client_protocol::v1::schema::{Cost, SessionUpdate, UsageUpdate};

use crate::hub::notifications::Telemetry;

/// The `usage_update` of a run's `telemetry`: the latest turn's context tokens of the
/// window, and the run's cost in US dollars.
pub(super) fn usage_update(telemetry: &Telemetry) -> SessionUpdate {
    let used = u64::try_from(telemetry.context_tokens).unwrap_or(0);
    let size = u64::try_from(telemetry.context_size).unwrap_or(0);
    let cost = Cost::new(telemetry.usage.cost.cost, "USD");
    SessionUpdate::UsageUpdate(UsageUpdate::new(used, size).cost(cost))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::hub::notifications::{Cost as Spent, UsageTotals};
    use crate::usage::{Micros, Tokens};

    #[test]
    fn a_runs_telemetry_is_the_context_used_of_its_window_and_its_cost() {
        let telemetry = Telemetry {
            model_alias: "fake".into(),
            model: "fake".into(),
            temperature: None,
            context_size: 32768,
            context_tokens: 1505,
            usage: UsageTotals {
                tokens: Tokens::default(),
                cost: Spent::of(Micros(250_000)),
                calls: Vec::new(),
            },
            context_distribution: Vec::new(),
        };
        let update = serde_json::to_value(usage_update(&telemetry)).unwrap();
        assert_eq!(
            update,
            json!({"sessionUpdate": "usage_update", "used": 1505, "size": 32768,
                   "cost": {"amount": 0.25, "currency": "USD"}})
        );
    }
}
