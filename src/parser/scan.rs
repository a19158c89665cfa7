//! The tolerant state machine that splits model output into outside text and tool elements.
//!
//! Rules (hedberg README §2.6): a tool body runs verbatim to the tool's own close tag when
//! one exists. A tool tag inside a body that already has text is part of that text; a tool
//! tag right after the open tag (blank body so far), or any tool tag when the tool is never
//! closed, ends the tool there with a warning, which is how a missing `/` is tolerated.
//! `<think>` with a close tag swallows everything up to it: reasoning is never executed.

use super::tag::{close_tag_at, open_tag_at, CloseTag, OpenTag};
use super::tags::{Tag, TagSet, TypedTag};

/// One tool element as written: tag, raw attributes and verbatim body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RawElement {
    pub tool: Tag,
    pub attrs: Vec<(String, String)>,
    pub body: String,
    /// The element ended with its own close tag (or was self-closing), not by recovery.
    pub closed: bool,
}

/// A piece of model output, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Piece {
    /// Text outside any tool.
    Text(String),
    /// A tool element.
    Element(RawElement),
}

/// Where the next close tag of each tool is, computed lazily. The scan position only moves
/// forward, so one search per tool keeps the whole scan linear.
#[derive(Default)]
struct CloseIndex {
    cache: Vec<(Tag, usize, Option<CloseTag>)>,
}

impl CloseIndex {
    fn next_close(
        &mut self,
        text: &str,
        tags: &TagSet,
        tool: Tag,
        from: usize,
    ) -> Option<CloseTag> {
        if let Some((_, searched_from, found)) = self.cache.iter().find(|(t, _, _)| *t == tool) {
            let still_valid = *searched_from <= from
                && match found {
                    Some(close) => close.start >= from,
                    None => true,
                };
            if still_valid {
                return *found;
            }
        }
        let found = find_close(text, tags, tool, from);
        self.cache.retain(|(t, _, _)| *t != tool);
        self.cache.push((tool, from, found));
        found
    }
}

fn find_close(text: &str, tags: &TagSet, tool: Tag, from: usize) -> Option<CloseTag> {
    let mut at = from;
    while let Some(offset) = text.get(at..)?.find("</") {
        let start = at + offset;
        if let Some(close) = close_tag_at(text, tags, start).filter(|close| close.tool == tool) {
            return Some(close);
        }
        at = start + 2;
    }
    None
}

/// Splits `text` into pieces at the tags of `tags`, collecting recovery warnings.
pub(crate) fn scan(text: &str, tags: &TagSet, warnings: &mut Vec<String>) -> Vec<Piece> {
    let mut pieces = Vec::new();
    let mut closes = CloseIndex::default();
    let mut text_start = 0;
    let mut cursor = 0;
    while let Some(offset) = text.get(cursor..).and_then(|rest| rest.find('<')) {
        let at = cursor + offset;
        if let Some(open) = open_tag_at(text, tags, at) {
            push_text(&mut pieces, text, text_start, at);
            if open.repaired {
                warnings.push(format!(
                    "Unterminated attribute value in <{}> — repaired",
                    open.tool.name
                ));
            }
            let extent = if open.self_closing {
                Extent {
                    body_end: open.end,
                    resume: open.end,
                    closed: true,
                }
            } else {
                body_extent(text, tags, &open, &mut closes, warnings)
            };
            pieces.push(Piece::Element(RawElement {
                tool: open.tool,
                attrs: open.attrs,
                body: text
                    .get(open.end..extent.body_end)
                    .unwrap_or_default()
                    .to_owned(),
                closed: extent.closed,
            }));
            text_start = extent.resume;
            cursor = extent.resume;
            continue;
        }
        if let Some(comment_end) = comment_end_at(text, at) {
            push_text(&mut pieces, text, text_start, at);
            text_start = comment_end;
            cursor = comment_end;
            continue;
        }
        if let Some(stray) = close_tag_at(text, tags, at) {
            push_text(&mut pieces, text, text_start, at);
            text_start = stray.end;
            cursor = stray.end;
            continue;
        }
        cursor = at + 1;
    }
    push_text(&mut pieces, text, text_start, text.len());
    pieces
}

/// The end of an HTML comment starting at `at`. A commented-out command is not a command;
/// outside tool bodies the comment is dropped (inside a body it is verbatim text).
fn comment_end_at(text: &str, at: usize) -> Option<usize> {
    let after = text.get(at..)?.strip_prefix("<!--")?;
    Some(
        after
            .find("-->")
            .map_or(text.len(), |offset| at + 4 + offset + 3),
    )
}

fn push_text(pieces: &mut Vec<Piece>, text: &str, start: usize, end: usize) {
    if let Some(slice) = text.get(start..end).filter(|slice| !slice.is_empty()) {
        pieces.push(Piece::Text(slice.to_owned()));
    }
}

struct Extent {
    body_end: usize,
    resume: usize,
    closed: bool,
}

fn body_extent(
    text: &str,
    tags: &TagSet,
    open: &OpenTag,
    closes: &mut CloseIndex,
    warnings: &mut Vec<String>,
) -> Extent {
    let name = open.tool.name;
    let close = closes.next_close(text, tags, open.tool, open.end);
    let reasoning_closed = open.tool.typed == Some(TypedTag::Think) && close.is_some();
    if !reasoning_closed {
        if let Some(extent) = interruption(text, tags, open, close, warnings) {
            return extent;
        }
    }
    match close {
        Some(close) => {
            if close.truncated {
                warnings.push(unclosed_warning(name));
            }
            Extent {
                body_end: close.start,
                resume: close.end,
                closed: !close.truncated,
            }
        }
        None => {
            warnings.push(unclosed_warning(name));
            Extent {
                body_end: text.len(),
                resume: text.len(),
                closed: false,
            }
        }
    }
}

/// Where another tool tag cuts the open tool short: any tool tag while the body is still
/// blank, and, when the tool is never closed, the next tool tag or close tag of another tool.
fn interruption(
    text: &str,
    tags: &TagSet,
    open: &OpenTag,
    close: Option<CloseTag>,
    warnings: &mut Vec<String>,
) -> Option<Extent> {
    let name = open.tool.name;
    let limit = close.map_or(text.len(), |close| close.start);
    let mut cursor = open.end;
    while let Some(offset) = text.get(cursor..limit).and_then(|span| span.find('<')) {
        let at = cursor + offset;
        let body_blank = text
            .get(open.end..at)
            .is_none_or(|body| body.trim().is_empty());
        if close.is_some() && !body_blank {
            return None;
        }
        if let Some(next) = open_tag_at(text, tags, at) {
            warnings.push(format!(
                "Unclosed <{name}> before <{}> — recovered",
                next.tool.name
            ));
            return Some(Extent {
                body_end: at,
                resume: at,
                closed: false,
            });
        }
        if close.is_none() {
            if let Some(other) =
                close_tag_at(text, tags, at).filter(|other| other.tool != open.tool)
            {
                warnings.push(format!(
                    "Mismatched </{}> closing <{name}> — recovered",
                    other.tool.name
                ));
                return Some(Extent {
                    body_end: at,
                    resume: other.end,
                    closed: false,
                });
            }
        }
        cursor = at + 1;
    }
    None
}

fn unclosed_warning(name: &str) -> String {
    format!("Unclosed <{name}> tag — content captured anyway")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parser::tags::{bundled, bundled_tag};

    fn run(text: &str) -> (Vec<Piece>, Vec<String>) {
        let mut warnings = Vec::new();
        let pieces = scan(text, &bundled(), &mut warnings);
        (pieces, warnings)
    }

    fn element(tool: &str, attrs: &[(&str, &str)], body: &str) -> Piece {
        with_closed(tool, attrs, body, true)
    }

    fn with_closed(tool: &str, attrs: &[(&str, &str)], body: &str, closed: bool) -> Piece {
        Piece::Element(RawElement {
            tool: bundled_tag(tool),
            attrs: attrs
                .iter()
                .map(|(name, value)| (name.to_string(), value.to_string()))
                .collect(),
            body: body.to_owned(),
            closed,
        })
    }

    #[test]
    fn body_with_text_keeps_a_mentioned_tool_tag() {
        let (pieces, warnings) = run("<set path=\"p\">Step: <get path=\"a\"/> then</set>");
        assert_eq!(
            pieces,
            vec![element(
                "set",
                &[("path", "p")],
                "Step: <get path=\"a\"/> then"
            )]
        );
        assert!(warnings.is_empty());
    }

    #[test]
    fn open_tag_without_slash_ends_at_the_next_tool() {
        let (pieces, warnings) = run("<get path=\"a\">\n<get path=\"b\"/>x");
        assert_eq!(
            pieces,
            vec![
                with_closed("get", &[("path", "a")], "\n", false),
                element("get", &[("path", "b")], ""),
                Piece::Text("x".into()),
            ]
        );
        assert_eq!(warnings.len(), 1);
    }

    #[test]
    fn closed_think_never_yields_inner_tools() {
        let (pieces, warnings) = run("<think>\n<get path=\"a\"/></think>after");
        assert_eq!(
            pieces,
            vec![
                element("think", &[], "\n<get path=\"a\"/>"),
                Piece::Text("after".into()),
            ]
        );
        assert!(warnings.is_empty());
    }

    #[test]
    fn unclosed_tool_ends_at_a_close_tag_of_another_tool() {
        let (pieces, warnings) = run("<update>x</summarize>y");
        assert_eq!(
            pieces,
            vec![
                with_closed("update", &[], "x", false),
                Piece::Text("y".into())
            ]
        );
        assert_eq!(warnings.len(), 1);
    }

    #[test]
    fn commented_out_commands_outside_are_dropped() {
        let (pieces, _) = run("a<!-- <get path=\"x\"/> -->b<!-- open");
        assert_eq!(
            pieces,
            vec![Piece::Text("a".into()), Piece::Text("b".into())]
        );
    }

    #[test]
    fn stray_tool_close_tags_outside_are_dropped() {
        let (pieces, _) = run("a</get>b</p>");
        assert_eq!(
            pieces,
            vec![Piece::Text("a".into()), Piece::Text("b</p>".into())]
        );
    }
}
