//! rummy: a server that runs LLM coding agents for editor clients.
//!
//! See `ARCHITECTURE.md` for the map of modules, actors and the path of one turn.

pub mod access;
pub mod acp;
pub mod agent;
pub mod app;
pub mod budget;
pub mod cluster;
pub mod config;
pub mod context;
pub mod db;
pub mod error;
pub mod healthcheck;
pub mod hedberg;
pub mod home_lock;
pub mod http;
pub mod hub;
pub mod llm;
pub mod mcp;
pub mod memory;
pub mod metrics;
pub mod parser;
pub mod plugins;
pub mod project;
pub mod project_actor;
pub mod rpc;
pub mod slots;
pub mod telemetry;
pub mod web;
pub mod ws;
