//! rummy: a server that runs LLM coding agents for editor clients.
//!
//! See `ARCHITECTURE.md` for the map of modules, actors and the path of one turn.

mod access;
pub mod acp;
mod agent;
pub mod app;
mod budget;
mod cluster;
pub mod config;
mod console;
mod context;
mod db;
mod egress;
mod error;
pub mod healthcheck;
pub mod hedberg;
mod home_lock;
mod http;
mod hub;
mod inbox;
mod live;
mod llm;
mod mcp;
mod memory;
mod metrics;
mod parser;
pub mod plugins;
mod presence;
mod project;
mod project_actor;
mod random;
mod rpc;
pub mod sandbox;
mod secrets;
mod slots;
pub mod telemetry;
mod tokens;
mod unix_time;
mod usage;
mod web;
mod webhooks;
mod ws;

#[cfg(feature = "testing")]
pub mod testing;

pub use access::hash_token;
