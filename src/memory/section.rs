//! `<memory>` (user chain, priority 250: after `<progress>`, before `<prompt>`): what the
//! prompt recalled from memory, under a line telling the model what it is.

use crate::context::packet::{Bucket, MessageBuilder};
use crate::memory::RECALL_PATH;
use crate::plugins::assembly::{AssemblyContext, AssemblyFilter};

/// The line above the recalled facts.
const HEADER: &str = include_str!("../plugins/text/memory/recalled.md");

/// Renders `<memory>`.
pub(super) struct MemorySection;

impl AssemblyFilter for MemorySection {
    fn priority(&self) -> i32 {
        250
    }

    fn apply(&self, context: &AssemblyContext<'_>, message: &mut MessageBuilder) {
        let Some(row) = context
            .input
            .rows
            .iter()
            .find(|row| row.path == RECALL_PATH && !row.body.is_empty())
        else {
            return;
        };
        message.open_section(Bucket::Data);
        message.count_entry(Bucket::Data);
        message.push(Bucket::Data, "<memory>\n");
        message.push(Bucket::Data, HEADER.trim_end());
        message.push(Bucket::Data, "\n");
        message.push(Bucket::Data, &row.body);
        message.push(Bucket::Data, "\n</memory>");
    }
}
