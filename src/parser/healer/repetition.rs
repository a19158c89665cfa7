//! Cycle detection over the tool calls of successive turns (AGENT.md §3.5): the same calls
//! repeating with a period of 1 to 4 turns, three times over, stop the loop.

use serde_json::{Map, Value};

use super::{HaltReason, HealerLimits, Verdict};

/// One recorded tool call, as the repetition check needs it.
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct ToolCall {
    /// The tool's scheme (`get`, `sh` …).
    pub scheme: String,
    /// The call's target path, when it has one.
    pub path: Option<String>,
    pub attributes: Map<String, Value>,
}

impl ToolCall {
    /// `scheme:target[k=v,…]`: the target is the first of path, command, query, question;
    /// the extras are the other non-null attributes except body and path, sorted by key.
    pub(crate) fn fingerprint(&self) -> String {
        let target = ["path", "command", "query", "question"]
            .iter()
            .filter_map(|key| self.attributes.get(*key).map(render))
            .find(|value| !value.is_empty())
            .unwrap_or_default();
        let mut extras: Vec<String> = self
            .attributes
            .iter()
            .filter(|(key, value)| *key != "body" && *key != "path" && !value.is_null())
            .map(|(key, value)| format!("{key}={}", render(value)))
            .collect();
        extras.sort();
        if extras.is_empty() {
            format!("{}:{target}", self.scheme)
        } else {
            format!("{}:{target}[{}]", self.scheme, extras.join(","))
        }
    }
}

fn render(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// Tracks the fingerprints of turns with tool calls across one loop.
#[derive(Debug, Clone, Default)]
pub(crate) struct RepetitionTracker {
    limits: HealerLimits,
    history: Vec<String>,
}

impl RepetitionTracker {
    /// A tracker with these limits.
    pub(crate) fn new(limits: HealerLimits) -> Self {
        Self {
            limits,
            history: Vec::new(),
        }
    }

    /// Records one turn's calls and decides whether the loop goes on. A turn without calls
    /// is not recorded, so it neither extends nor breaks a cycle.
    pub(crate) fn assess(
        &mut self,
        action_calls: &[ToolCall],
        write_calls: &[ToolCall],
    ) -> Verdict {
        let mut fingerprints: Vec<String> = action_calls
            .iter()
            .chain(write_calls)
            .map(ToolCall::fingerprint)
            .collect();
        if fingerprints.is_empty() {
            return Verdict::Continue;
        }
        fingerprints.sort();
        self.history.push(fingerprints.join("|"));

        let repetitions = self.limits.min_cycles.max(2);
        for period in 1..=self.limits.max_cycle_period {
            if self.repeats(period, repetitions) {
                return Verdict::Halt(HaltReason::Cycle {
                    period,
                    repetitions,
                });
            }
        }
        Verdict::Continue
    }

    fn repeats(&self, period: usize, repetitions: usize) -> bool {
        let window = period * repetitions;
        let Some(start) = self.history.len().checked_sub(window) else {
            return false;
        };
        let Some(recent) = self.history.get(start..) else {
            return false;
        };
        let Some(cycle) = recent.get(..period) else {
            return false;
        };
        recent.chunks(period).all(|chunk| chunk == cycle)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn call(scheme: &str, attributes: Value) -> ToolCall {
        let Value::Object(attributes) = attributes else {
            panic!("attributes must be an object");
        };
        ToolCall {
            scheme: scheme.into(),
            path: None,
            attributes,
        }
    }

    #[test]
    fn fingerprint_names_target_and_sorted_extras() {
        let sh = call(
            "sh",
            json!({"command": "ls", "body": "x", "cwd": "/", "z": null}),
        );
        assert_eq!(sh.fingerprint(), "sh:ls[command=ls,cwd=/]");
        assert_eq!(call("get", json!({"path": "a"})).fingerprint(), "get:a");
    }

    #[test]
    fn call_order_within_a_turn_does_not_matter() {
        let mut tracker = RepetitionTracker::new(HealerLimits::default());
        let a = call("get", json!({"path": "a"}));
        let b = call("get", json!({"path": "b"}));
        assert_eq!(
            tracker.assess(&[a.clone(), b.clone()], &[]),
            Verdict::Continue
        );
        assert_eq!(
            tracker.assess(&[b.clone(), a.clone()], &[]),
            Verdict::Continue
        );
        assert!(matches!(
            tracker.assess(&[a], &[b]),
            Verdict::Halt(HaltReason::Cycle { period: 1, .. })
        ));
    }

    #[test]
    fn a_broken_sequence_does_not_halt() {
        let mut tracker = RepetitionTracker::new(HealerLimits::default());
        for path in ["a", "a", "b", "a", "a"] {
            let turn = [call("get", json!({ "path": path }))];
            assert_eq!(tracker.assess(&turn, &[]), Verdict::Continue);
        }
    }
}
