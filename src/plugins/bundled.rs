//! The bundled plugins: every tool ([`tools`]), then every section of the packet
//! ([`sections`]); and the transcript of each run ([`transcript`]). What the web tools'
//! gather halves obtain is [`web`]'s.

pub(crate) mod sections;
pub(crate) mod tools;
pub(crate) mod transcript;
pub(crate) mod web;

use crate::plugins::engine::registry::Plugins;
use crate::plugins::tool::ToolSettings;

impl Plugins {
    /// Every bundled plugin (tools and packet sections) with these limits.
    pub fn bundled(settings: ToolSettings) -> Plugins {
        Plugins::new(settings).with_bundled()
    }

    /// These plugins and the bundled tools and packet sections after them.
    pub fn with_bundled(self) -> Plugins {
        sections::bundled(tools::bundled(self))
    }
}
