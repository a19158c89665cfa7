//! The bundled sections of the packet, each a plugin named after its tag (the instructions
//! are `instructions`), registered through the assembly API like any plugin's.
//!
//! The system chain starts from nothing and appends the instructions (priority 0), then
//! `<knowns>` (100), `<previous>` (200) and `<unknowns>` (300); the user chain appends
//! `<performed>` (100), `<progress>` (200) and `<prompt>` (300, always last). Rows render as
//! tags through [`tag`]; the sections' model-facing text is [`text`].

mod instructions;
mod knowns;
mod performed;
mod previous;
mod progress;
mod prompt;
mod tag;
mod text;
mod unknowns;

#[cfg(test)]
pub(crate) mod testing;
#[cfg(test)]
mod tests;

pub(crate) use progress::CHANGED_ON_DISK;

use crate::context::ContextRow;
use crate::db::enums::{Category, Fidelity};
use crate::plugins::assembly::{AssemblyFilter, Chain};
use crate::plugins::engine::registry::Plugins;
use crate::plugins::plugin::{Plugin, Registrar};
use instructions::Instructions;
use knowns::Knowns;
use performed::Performed;
use previous::Previous;
use progress::Progress;
use prompt::PromptTag;
use unknowns::Unknowns;

/// `plugins` with every bundled section.
pub(crate) fn bundled(plugins: Plugins) -> Plugins {
    plugins
        .plugin(Section::new("instructions", Chain::System, Instructions))
        .plugin(Section::new("knowns", Chain::System, Knowns))
        .plugin(Section::new("previous", Chain::System, Previous))
        .plugin(Section::new("unknowns", Chain::System, Unknowns))
        .plugin(Section::new("performed", Chain::User, Performed))
        .plugin(Section::new("progress", Chain::User, Progress))
        .plugin(Section::new("prompt", Chain::User, PromptTag))
}

/// One section of a chain as a plugin of its own.
struct Section<F> {
    name: &'static str,
    chain: Chain,
    filter: F,
}

impl<F: AssemblyFilter + 'static> Section<F> {
    /// `filter` in `chain`, as the plugin `name`.
    fn new(name: &'static str, chain: Chain, filter: F) -> Section<F> {
        Section {
            name,
            chain,
            filter,
        }
    }
}

impl<F: AssemblyFilter + 'static> Plugin for Section<F> {
    fn name(&self) -> &'static str {
        self.name
    }

    fn register(self: Box<Self>, registrar: &mut Registrar<'_>) {
        registrar.section(self.chain, self.filter);
    }
}

/// Orders history rows deterministically: by fidelity group (index, summary, full), then by
/// turn, a turn's prompt before what was done for it, then context order.
fn chronological(rows: &mut [&ContextRow]) {
    rows.sort_by_key(|row| {
        let fidelity_group = match row.fidelity {
            Fidelity::Index => 0,
            Fidelity::Summary => 1,
            Fidelity::Full | Fidelity::Archive => 2,
        };
        let work_after_prompt = row.category != Category::Prompt;
        (
            fidelity_group,
            row.source_turn,
            work_after_prompt,
            row.ordinal,
        )
    });
}
