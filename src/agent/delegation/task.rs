//! What a `<delegate>` command asks: its sub-task and the entries passed with it, the key
//! under which its child's report is kept.

use crate::parser::{AttrValue, Command};

/// The tag, and the scheme of its results.
pub(super) const NAME: &str = "delegate";

/// One `<delegate>`: the sub-task and the paths passed with it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(super) struct Task {
    /// The sub-task, trimmed: the child loop's prompt.
    pub text: String,
    /// The parent's entries passed to the child (the `path` attribute: paths separated by
    /// spaces or commas).
    pub context: Vec<String>,
}

impl Task {
    /// The task of a `<delegate>` command; `None` for any other.
    pub(super) fn of(command: &Command) -> Option<Task> {
        let Command::Other { name, content } = command else {
            return None;
        };
        (name == NAME).then(|| {
            let text_of = |wanted: &str| {
                content
                    .attributes
                    .iter()
                    .find_map(|(name, value)| match value {
                        AttrValue::Text(text) if name == wanted => Some(text.as_str()),
                        _ => None,
                    })
            };
            Task {
                text: content.body.trim().to_owned(),
                context: text_of("path")
                    .unwrap_or_default()
                    .split(|c: char| c == ',' || c.is_whitespace())
                    .filter(|path| !path.is_empty())
                    .map(str::to_owned)
                    .collect(),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parser::TaggedText;

    fn delegate(body: &str, attributes: &[(&str, &str)]) -> Command {
        Command::Other {
            name: NAME.to_owned(),
            content: TaggedText {
                body: body.to_owned(),
                attributes: attributes
                    .iter()
                    .map(|(name, value)| ((*name).to_owned(), AttrValue::Text((*value).into())))
                    .collect(),
            },
        }
    }

    #[test]
    fn a_task_takes_its_text_and_paths() {
        let command = delegate(
            " find the bug ",
            &[("path", "src/a.rs, known://notes  b.md")],
        );
        assert_eq!(
            Task::of(&command),
            Some(Task {
                text: "find the bug".into(),
                context: vec!["src/a.rs".into(), "known://notes".into(), "b.md".into()],
            })
        );
        let bare = Task::of(&delegate("look", &[]));
        assert_eq!(bare.map(|task| task.context), Some(vec![]));
        assert_eq!(Task::of(&Command::Sh(None)), None);
    }
}
