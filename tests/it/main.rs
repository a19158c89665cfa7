//! The integration suite: the real server on port 0, a temp SQLite file per test, and real
//! WebSocket clients.
//!
//! Helpers outside `#[test]` functions fail a test by panicking too, so `unwrap` and
//! `expect` are allowed in the whole suite.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

mod concurrency;
mod methods;
mod persistence;
mod runs;
mod transport;
