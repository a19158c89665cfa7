//! Plugins: every tool the model can call and every tag it sees.
//!
//! Tool plugins (`tools/`) record and dispatch commands, project their entries into the
//! packet (full and summary views) and carry their model-facing docs. Assembly plugins
//! (`assembly/`) own the tags of the two messages (`<knowns>`, `<previous>`, `<unknowns>`,
//! `<performed>`, `<progress>`, `<prompt>`) and run as ordered filter chains. Each is a
//! [`Plugin`] registered through the same API as a plugin from outside the crate
//! (`plugin`), which may also add observers (`events`), filters (`filters`), RPC methods
//! (`method`), writes before a turn's packet is assembled (`preparation`), work on a run
//! after its turns, off the writer (`reflection`), and reach the clients (`clients`). Model-facing text lives in `text/`, apart
//! from code, so it can be tuned without touching logic.

pub mod assembly;
mod bundled;
pub mod clients;
pub mod dispatch;
pub mod error;
pub mod events;
pub mod filters;
pub mod gather;
pub mod method;
pub mod plugin;
pub mod policy;
pub mod preparation;
pub mod readonly;
pub mod reflection;
pub mod registry;
pub mod resolve;
pub mod tool;
pub mod tools;
pub mod transcript;
pub mod web;

pub use plugin::{Plugin, Registrar};
pub use registry::Plugins;
