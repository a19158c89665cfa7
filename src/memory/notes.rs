//! Session notes: a run's working state as the sidecar model answers it (JSON the server
//! validates against the bounds below: an answer past any of them is refused whole), and
//! how the notes read in the packet, cut to a token budget (oldest work log lines first,
//! then the text's end).

use serde::{Deserialize, Serialize};

use crate::context::TokenMath;

/// Longest title, in characters.
const MAX_TITLE_CHARS: usize = 120;
/// Longest text of one field or list item, in characters.
const MAX_TEXT_CHARS: usize = 600;
/// Most items of one list (the work log's bound is its own).
const MAX_ITEMS: usize = 12;
/// Most lines of the work log.
const MAX_LOG_ITEMS: usize = 24;

/// The notes of one run.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(crate) struct SessionNotes {
    pub title: String,
    /// Where the work stands.
    pub current_state: String,
    /// What the user wants, in their terms.
    pub user_intent: String,
    /// Paths the work is about.
    pub active_files: Vec<String>,
    /// Choices made, each under a topic; consolidation promotes them to project memory.
    pub decisions: Vec<TopicFact>,
    /// Rules the work must keep (conventions, limits); promoted like decisions.
    pub constraints: Vec<TopicFact>,
    /// What went wrong and how it was set right.
    pub errors_and_corrections: Vec<String>,
    pub next_steps: Vec<String>,
    /// What was done, oldest first.
    pub work_log: Vec<String>,
}

/// A decision or a constraint: the topic names what it is about, so a newer one on the same
/// topic replaces it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub(crate) struct TopicFact {
    pub topic: String,
    pub fact: String,
    /// It holds only while the work at hand lasts: consolidated as a transient fact.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub transient: bool,
}

/// Why an answer is not notes.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub(crate) enum NotesError {
    #[error("the answer holds no JSON object")]
    NoObject,
    #[error("the answer is not notes: {0}")]
    Shape(String),
    #[error("{0} is over its bound")]
    TooLarge(&'static str),
    #[error("the notes have no title")]
    Untitled,
}

impl SessionNotes {
    /// The notes in a model's answer: its outermost JSON object (a fenced block or text
    /// around it is ignored), decoded and checked against the bounds.
    pub(crate) fn from_answer(answer: &str) -> Result<SessionNotes, NotesError> {
        let json = super::sidecar::json_object(answer).ok_or(NotesError::NoObject)?;
        let notes: SessionNotes =
            serde_json::from_str(json).map_err(|error| NotesError::Shape(error.to_string()))?;
        notes.check()?;
        Ok(notes)
    }

    /// Notes a client wrote: `value` decoded and checked against the same bounds as an
    /// answer.
    pub(crate) fn from_value(value: serde_json::Value) -> Result<SessionNotes, NotesError> {
        let notes: SessionNotes =
            serde_json::from_value(value).map_err(|error| NotesError::Shape(error.to_string()))?;
        notes.check()?;
        Ok(notes)
    }

    fn check(&self) -> Result<(), NotesError> {
        if self.title.trim().is_empty() {
            return Err(NotesError::Untitled);
        }
        text("title", &self.title, MAX_TITLE_CHARS)?;
        text("currentState", &self.current_state, MAX_TEXT_CHARS)?;
        text("userIntent", &self.user_intent, MAX_TEXT_CHARS)?;
        list("activeFiles", &self.active_files, MAX_ITEMS)?;
        facts("decisions", &self.decisions)?;
        facts("constraints", &self.constraints)?;
        list(
            "errorsAndCorrections",
            &self.errors_and_corrections,
            MAX_ITEMS,
        )?;
        list("nextSteps", &self.next_steps, MAX_ITEMS)?;
        list("workLog", &self.work_log, MAX_LOG_ITEMS)
    }

    /// The notes as the model reads them, within `budget` tokens.
    pub(crate) fn render(&self, budget: i64, tokens: TokenMath) -> String {
        let mut notes = self.clone();
        let mut text = notes.render_all();
        while tokens.count(&text) > budget && !notes.work_log.is_empty() {
            notes.work_log.remove(0);
            text = notes.render_all();
        }
        while tokens.count(&text) > budget && text.pop().is_some() {}
        text
    }

    /// What the run did, as its history keeps it: the state, the intent and the work log.
    pub(crate) fn narrative(&self) -> String {
        let mut out = String::new();
        field(&mut out, "Current state", &self.current_state);
        field(&mut out, "User intent", &self.user_intent);
        items(&mut out, "Work log", &self.work_log);
        out.trim_end().to_owned()
    }

    fn render_all(&self) -> String {
        let mut out = format!("# {}\n", self.title.trim());
        field(&mut out, "Current state", &self.current_state);
        field(&mut out, "User intent", &self.user_intent);
        if !self.active_files.is_empty() {
            out.push_str(&format!("Active files: {}\n", self.active_files.join(", ")));
        }
        let topical = |items: &[TopicFact]| -> Vec<String> {
            items
                .iter()
                .map(|item| format!("{}: {}", item.topic.trim(), item.fact.trim()))
                .collect()
        };
        items(&mut out, "Decisions", &topical(&self.decisions));
        items(&mut out, "Constraints", &topical(&self.constraints));
        items(
            &mut out,
            "Errors and corrections",
            &self.errors_and_corrections,
        );
        items(&mut out, "Next steps", &self.next_steps);
        items(&mut out, "Work log", &self.work_log);
        out.trim_end().to_owned()
    }
}

fn text(name: &'static str, value: &str, max: usize) -> Result<(), NotesError> {
    match value.chars().count() > max {
        true => Err(NotesError::TooLarge(name)),
        false => Ok(()),
    }
}

fn list(name: &'static str, values: &[String], max: usize) -> Result<(), NotesError> {
    if values.len() > max {
        return Err(NotesError::TooLarge(name));
    }
    values
        .iter()
        .try_for_each(|value| text(name, value, MAX_TEXT_CHARS))
}

fn facts(name: &'static str, values: &[TopicFact]) -> Result<(), NotesError> {
    if values.len() > MAX_ITEMS {
        return Err(NotesError::TooLarge(name));
    }
    values.iter().try_for_each(|value| {
        text(name, &value.topic, super::MAX_TOPIC_CHARS)?;
        text(name, &value.fact, MAX_TEXT_CHARS)
    })
}

fn field(out: &mut String, label: &str, value: &str) {
    if !value.trim().is_empty() {
        out.push_str(&format!("{label}: {}\n", value.trim()));
    }
}

fn items(out: &mut String, label: &str, values: &[String]) {
    if values.is_empty() {
        return;
    }
    out.push_str(&format!("{label}:\n"));
    for value in values {
        out.push_str(&format!("- {}\n", value.trim()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_s_object_is_read_around_fences_and_checked() {
        let notes = SessionNotes::from_answer(
            "Here:\n```json\n{\"title\": \"Fix login\", \"decisions\": [{\"topic\": \"auth\", \"fact\": \"JWT\"}], \"workLog\": [\"read a.rs\"]}\n```",
        )
        .unwrap();
        assert_eq!(notes.title, "Fix login");
        assert_eq!(notes.decisions[0].fact, "JWT");
        assert_eq!(
            SessionNotes::from_answer("no json"),
            Err(NotesError::NoObject)
        );
        assert!(matches!(
            SessionNotes::from_answer("{\"title\": 3}"),
            Err(NotesError::Shape(_))
        ));
        assert_eq!(
            SessionNotes::from_answer("{\"title\": \" \"}"),
            Err(NotesError::Untitled)
        );
        let long = format!("{{\"title\": \"t\", \"nextSteps\": {:?}}}", vec!["x"; 13]);
        assert_eq!(
            SessionNotes::from_answer(&long),
            Err(NotesError::TooLarge("nextSteps"))
        );
        let wide = format!("{{\"title\": \"{}\"}}", "t".repeat(121));
        assert_eq!(
            SessionNotes::from_answer(&wide),
            Err(NotesError::TooLarge("title"))
        );
    }

    #[test]
    fn rendering_drops_the_oldest_log_lines_then_cuts_to_the_budget() {
        let notes = SessionNotes {
            title: "Fix login".into(),
            current_state: "tests pass".into(),
            decisions: vec![TopicFact {
                topic: "auth".into(),
                fact: "JWT".into(),
                transient: false,
            }],
            work_log: vec!["first step taken".into(), "second step".into()],
            ..SessionNotes::default()
        };
        let tokens = TokenMath::new(4);
        let full = notes.render(1_000, tokens);
        assert_eq!(
            full,
            "# Fix login\nCurrent state: tests pass\nDecisions:\n- auth: JWT\nWork log:\n- first step taken\n- second step"
        );
        let cut = notes.render(tokens.count(&full) - 1, tokens);
        assert!(!cut.contains("first step"), "{cut}");
        assert!(cut.ends_with("- second step"), "{cut}");
        let tiny = notes.render(3, tokens);
        assert!(tokens.count(&tiny) <= 3, "{tiny}");
        assert!(full.starts_with(&tiny));
    }

    #[test]
    fn every_bound_admits_its_limit_and_refuses_one_more() {
        let titled = |rest: &str| format!("{{\"title\": \"t\"{rest}}}");
        let fact =
            |topic: &str, fact: &str| format!("{{\"topic\": \"{topic}\", \"fact\": \"{fact}\"}}");
        let facts = |count: usize, one: &str| vec![one; count].join(", ");
        let at_limits = titled(&format!(
            ", \"currentState\": \"{}\", \"nextSteps\": {:?}, \"workLog\": {:?}, \"decisions\": [{}]",
            "s".repeat(MAX_TEXT_CHARS),
            vec!["x"; MAX_ITEMS],
            vec!["y"; MAX_LOG_ITEMS],
            facts(MAX_ITEMS, &fact(&"k".repeat(super::super::MAX_TOPIC_CHARS), "v")),
        ));
        assert!(SessionNotes::from_answer(&at_limits).is_ok(), "{at_limits}");
        let over = |rest: String| SessionNotes::from_answer(&titled(&rest));
        assert_eq!(
            over(format!(
                ", \"currentState\": \"{}\"",
                "s".repeat(MAX_TEXT_CHARS + 1)
            )),
            Err(NotesError::TooLarge("currentState"))
        );
        assert_eq!(
            over(format!(", \"workLog\": {:?}", vec!["y"; MAX_LOG_ITEMS + 1])),
            Err(NotesError::TooLarge("workLog"))
        );
        assert_eq!(
            over(format!(
                ", \"decisions\": [{}]",
                facts(MAX_ITEMS + 1, &fact("k", "v"))
            )),
            Err(NotesError::TooLarge("decisions"))
        );
        let long_topic = "k".repeat(super::super::MAX_TOPIC_CHARS + 1);
        assert_eq!(
            over(format!(", \"constraints\": [{}]", fact(&long_topic, "v"))),
            Err(NotesError::TooLarge("constraints"))
        );
        assert_eq!(
            over(format!(
                ", \"constraints\": [{}]",
                fact("k", &"v".repeat(MAX_TEXT_CHARS + 1))
            )),
            Err(NotesError::TooLarge("constraints"))
        );
    }

    #[test]
    fn notes_exactly_at_the_budget_are_kept_whole() {
        let notes = SessionNotes {
            title: "Fix login".into(),
            work_log: vec!["first step taken".into(), "second step".into()],
            ..SessionNotes::default()
        };
        let tokens = TokenMath::new(1);
        let full = notes.render(1_000, tokens);
        assert_eq!(notes.render(tokens.count(&full), tokens), full);
        let without_first = "# Fix login\nWork log:\n- second step";
        assert_eq!(
            notes.render(tokens.count(without_first), tokens),
            without_first
        );
    }
}
