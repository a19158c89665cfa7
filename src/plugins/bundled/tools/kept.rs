//! `think`, and `thought` and `mcp` (tags older prompts taught, kept for the models that
//! still write them): each is recorded as written (`<tag>://turn_N/`) so the audit keeps
//! it, never executed, never documented, and invisible to the model. `think` has a grammar
//! of its own (nothing inside it is a command); the other two parse generically.

use std::borrow::Cow;

use crate::context::view::EntryView;
use crate::parser::{Command, TaggedText};
use crate::plugins::policy::ToolPolicy;
use crate::plugins::tool::{Availability, ClientCall, SchemeSpec, ToolInfo, ToolKind, TypedTool};

/// The `think`, `thought` or `mcp` tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Kept {
    name: &'static str,
    /// The parser gives this tag a command of its own (`Command::Think`).
    typed: bool,
}

impl Kept {
    /// `think`: reasoning.
    pub(crate) const THINK: Kept = Kept {
        name: "think",
        typed: true,
    };

    /// `thought`: reasoning under another name.
    pub(crate) const THOUGHT: Kept = Kept {
        name: "thought",
        typed: false,
    };

    /// `mcp`: a call of a tool server this project never had.
    pub(crate) const MCP: Kept = Kept {
        name: "mcp",
        typed: false,
    };
}

impl ToolInfo for Kept {
    fn name(&self) -> &'static str {
        self.name
    }

    fn scheme(&self) -> SchemeSpec {
        SchemeSpec {
            model_visible: false,
            ..SchemeSpec::LOGGING
        }
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Reasoning
    }

    fn availability(&self, _policy: &ToolPolicy) -> Availability {
        Availability::Unlisted
    }

    fn doc(&self) -> &'static str {
        ""
    }

    fn full_view(&self, entry: &EntryView<'_>) -> String {
        entry.body.to_owned()
    }

    fn command_from_call(&self, call: &ClientCall) -> Command {
        let content = TaggedText {
            body: call.body.clone().unwrap_or_else(|| call.path.clone()),
            attributes: Vec::new(),
        };
        if self.typed {
            Command::Think(content)
        } else {
            Command::Other {
                name: self.name.to_owned(),
                content,
            }
        }
    }
}

impl TypedTool for Kept {
    type Input = TaggedText;

    fn input<'c>(&self, command: &'c Command) -> Option<Cow<'c, TaggedText>> {
        match command {
            Command::Think(content) if self.typed => Some(Cow::Borrowed(content)),
            Command::Other { name, content } if !self.typed && name == self.name => {
                Some(Cow::Borrowed(content))
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::db::enums::EntryStatus;
    use crate::plugins::bundled::tools::testing::TestRun;

    #[test]
    fn kept_tags_are_recorded_as_written_and_run_nothing() {
        let mut run = TestRun::new();
        let outcome =
            run.respond("<think>why</think><thought>first</thought><mcp server=\"x\">y</mcp>");
        let calls: Vec<(&str, &str, EntryStatus)> = outcome
            .calls
            .iter()
            .map(|call| (call.tool.as_str(), call.path.as_str(), call.status))
            .collect();
        assert_eq!(
            calls,
            [
                ("think", "think://turn_1/", EntryStatus::Ok),
                ("thought", "thought://turn_1/", EntryStatus::Ok),
                ("mcp", "mcp://turn_1/", EntryStatus::Ok),
            ]
        );
        assert_eq!(run.entry("think://turn_1/").unwrap().body, "why");
        assert_eq!(run.entry("thought://turn_1/").unwrap().body, "first");
        assert_eq!(run.entry("mcp://turn_1/").unwrap().body, "y");
    }
}
