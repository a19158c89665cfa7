//! A session's mode (`session/set_mode`, the `mode` config option): `ask` or `act`, the
//! rummy method its prompts call.

use agent_client_protocol::v1::schema::{SessionMode, SessionModeState};

use crate::acp::error::AcpError;

/// A session's mode: which rummy method its prompts call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Mode {
    /// `ask`: the model may read, not change files or run commands.
    Ask,
    /// `act`: the model may propose edits and commands (the default).
    Act,
}

impl Mode {
    pub(super) const ALL: [Mode; 2] = [Mode::Ask, Mode::Act];

    pub(super) fn id(self) -> &'static str {
        match self {
            Mode::Ask => "ask",
            Mode::Act => "act",
        }
    }

    pub(super) fn name(self) -> &'static str {
        match self {
            Mode::Ask => "Ask",
            Mode::Act => "Act",
        }
    }

    pub(super) fn description(self) -> &'static str {
        match self {
            Mode::Ask => "Answers questions; changes no file and runs no command",
            Mode::Act => "Proposes edits and commands for you to allow",
        }
    }

    /// The mode named `id`.
    pub(super) fn parse(id: &str) -> Result<Mode, AcpError> {
        Mode::ALL
            .into_iter()
            .find(|mode| mode.id() == id)
            .ok_or_else(|| AcpError::UnknownMode(id.to_string()))
    }

    /// The modes offered, `current` selected.
    pub(super) fn state(current: Mode) -> SessionModeState {
        SessionModeState::new(
            current.id(),
            Mode::ALL
                .into_iter()
                .map(|mode| {
                    SessionMode::new(mode.id(), mode.name()).description(mode.description())
                })
                .collect(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn modes_are_ask_and_act() {
        assert_eq!(Mode::parse("ask").unwrap(), Mode::Ask);
        assert_eq!(Mode::parse("act").unwrap(), Mode::Act);
        assert!(Mode::parse("plan").is_err());
        let state = serde_json::to_value(Mode::state(Mode::Act)).unwrap();
        assert_eq!(state["currentModeId"], json!("act"));
        assert_eq!(state["availableModes"][0]["id"], json!("ask"));
    }
}
