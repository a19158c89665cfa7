//! Materialization against a real SQLite file.
