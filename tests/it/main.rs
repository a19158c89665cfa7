//! The integration suite: the real server on port 0, a temp SQLite file per test, and real
//! WebSocket clients.

mod support;

mod concurrency;
mod methods;
mod persistence;
mod runs;
mod transport;
