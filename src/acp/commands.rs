//! Skills and personas as slash commands: `/<skill>` loads a skill into the session's run
//! (`skill/add`), `/persona:<name>` sets the run's persona (`persona/set`); the text after
//! the command is the prompt. The editor is told them with `available_commands_update`.

use agent_client_protocol::v1::schema::{
    AvailableCommand, AvailableCommandInput, AvailableCommandsUpdate, SessionUpdate,
    UnstructuredCommandInput,
};
use serde::Deserialize;
use serde_json::{json, Value};

use crate::acp::error::AcpError;
use crate::acp::link::Link;

/// What names a persona's command: `/persona:<name>`.
const PERSONA: &str = "persona:";

/// A command the person typed, and what it names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Slash {
    /// `skill/add` of this skill.
    Skill(String),
    /// `persona/set` of this persona.
    Persona(String),
}

impl Slash {
    /// Applies it to `run`.
    pub(super) async fn apply(&self, link: &Link, run: &str) -> Result<(), AcpError> {
        let (method, name) = match self {
            Slash::Skill(name) => ("skill/add", name),
            Slash::Persona(name) => ("persona/set", name),
        };
        link.call(method, json!({"run": run, "name": name}))
            .await
            .map(drop)
    }
}

/// One skill of `listSkills`.
#[derive(Debug, Clone, Deserialize)]
struct SkillFile {
    name: String,
    #[serde(default)]
    title: String,
    #[serde(default)]
    description: String,
}

/// One persona of `listPersonas`.
#[derive(Debug, Clone, Deserialize)]
struct PersonaFile {
    name: String,
}

/// The skills and personas of the server's home, as a session offers them.
#[derive(Debug, Clone, Default)]
pub(super) struct Commands {
    skills: Vec<SkillFile>,
    personas: Vec<PersonaFile>,
}

impl Commands {
    /// The server's skills (`listSkills`) and personas (`listPersonas`).
    pub(super) async fn fetch(link: &Link) -> Result<Commands, AcpError> {
        let skills = link.call("listSkills", json!({})).await?;
        let personas = link.call("listPersonas", json!({})).await?;
        Ok(Commands {
            skills: rows(skills, "listSkills")?,
            personas: rows(personas, "listPersonas")?,
        })
    }

    /// The `available_commands_update` that offers them.
    pub(super) fn update(&self) -> SessionUpdate {
        let input =
            |hint: &str| AvailableCommandInput::Unstructured(UnstructuredCommandInput::new(hint));
        let skills = self.skills.iter().map(|skill| {
            let about = [&skill.description, &skill.title, &skill.name]
                .into_iter()
                .find(|text| !text.is_empty())
                .map_or("", String::as_str);
            AvailableCommand::new(skill.name.clone(), format!("Skill: {about}"))
                .input(input("what to do with it (optional)"))
        });
        let personas = self.personas.iter().map(|persona| {
            AvailableCommand::new(
                format!("{PERSONA}{}", persona.name),
                format!("Persona: the model answers as {} from now on", persona.name),
            )
            .input(input("what to ask (optional)"))
        });
        SessionUpdate::AvailableCommandsUpdate(AvailableCommandsUpdate::new(
            skills.chain(personas).collect(),
        ))
    }

    /// The command `text` starts with, if it names one of these, and the text after it.
    pub(super) fn parse<'a>(&self, text: &'a str) -> Option<(Slash, &'a str)> {
        let typed = text.strip_prefix('/')?;
        let (name, rest) = typed.split_once(char::is_whitespace).unwrap_or((typed, ""));
        let slash = match name.strip_prefix(PERSONA) {
            Some(persona) => self
                .personas
                .iter()
                .any(|known| known.name == persona)
                .then(|| Slash::Persona(persona.to_string())),
            None => self
                .skills
                .iter()
                .any(|known| known.name == name)
                .then(|| Slash::Skill(name.to_string())),
        }?;
        Some((slash, rest.trim_start()))
    }
}

fn rows<T: for<'de> Deserialize<'de>>(answer: Value, method: &str) -> Result<Vec<T>, AcpError> {
    serde_json::from_value(answer).map_err(|error| AcpError::Unexpected {
        method: method.to_string(),
        detail: error.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn commands() -> Commands {
        Commands {
            skills: vec![
                SkillFile {
                    name: "sql_style".into(),
                    title: "SQL style".into(),
                    description: "How this team writes SQL.".into(),
                },
                SkillFile {
                    name: "bare".into(),
                    title: String::new(),
                    description: String::new(),
                },
            ],
            personas: vec![PersonaFile {
                name: "pirate".into(),
            }],
        }
    }

    #[test]
    fn skills_and_personas_are_offered_with_their_descriptions() {
        let update = serde_json::to_value(commands().update()).unwrap();
        assert_eq!(update["sessionUpdate"], json!("available_commands_update"));
        let offered = &update["availableCommands"];
        assert_eq!(offered[0]["name"], json!("sql_style"));
        assert_eq!(
            offered[0]["description"],
            json!("Skill: How this team writes SQL.")
        );
        assert_eq!(
            offered[0]["input"],
            json!({"hint": "what to do with it (optional)"})
        );
        assert_eq!(offered[1]["description"], json!("Skill: bare"));
        assert_eq!(offered[2]["name"], json!("persona:pirate"));
    }

    #[test]
    fn a_prompt_starting_with_a_known_command_applies_it() {
        let commands = commands();
        assert_eq!(
            commands.parse("/sql_style  write the query\nnow"),
            Some((Slash::Skill("sql_style".into()), "write the query\nnow"))
        );
        assert_eq!(
            commands.parse("/persona:pirate"),
            Some((Slash::Persona("pirate".into()), ""))
        );
        assert_eq!(commands.parse("/usr/bin is a path"), None);
        assert_eq!(commands.parse("/persona:ghost hi"), None);
        assert_eq!(commands.parse("/pirate hi"), None, "a persona is persona:");
        assert_eq!(commands.parse("use /sql_style"), None);
    }
}
