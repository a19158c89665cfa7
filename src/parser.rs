//! The tolerant parser that turns model output into commands, and the response healer.
//!
//! [`parse`] never fails and never panics: unclosed tags, unquoted attributes, missing
//! self-closing slashes, code fences and foreign tool-call formats are healed, with a
//! warning where something was recovered. Tool bodies are kept verbatim (no entity
//! decoding, no tag rewriting), and tags inside a closed `<think>` are never executed.
//! The healer ([`healer`]) decides what a turn without a status means and when a run stops.

mod attrs;
mod command;
mod foreign;
pub mod healer;
mod resolve;
mod scan;
mod set;
mod tag;
mod tool;

#[cfg(test)]
mod vector_tests;

pub use attrs::{normalize_attrs, AttrValue, Attrs};
pub use command::{
    AskUserCommand, Command, ExtraAttrs, GetCommand, KnownCommand, SearchCommand, Selection,
    TaggedText, TransferCommand, UnknownCommand,
};
pub use set::{SetCommand, SetOperation};
pub use tool::Tool;

/// Everything parsed from one model response.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ParseOutput {
    /// Commands in response order.
    pub commands: Vec<Command>,
    /// What was recovered (unclosed tags, repaired attributes …), for the model to see.
    pub warnings: Vec<String>,
    /// Text outside any command, concatenated and trimmed at both ends.
    pub unparsed: String,
}

/// Parses a complete model response into commands.
pub fn parse(content: &str) -> ParseOutput {
    let mut output = ParseOutput::default();
    let mut unparsed = String::new();
    for piece in foreign::expand(scan::scan(content, &mut output.warnings)) {
        match piece {
            scan::Piece::Text(text) => unparsed.push_str(&text),
            scan::Piece::Element(element) => output.commands.push(resolve::resolve(element)),
        }
    }
    output.unparsed = trim(&unparsed).to_owned();
    output
}

/// Trims whitespace the way the reference does (Unicode white space plus the BOM).
pub(crate) fn trim(text: &str) -> &str {
    text.trim_matches(|c: char| c.is_whitespace() || c == '\u{feff}')
}
