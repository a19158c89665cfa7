//! `think`: reasoning. Recorded as written (`think://turn_N/`) so the audit keeps it, never
//! executed, never documented, and invisible to the model.

use std::borrow::Cow;

use crate::context::view::EntryView;
use crate::parser::{Command, TaggedText};
use crate::plugins::policy::ToolPolicy;
use crate::plugins::tool::{Availability, ClientCall, SchemeSpec, ToolInfo, ToolKind, TypedTool};

pub struct Think;

impl ToolInfo for Think {
    fn name(&self) -> &'static str {
        "think"
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
        Command::Think(TaggedText {
            body: call.body.clone().unwrap_or_else(|| call.path.clone()),
            attributes: Vec::new(),
        })
    }
}

impl TypedTool for Think {
    type Input = TaggedText;

    fn input<'c>(&self, command: &'c Command) -> Option<Cow<'c, TaggedText>> {
        match command {
            Command::Think(text) => Some(Cow::Borrowed(text)),
            _ => None,
        }
    }
}
