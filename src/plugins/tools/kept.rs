//! `thought` and `mcp`: tags older prompts taught, kept for the models that still write
//! them. Like `think`, each is recorded as written (`<tag>://turn_N/`), never executed,
//! never documented, and invisible to the model; unlike it, both parse generically.

use std::borrow::Cow;

use crate::context::view::EntryView;
use crate::parser::{Command, TaggedText};
use crate::plugins::policy::ToolPolicy;
use crate::plugins::tool::{Availability, ClientCall, SchemeSpec, ToolInfo, ToolKind, TypedTool};

/// The `thought` or `mcp` tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Kept {
    name: &'static str,
}

impl Kept {
    /// `thought`: reasoning under another name.
    pub const THOUGHT: Kept = Kept { name: "thought" };

    /// `mcp`: a call of a tool server this project never had.
    pub const MCP: Kept = Kept { name: "mcp" };
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
        Command::Other {
            name: self.name.to_owned(),
            content: TaggedText {
                body: call.body.clone().unwrap_or_else(|| call.path.clone()),
                attributes: Vec::new(),
            },
        }
    }
}

impl TypedTool for Kept {
    type Input = TaggedText;

    fn input<'c>(&self, command: &'c Command) -> Option<Cow<'c, TaggedText>> {
        match command {
            Command::Other { name, content } if name == self.name => Some(Cow::Borrowed(content)),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::db::enums::EntryStatus;
    use crate::plugins::tools::testing::TestRun;

    #[test]
    fn kept_tags_are_recorded_as_written_and_run_nothing() {
        let mut run = TestRun::new();
        let outcome = run.respond("<thought>first</thought><mcp server=\"x\">y</mcp>");
        let calls: Vec<(&str, &str, EntryStatus)> = outcome
            .calls
            .iter()
            .map(|call| (call.tool.as_str(), call.path.as_str(), call.status))
            .collect();
        assert_eq!(
            calls,
            [
                ("thought", "thought://turn_1/", EntryStatus::Ok),
                ("mcp", "mcp://turn_1/", EntryStatus::Ok),
            ]
        );
        assert_eq!(run.entry("thought://turn_1/").unwrap().body, "first");
        assert_eq!(run.entry("mcp://turn_1/").unwrap().body, "y");
    }
}
