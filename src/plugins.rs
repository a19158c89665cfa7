//! Plugins: every tool the model can call and every tag it sees, in three parts.
//!
//! - **The API**, the files at this level: a [`Plugin`] registers through a [`Registrar`]
//!   (`plugin`) tools (`tool`: what a tool is, its gather half in `gather`), packet sections
//!   (`assembly`: the two messages as ordered filter chains), observers (`events`), filters
//!   (`filters`), RPC methods (`method`), writes before a turn's packet is assembled
//!   (`preparation`), work on a run after its turns, off the writer (`reflection`), and
//!   reaches the clients (`clients`); `policy` is what a loop may use, `error` what a tool
//!   fails with, `writes` how its handler records what it did; `text` fills the model-facing
//!   text.
//! - **The engine** (`engine/`): the registry, the dispatch of commands, the resolution of
//!   proposals, the readonly files.
//! - **The bundled plugins** (`bundled/`): every tool of the model (`bundled/tools/`), the
//!   sections of the packet (`bundled/sections/`), the transcript. They register
//!   through the same API as a plugin from outside the crate.
//!
//! Model-facing text lives in `text/` (see `text.rs`).

pub mod assembly;
pub(crate) mod bundled;
pub mod clients;
pub(crate) mod engine;
pub mod error;
pub mod events;
pub mod filters;
pub mod gather;
pub mod method;
pub mod plugin;
pub mod policy;
pub mod preparation;
pub(crate) mod process;
pub mod reflection;
pub(crate) mod text;
pub mod tool;
pub mod writes;

pub use engine::registry::Plugins;
pub use plugin::{Plugin, Registrar};

// The types of the rest of the server a plugin meets in this API.
pub use crate::access::Role;
pub use crate::context::packet::{Bucket, MessageBuilder};
pub use crate::context::view::EntryView;
pub use crate::db::enums::{CallPurpose, EntryStatus, LoopMode};
pub use crate::hub::notifications::NotifyLevel;
pub use crate::parser::{Command, TagSpec, TaggedText};
