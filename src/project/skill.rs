//! A skill document's metadata: YAML front matter (`name`, `description`, `when_to_use`)
//! read with `gray_matter`, and the body after it. A skill without front matter (or with
//! front matter that does not read, which is logged) keeps its whole text as its body, its
//! file name as its name, and its first non-empty line (heading marks dropped) as its
//! description.

use gray_matter::engine::YAML;
use gray_matter::Matter;
use serde::Deserialize;

/// Longest description derived from a body, in characters.
const DERIVED_DESCRIPTION_CHARS: usize = 200;

/// What the front matter may say; other keys are ignored.
#[derive(Debug, Default, Deserialize)]
struct FrontMatter {
    name: Option<String>,
    description: Option<String>,
    when_to_use: Option<String>,
}

/// One skill, read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Skill {
    /// What the model and clients call it: the front matter's `name`, else the file name.
    pub title: String,
    /// What it is for (never empty unless the body is).
    pub description: String,
    /// When the model should load it, if the front matter says.
    pub when_to_use: Option<String>,
    /// The text after the front matter.
    pub body: String,
}

impl Skill {
    /// The skill in `text`, a document called `file_name`.
    pub(crate) fn parse(file_name: &str, text: &str) -> Skill {
        let parsed = match Matter::<YAML>::new().parse::<FrontMatter>(text) {
            Ok(parsed) => parsed.data.map(|front| (front, parsed.content)),
            Err(error) => {
                tracing::warn!(skill = file_name, %error, "skill front matter does not read; ignored");
                None
            }
        };
        let (front, body) = parsed.unwrap_or_else(|| (FrontMatter::default(), text.to_owned()));
        let present = |value: Option<String>| {
            value
                .map(|value| value.trim().to_owned())
                .filter(|value| !value.is_empty())
        };
        let description = present(front.description).unwrap_or_else(|| derived_description(&body));
        Skill {
            title: present(front.name).unwrap_or_else(|| file_name.to_owned()),
            description,
            when_to_use: present(front.when_to_use),
            body,
        }
    }

    /// The line the model reads until it loads the body.
    pub(crate) fn summary(&self) -> String {
        match &self.when_to_use {
            Some(when) => format!("{} (when to use: {when})", self.description),
            None => self.description.clone(),
        }
    }
}

/// The first non-empty line of `body`, heading marks dropped, cut to a bound.
fn derived_description(body: &str) -> String {
    body.lines()
        .map(|line| line.trim().trim_start_matches('#').trim())
        .find(|line| !line.is_empty())
        .unwrap_or_default()
        .chars()
        .take(DERIVED_DESCRIPTION_CHARS)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn front_matter_gives_name_description_and_when_to_use() {
        let text = "---\nname: SQL style\ndescription: How we write SQL.\nwhen_to_use: before \
                    writing a query\nversion: 2\n---\n# SQL\nUse lowercase keywords.\n";
        let skill = Skill::parse("sql_style", text);
        assert_eq!(
            skill,
            Skill {
                title: "SQL style".into(),
                description: "How we write SQL.".into(),
                when_to_use: Some("before writing a query".into()),
                body: "# SQL\nUse lowercase keywords.".into(),
            }
        );
        assert_eq!(
            skill.summary(),
            "How we write SQL. (when to use: before writing a query)"
        );
    }

    #[test]
    fn without_front_matter_the_first_line_describes_the_whole_text() {
        let text = "\n## Prefer iterators\nOver index loops.";
        let skill = Skill::parse("rust_style", text);
        assert_eq!(skill.title, "rust_style");
        assert_eq!(skill.description, "Prefer iterators");
        assert_eq!(skill.when_to_use, None);
        assert_eq!(skill.body, text);
        assert_eq!(skill.summary(), "Prefer iterators");
        assert_eq!(
            Skill::parse("x", "ab").body,
            "ab",
            "a text shorter than ---"
        );
    }

    #[test]
    fn front_matter_that_does_not_read_is_kept_as_text() {
        let text = "---\nname: [unclosed\n---\nBody.";
        let skill = Skill::parse("broken", text);
        assert_eq!(
            (skill.title.as_str(), skill.body.as_str()),
            ("broken", text)
        );
    }

    #[test]
    fn a_front_matter_without_description_derives_one_from_the_body() {
        let skill = Skill::parse("x", "---\nname: X\n---\nDo the thing.\nMore.");
        assert_eq!(skill.description, "Do the thing.");
        assert_eq!(skill.body, "Do the thing.\nMore.");
    }
}
