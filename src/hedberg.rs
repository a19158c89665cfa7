//! Hedberg: the boundary where stochastic model output becomes deterministic operations.
//!
//! Pure functions, no IO: the edit syntaxes models write in `<set>` bodies, the edit engine
//! that applies them with whitespace-tolerant matching, the pattern language (the
//! reference's `hedmatch`, `hedsearch` and `hedreplace`), and unified diffs for clients.
//!
//! Who calls what:
//! * the command parser: [`parse_edit_content`] (SEARCH/REPLACE, replace-only, unified diff,
//!   old_text/new_text), [`parse_sed`], [`parse_json_edit`], or all eight forms at once with
//!   [`classify_set`];
//! * the `set` tool: [`SetRevision::apply`] / [`apply_blocks`] / [`apply_edit`] (a 409 is any
//!   [`HedbergError`] they return), and [`unified_diff`] for the `set://` result;
//! * the store's selection of entries by pattern: [`pattern_match`] on paths,
//!   [`pattern_search`] in bodies (or a [`Pattern`] compiled once); [`pattern_replace`]
//!   completes the language, pinned by the reference's vectors.
//!
//! Invariants: replacement text is verbatim (only sed expands `\1`…`\9`, only `/regex/`
//! patterns expand `$1`); an ambiguous SEARCH edits nothing; CRLF bodies stay CRLF; every
//! regex is size-limited; no input makes these functions panic; all their work is charged
//! to the thread's [`budget`] and stops with [`HedbergError::WorkLimit`] when it is spent.

pub mod budget;
mod edit_block;
mod edit_engine;
mod edit_syntax;
mod error;
mod json_edit;
mod matcher;
mod pattern;
mod regex_options;
#[cfg(test)]
mod robustness_tests;
mod sed;
mod set_revision;
mod unified_diff;
#[cfg(test)]
mod vector_tests;

pub use budget::{Budget, Limits, WorkLimit};
pub use edit_block::EditBlock;
pub use edit_engine::{apply_blocks, apply_edit, apply_tolerant, Edited};
pub use edit_syntax::parse_edit_content;
pub use error::HedbergError;
pub use json_edit::{parse_json_edit, JsonEdit};
pub use pattern::{
    pattern_match, pattern_replace, pattern_search, LineGlob, Matched, Pattern, PatternKind,
    SearchHit,
};
pub use sed::parse_sed;
pub use set_revision::{classify_set, Classified, SetAttributes, SetRevision};
pub use unified_diff::unified_diff;
