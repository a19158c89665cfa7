//! Hedberg: the pattern language and edit formats that turn model output into deterministic operations.
