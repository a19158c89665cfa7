//! The bundled plugins: every tool ([`tools`]), then every section of the packet, each a
//! plugin of its own name (a section is named after its tag; the instructions are
//! `instructions`); and the transcript of each run ([`transcript`]). What the web tools'
//! gather halves obtain is [`web`]'s.

pub(crate) mod tools;
pub(crate) mod transcript;
pub(crate) mod web;

use crate::plugins::assembly::{
    AssemblyFilter, Chain, Instructions, Knowns, Performed, Previous, Progress, PromptTag, Unknowns,
};
use crate::plugins::engine::registry::Plugins;
use crate::plugins::plugin::{Plugin, Registrar};
use crate::plugins::tool::ToolSettings;

impl Plugins {
    /// Every bundled plugin (tools and packet sections) with these limits.
    pub fn bundled(settings: ToolSettings) -> Plugins {
        Plugins::new(settings).with_bundled()
    }

    /// These plugins and the bundled tools and packet sections after them.
    pub fn with_bundled(self) -> Plugins {
        sections(tools::bundled(self))
    }
}

/// `plugins` with every bundled section.
fn sections(plugins: Plugins) -> Plugins {
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
