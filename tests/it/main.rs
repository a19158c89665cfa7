//! The integration suite: the real server on port 0, a temp SQLite file per test, and real
//! WebSocket clients; a scripted OpenAI-compatible server stands in for the LLM where a test
//! needs determinism.

mod e2e;
mod fake_llm;
mod support;

mod loops;
mod transport;
