//! A session's config options (`session/set_config_option`): its mode, ask or act, and the
//! model its prompts run with, one of rummy's catalogue (`getModels`).

use agent_client_protocol::v1::schema::{
    SessionConfigOption, SessionConfigOptionCategory, SessionConfigOptionValue,
    SessionConfigSelectOption,
};
use serde::Deserialize;
use serde_json::json;

use crate::acp::error::AcpError;
use crate::acp::link::Link;
use crate::acp::mode::Mode;

/// The option that picks the mode.
const MODE: &str = "mode";
/// The option that picks the model.
const MODEL: &str = "model";

/// One model of the catalogue.
#[derive(Debug, Clone, Deserialize)]
struct Model {
    alias: String,
    /// The provider's model it names.
    #[serde(default)]
    actual: String,
}

/// rummy's model catalogue, as the session found it.
#[derive(Debug, Clone, Default)]
pub(super) struct Catalogue {
    models: Vec<Model>,
}

/// What a `session/set_config_option` chose.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Choice {
    Mode(Mode),
    Model(String),
}

impl Catalogue {
    /// The catalogue (`getModels`).
    pub(super) async fn fetch(link: &Link) -> Result<Catalogue, AcpError> {
        let answer = link.call("getModels", json!({})).await?;
        let models = serde_json::from_value(answer).map_err(|error| AcpError::Unexpected {
            method: "getModels".into(),
            detail: error.to_string(),
        })?;
        Ok(Catalogue { models })
    }

    /// Its first model: the one prompts run with when none was named.
    pub(super) fn first(&self) -> Result<String, AcpError> {
        self.models
            .first()
            .map(|model| model.alias.clone())
            .ok_or(AcpError::NoModel)
    }

    /// The options of a session in `mode` with `model`.
    pub(super) fn options(&self, mode: Mode, model: &str) -> Vec<SessionConfigOption> {
        let modes: Vec<SessionConfigSelectOption> = Mode::ALL
            .into_iter()
            .map(|mode| {
                SessionConfigSelectOption::new(mode.id(), mode.name())
                    .description(mode.description())
            })
            .collect();
        let models: Vec<SessionConfigSelectOption> = self
            .models
            .iter()
            .map(|known| {
                SessionConfigSelectOption::new(known.alias.clone(), known.alias.clone())
                    .description((!known.actual.is_empty()).then(|| known.actual.clone()))
            })
            .collect();
        vec![
            SessionConfigOption::select(MODE, "Mode", mode.id(), modes)
                .category(SessionConfigOptionCategory::Mode),
            SessionConfigOption::select(MODEL, "Model", model.to_string(), models)
                .category(SessionConfigOptionCategory::Model),
        ]
    }

    /// What setting option `id` to `value` chooses.
    pub(super) fn choice(
        &self,
        id: &str,
        value: &SessionConfigOptionValue,
    ) -> Result<Choice, AcpError> {
        let SessionConfigOptionValue::ValueId { value } = value else {
            return Err(AcpError::BadOption(format!("{id} takes one of its values")));
        };
        let value = value.0.as_ref();
        match id {
            MODE => Mode::parse(value).map(Choice::Mode),
            MODEL if self.models.iter().any(|model| model.alias == value) => {
                Ok(Choice::Model(value.to_string()))
            }
            MODEL => {
                let aliases: Vec<&str> = self.models.iter().map(|m| m.alias.as_str()).collect();
                Err(AcpError::BadOption(format!(
                    "no model {value}: the models are {}",
                    aliases.join(", ")
                )))
            }
            _ => Err(AcpError::BadOption(format!(
                "no option {id}: the options are {MODE} and {MODEL}"
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn catalogue() -> Catalogue {
        let models = ["fake", "second"].map(|alias| Model {
            alias: alias.into(),
            actual: format!("openai/{alias}"),
        });
        Catalogue {
            models: models.to_vec(),
        }
    }

    #[test]
    fn the_options_are_the_mode_and_the_catalogues_models() {
        let options = serde_json::to_value(catalogue().options(Mode::Ask, "second")).unwrap();
        assert_eq!(options[0]["id"], json!("mode"));
        assert_eq!(options[0]["category"], json!("mode"));
        assert_eq!(options[0]["currentValue"], json!("ask"));
        assert_eq!(options[0]["options"][1]["value"], json!("act"));
        assert_eq!(options[1]["id"], json!("model"));
        assert_eq!(options[1]["type"], json!("select"));
        assert_eq!(options[1]["category"], json!("model"));
        assert_eq!(options[1]["currentValue"], json!("second"));
        assert_eq!(
            options[1]["options"],
            json!([{"value": "fake", "name": "fake", "description": "openai/fake"},
                   {"value": "second", "name": "second", "description": "openai/second"}])
        );
        assert_eq!(catalogue().first().unwrap(), "fake");
        assert!(Catalogue::default().first().is_err());
    }

    #[test]
    fn a_choice_names_a_mode_or_a_model_of_the_catalogue() {
        let catalogue = catalogue();
        let value = SessionConfigOptionValue::value_id;
        assert_eq!(
            catalogue.choice("model", &value("second")).unwrap(),
            Choice::Model("second".into())
        );
        assert_eq!(
            catalogue.choice("mode", &value("ask")).unwrap(),
            Choice::Mode(Mode::Ask)
        );
        let error = catalogue.choice("model", &value("gpt")).unwrap_err();
        assert_eq!(
            error.to_string(),
            "no model gpt: the models are fake, second"
        );
        let error = catalogue.choice("speed", &value("fast")).unwrap_err();
        assert_eq!(
            error.to_string(),
            "no option speed: the options are mode and model"
        );
        let boolean = SessionConfigOptionValue::boolean(true);
        assert!(catalogue.choice("model", &boolean).is_err());
        assert!(catalogue.choice("mode", &value("plan")).is_err());
    }
}
