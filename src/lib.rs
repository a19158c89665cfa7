//! rummy: a server that runs LLM coding agents for editor clients.
//!
//! See `ARCHITECTURE.md` for the map of modules, actors and the path of one turn.

pub mod context;
pub mod db;
pub mod hedberg;
pub mod llm;
pub mod parser;
pub mod plugins;
pub mod project;
