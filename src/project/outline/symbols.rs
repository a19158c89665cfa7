//! The definitions of one source text: parsed by its grammar and tagged by the grammar's
//! definitions query, both stopped at a deadline; one symbol per definition node (the
//! query's first pattern naming it wins), nested by the containment of their nodes.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use tree_sitter::{
    Node, ParseOptions, ParseState, Parser, QueryCursor, QueryCursorOptions, QueryCursorState,
    QueryMatch, StreamingIterator,
};

use super::grammar::Grammar;
use super::OutlineError;

/// Matches a query cursor keeps in progress at once; tags patterns need a handful.
const MATCH_LIMIT: u32 = 256;

/// Longest name kept, in characters.
const MAX_NAME_CHARS: usize = 80;

/// One definition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Symbol {
    /// The tags kind: `function`, `method`, `class`, `interface`, `module`, `type`, …
    pub kind: &'static str,
    pub name: String,
    /// 1-based, inclusive.
    pub first_line: usize,
    pub last_line: usize,
    /// How many other symbols contain it.
    pub depth: usize,
}

struct Found {
    pattern: usize,
    start_byte: usize,
    end_byte: usize,
    symbol: Symbol,
}

/// The symbols of `text` in source order, or [`OutlineError::TimedOut`] when parsing or
/// tagging runs longer than `timeout` (compiling the grammar's query, once, is not counted).
pub(super) fn symbols(
    grammar: Grammar,
    text: &str,
    timeout: Duration,
) -> Result<Vec<Symbol>, OutlineError> {
    let query = grammar
        .query()
        .map_err(|error| OutlineError::Grammar(error.to_string()))?;
    let mut parser = Parser::new();
    parser
        .set_language(&grammar.language())
        .map_err(|error| OutlineError::Grammar(error.to_string()))?;
    let deadline = Instant::now() + timeout;
    let bytes = text.as_bytes();
    let mut parse_past_deadline = |_: &ParseState| Instant::now() >= deadline;
    let tree = parser
        .parse_with_options(
            &mut |offset, _| bytes.get(offset..).unwrap_or_default(),
            None,
            Some(ParseOptions::new().progress_callback(&mut parse_past_deadline)),
        )
        .ok_or(OutlineError::TimedOut)?;
    let mut cursor = QueryCursor::new();
    cursor.set_match_limit(MATCH_LIMIT);
    let mut query_past_deadline = |_: &QueryCursorState| Instant::now() >= deadline;
    let mut matches = cursor.matches_with_options(
        query,
        tree.root_node(),
        bytes,
        QueryCursorOptions::new().progress_callback(&mut query_past_deadline),
    );
    let names = query.capture_names();
    let mut found: HashMap<usize, Found> = HashMap::new();
    while let Some(matched) = matches.next() {
        let Some((node, candidate)) = definition(matched, names, text) else {
            continue;
        };
        let first = found
            .get(&node)
            .is_none_or(|kept| candidate.pattern < kept.pattern);
        if first {
            found.insert(node, candidate);
        }
    }
    if Instant::now() >= deadline {
        return Err(OutlineError::TimedOut);
    }
    Ok(nest(found.into_values().collect()))
}

/// The definition one match tags, with the id of its node: `None` when the match lacks a
/// definition or a name capture. An implementation's name is `trait for type`.
fn definition(
    matched: &QueryMatch<'_, '_>,
    names: &[&'static str],
    text: &str,
) -> Option<(usize, Found)> {
    let mut definition = None;
    let mut name = None;
    let mut implemented = None;
    for capture in matched.captures {
        let capture_name = names
            .get(capture.index as usize)
            .copied()
            .unwrap_or_default();
        if let Some(kind) = capture_name.strip_prefix("definition.") {
            definition = Some((kind, capture.node));
        } else if capture_name == "name" {
            name = Some(capture.node);
        } else if capture_name == "trait" {
            implemented = Some(capture.node);
        }
    }
    let (Some((kind, node)), Some(name)) = (definition, name) else {
        return None;
    };
    let name = match implemented {
        Some(implemented) => {
            format!("{} for {}", text_of(implemented, text), text_of(name, text))
        }
        None => text_of(name, text),
    };
    let extent = extent(node);
    let found = Found {
        pattern: matched.pattern_index,
        start_byte: extent.start_byte(),
        end_byte: extent.end_byte(),
        symbol: Symbol {
            kind,
            name,
            first_line: extent.start_position().row + 1,
            last_line: extent.end_position().row + 1,
            depth: 0,
        },
    };
    Some((node.id(), found))
}

/// The node whose lines a definition spans: C and C++ tag a function by its declarator, so
/// a declarator inside a function definition stands for the whole definition.
fn extent(node: Node<'_>) -> Node<'_> {
    let mut outer = node;
    while let Some(parent) = outer
        .parent()
        .filter(|parent| parent.kind().ends_with("declarator"))
    {
        outer = parent;
    }
    match outer.parent() {
        Some(parent) if parent.kind() == "function_definition" => parent,
        _ => node,
    }
}

/// The node's text on one line, whitespace runs as one space, cut to [`MAX_NAME_CHARS`].
fn text_of(node: Node<'_>, text: &str) -> String {
    let raw = text.get(node.byte_range()).unwrap_or_default();
    let words: Vec<&str> = raw.split_whitespace().collect();
    words.join(" ").chars().take(MAX_NAME_CHARS).collect()
}

/// Sorts the definitions by position, outer before inner, and gives each its depth.
fn nest(mut found: Vec<Found>) -> Vec<Symbol> {
    found.sort_by(|a, b| {
        a.start_byte
            .cmp(&b.start_byte)
            .then(b.end_byte.cmp(&a.end_byte))
    });
    let mut open: Vec<usize> = Vec::new();
    found
        .into_iter()
        .map(|mut found| {
            while open.last().is_some_and(|end| *end < found.end_byte) {
                open.pop();
            }
            found.symbol.depth = open.len();
            open.push(found.end_byte);
            found.symbol
        })
        .collect()
}
