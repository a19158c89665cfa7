//! The integration suite: the real server on port 0, a temp SQLite file per test, and real
//! WebSocket clients; a scripted OpenAI-compatible server stands in for the LLM where a test
//! needs determinism, and a real small model runs the end-to-end tests.
//!
//! Helpers outside `#[test]` functions fail a test by panicking too, so `unwrap` and
//! `expect` are allowed in the whole suite.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod e2e;
mod freezes;
mod stored;
mod support;

mod access;
mod acp;
mod acp_sessions;
mod admin_edits;
mod audit;
mod budget;
mod caps;
mod changes;
mod command_rules;
mod concurrency;
mod console;
mod console_browser;
mod container;
mod counted_work;
mod deltas;
mod durability;
mod egress;
mod entry_changed;
mod event_log;
mod event_log_crash;
mod fairness;
mod first_run;
mod guardrails;
mod hostile;
mod inbox;
mod instances;
mod lifecycle;
mod llm_calls;
mod loops;
mod mcp;
mod memory;
mod methods;
mod metrics;
mod oidc;
mod one_file_gathering_tool;
mod one_file_plugin;
mod one_file_tool;
mod one_server_per_home;
mod otlp;
mod outlines;
mod persistence;
mod personal_keys;
mod plugin_lifecycle;
mod plugin_messages;
mod plugin_processes;
mod presence;
mod process;
mod progress;
mod projects_apart;
mod proxy;
mod races;
mod readonly;
mod recall_rerank;
mod replay;
mod replies;
mod rules;
mod run_titles;
mod runs;
mod sandbox;
mod server_commands;
mod session_notes;
mod skills;
mod slow_readers;
mod snapshots;
mod subagents;
mod temperature;
mod tokens;
mod tool_methods;
mod transcripts;
mod transport;
mod turn_audit;
mod usage;
mod web;
mod webhooks;
mod write_gate;
