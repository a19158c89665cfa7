//! What a webhook is sent: its events, by their wire names, and its payload's format.

use serde::{Deserialize, Serialize};

/// An event a webhook may be sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub(crate) enum Event {
    /// A loop ended waiting on proposals (a run waits for someone to approve), or a
    /// resolution left others pending.
    #[serde(rename = "approval.pending")]
    ApprovalPending,
    /// A run ended 200.
    #[serde(rename = "run.finished")]
    RunFinished,
    /// A run ended 500 (a failure) or 413 (what it needed did not fit).
    #[serde(rename = "run.failed")]
    RunFailed,
    /// Spending passed the warning share of a cap, once per cap and period.
    #[serde(rename = "cap.warning")]
    CapWarning,
    /// A loop was stopped by a reached spend cap.
    #[serde(rename = "cap.reached")]
    CapReached,
}

impl Event {
    pub(crate) const ALL: [Event; 5] = [
        Event::ApprovalPending,
        Event::RunFinished,
        Event::RunFailed,
        Event::CapWarning,
        Event::CapReached,
    ];

    /// Its wire name, as the store keeps it too.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Event::ApprovalPending => "approval.pending",
            Event::RunFinished => "run.finished",
            Event::RunFailed => "run.failed",
            Event::CapWarning => "cap.warning",
            Event::CapReached => "cap.reached",
        }
    }

    /// The event named `name`.
    pub(crate) fn named(name: &str) -> Option<Event> {
        Event::ALL.into_iter().find(|event| event.name() == name)
    }

    /// `names` as the store keeps them: sorted, each once, each between commas; or the
    /// first name that is no event.
    pub(crate) fn stored(names: &[String]) -> Result<String, String> {
        let mut events = Vec::new();
        for name in names {
            let event = Event::named(name).ok_or_else(|| name.clone())?;
            if !events.contains(&event) {
                events.push(event);
            }
        }
        events.sort();
        let names: Vec<&str> = events.into_iter().map(Event::name).collect();
        Ok(format!(",{},", names.join(",")))
    }

    /// The events a stored list names, in its order.
    pub(crate) fn listed(stored: &str) -> Vec<&str> {
        stored.split(',').filter(|name| !name.is_empty()).collect()
    }
}

/// How a delivery's body is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Format {
    /// rummy's JSON object (`payload::Payload`).
    #[default]
    Json,
    /// `{"text": …}`: one readable line (and the run's console link), as Slack's incoming
    /// webhooks and the chat tools that copy them take.
    Slack,
}

impl Format {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Format::Json => "json",
            Format::Slack => "slack",
        }
    }

    /// The format a stored name says (`json` for anything else).
    pub(crate) fn stored(name: &str) -> Format {
        match name {
            "slack" => Format::Slack,
            _ => Format::Json,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_are_stored_sorted_once_between_commas_and_an_unknown_one_is_named() {
        let names = |names: &[&str]| {
            names
                .iter()
                .map(|name| (*name).to_owned())
                .collect::<Vec<_>>()
        };
        assert_eq!(
            Event::stored(&names(&["cap.warning", "run.finished", "cap.warning"])),
            Ok(",run.finished,cap.warning,".to_owned())
        );
        assert_eq!(
            Event::stored(&names(&["run.finished", "run.exploded"])),
            Err("run.exploded".to_owned())
        );
        assert_eq!(
            Event::listed(",run.finished,cap.warning,"),
            ["run.finished", "cap.warning"]
        );
        for event in Event::ALL {
            assert_eq!(Event::named(event.name()), Some(event));
            assert_eq!(
                serde_json::to_value(event).unwrap(),
                serde_json::json!(event.name())
            );
        }
    }
}
