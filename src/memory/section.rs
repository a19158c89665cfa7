//! `<memory>` (user chain, priority 250: after `<progress>`, before `<prompt>`): the run's
//! session notes first, then what the prompt recalled from memory, each under a line
//! telling the model what it is.

use crate::context::packet::{Bucket, MessageBuilder};
use crate::memory::{RECALL_PATH, SESSION_PATH};
use crate::plugins::assembly::{AssemblyContext, AssemblyFilter};

/// The line above the session notes.
const SESSION_HEADER: &str = include_str!("../plugins/text/memory/session.md");
/// The line above the recalled facts.
const RECALL_HEADER: &str = include_str!("../plugins/text/memory/recalled.md");

/// Renders `<memory>`.
pub(super) struct MemorySection;

impl AssemblyFilter for MemorySection {
    fn priority(&self) -> i32 {
        250
    }

    fn apply(&self, context: &AssemblyContext<'_>, message: &mut MessageBuilder) {
        let body_of = |path: &str| {
            context
                .input
                .rows
                .iter()
                .find(|row| row.path == path && !row.body.is_empty())
                .map(|row| row.body.as_str())
        };
        let parts: Vec<(&str, &str)> = [
            (SESSION_HEADER, body_of(SESSION_PATH)),
            (RECALL_HEADER, body_of(RECALL_PATH)),
        ]
        .into_iter()
        .filter_map(|(header, body)| body.map(|body| (header, body)))
        .collect();
        if parts.is_empty() {
            return;
        }
        message.open_section(Bucket::Data);
        message.push(Bucket::Data, "<memory>");
        for (header, body) in parts {
            message.count_entry(Bucket::Data);
            message.push(Bucket::Data, "\n");
            message.push(Bucket::Data, header.trim_end());
            message.push(Bucket::Data, "\n");
            message.push(Bucket::Data, body);
        }
        message.push(Bucket::Data, "\n</memory>");
    }
}
