//! A source file's outline: its definitions (functions, types, methods, …), one line each,
//! `first-last kind name` (a one-line definition shows its line alone), indented two spaces
//! per enclosing definition, at most [`MAX_OUTLINE_CHARS`] long: past that the deepest
//! levels go first, then the last definitions, and a line `… N more` says how many are
//! left out. The model sees it as the file's summary, and reads a definition with
//! `line`/`limit`.
//!
//! Parsing is bounded: a text over [`OutlineLimits::max_bytes`] is not parsed, and parsing
//! and tagging stop at [`OutlineLimits::timeout`]. A file without a grammar, over the size
//! limit or without definitions has no outline.

mod grammar;
mod symbols;

use std::fmt::Write as _;
use std::time::Duration;

use thiserror::Error;

pub(crate) use grammar::Grammar;
pub(crate) use symbols::Symbol;

/// The longest outline, in characters (about 500 tokens).
pub(crate) const MAX_OUTLINE_CHARS: usize = 2000;

/// Bounds on the work of one outline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct OutlineLimits {
    /// Larger texts are not outlined; 0 outlines nothing.
    pub max_bytes: usize,
    /// Parsing and tagging one text stop after this long.
    pub timeout: Duration,
}

impl Default for OutlineLimits {
    fn default() -> Self {
        Self {
            max_bytes: 512 * 1024,
            timeout: Duration::from_millis(500),
        }
    }
}

/// Why a file that has a grammar got no outline.
#[derive(Debug, Error, PartialEq, Eq)]
pub(crate) enum OutlineError {
    #[error("outlining took longer than its time limit")]
    TimedOut,
    #[error("the grammar cannot be used: {0}")]
    Grammar(String),
}

/// The outline of `text`, read as the file at `path`; `None` without a grammar, over the
/// size limit, or when no definition is found.
pub(crate) fn outline(
    path: &str,
    text: &str,
    limits: &OutlineLimits,
) -> Result<Option<String>, OutlineError> {
    let Some(grammar) = Grammar::for_path(path) else {
        return Ok(None);
    };
    if text.len() > limits.max_bytes {
        return Ok(None);
    }
    let symbols = symbols::symbols(grammar, text, limits.timeout)?;
    Ok((!symbols.is_empty()).then(|| render(&symbols, MAX_OUTLINE_CHARS)))
}

/// The symbols as outline lines within `max_chars`: the deepest level that fits whole, then
/// as many of its symbols as fit, the rest counted on a last line.
fn render(symbols: &[Symbol], max_chars: usize) -> String {
    let deepest = symbols.iter().map(|symbol| symbol.depth).max().unwrap_or(0);
    let mut depth = deepest;
    loop {
        let shown: Vec<&Symbol> = symbols
            .iter()
            .filter(|symbol| symbol.depth <= depth)
            .collect();
        let omitted = symbols.len() - shown.len();
        let whole = lines(&shown);
        let length = whole
            .iter()
            .map(|line| line.chars().count() + 1)
            .sum::<usize>();
        if omitted == 0 && length <= max_chars + 1 {
            return whole.join("\n");
        }
        if length + more_line(omitted).chars().count() <= max_chars || depth == 0 {
            return cut(whole, symbols.len(), max_chars);
        }
        depth -= 1;
    }
}

/// The first of `lines` that fit in `max_chars` with a last line counting the others of `total`.
fn cut(lines: Vec<String>, total: usize, max_chars: usize) -> String {
    let mut outline = String::new();
    let mut used = 0;
    let mut kept = 0;
    for line in &lines {
        let length = line.chars().count() + 1;
        if used + length + more_line(total - kept - 1).chars().count() > max_chars {
            break;
        }
        outline.push_str(line);
        outline.push('\n');
        used += length;
        kept += 1;
    }
    outline.push_str(&more_line(total - kept));
    outline
}

fn more_line(omitted: usize) -> String {
    format!("… {omitted} more")
}

fn lines(symbols: &[&Symbol]) -> Vec<String> {
    symbols
        .iter()
        .map(|symbol| {
            let mut line = "  ".repeat(symbol.depth);
            if symbol.first_line == symbol.last_line {
                let _ = write!(line, "{}", symbol.first_line);
            } else {
                let _ = write!(line, "{}-{}", symbol.first_line, symbol.last_line);
            }
            let _ = write!(line, " {} {}", symbol.kind, symbol.name);
            line
        })
        .collect()
}

#[cfg(test)]
mod tests;
