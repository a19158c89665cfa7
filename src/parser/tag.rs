//! Recognising one tool tag at a position: `<get path="a"/>`, `<set path=b>`, `</set>`.
//!
//! Only tool tags are ever tokenised; every other `<` is text, so bodies stay verbatim.
//! Attribute values are kept exactly as written (no entity decoding); names are lower-cased.

use super::tags::{Tag, TagSet};

/// An opening tool tag found in the text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct OpenTag {
    pub tool: Tag,
    /// Raw attributes in source order, names lower-cased, bare attributes with `""`.
    pub attrs: Vec<(String, String)>,
    pub self_closing: bool,
    /// Byte offset just past the tag.
    pub end: usize,
    /// An attribute value had no closing quote and was cut at the tag's end.
    pub repaired: bool,
}

/// A closing tool tag found in the text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct CloseTag {
    pub tool: Tag,
    pub start: usize,
    pub end: usize,
    /// The input ended before the tag's `>`.
    pub truncated: bool,
}

fn byte_at(text: &str, at: usize) -> Option<u8> {
    text.as_bytes().get(at).copied()
}

fn is_name_byte(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || matches!(byte, b'_' | b'-' | b':' | b'.')
}

fn skip_whitespace(text: &str, mut at: usize) -> usize {
    while byte_at(text, at).is_some_and(|byte| byte.is_ascii_whitespace()) {
        at += 1;
    }
    at
}

/// The tool named at `at` (just after `<` or `</`) and the offset past the name, when the
/// name is a whole tool name.
fn tool_name_at(text: &str, tags: &TagSet, at: usize) -> Option<(Tag, usize)> {
    let mut end = at;
    while byte_at(text, end).is_some_and(is_name_byte) {
        end += 1;
    }
    let tool = tags.find(text.get(at..end)?)?;
    match byte_at(text, end) {
        None | Some(b'/' | b'>') => Some((tool, end)),
        Some(byte) if byte.is_ascii_whitespace() => Some((tool, end)),
        Some(_) => None,
    }
}

/// Whether a tool tag (opening or closing) starts at `at`.
pub(crate) fn starts_tool_tag(text: &str, tags: &TagSet, at: usize) -> bool {
    if byte_at(text, at) != Some(b'<') {
        return false;
    }
    let name_start = if byte_at(text, at + 1) == Some(b'/') {
        at + 2
    } else {
        at + 1
    };
    tool_name_at(text, tags, name_start).is_some()
}

/// Parses a closing tool tag at `at`. `</update` at the very end of the input counts,
/// marked truncated.
pub(crate) fn close_tag_at(text: &str, tags: &TagSet, at: usize) -> Option<CloseTag> {
    if byte_at(text, at) != Some(b'<') || byte_at(text, at + 1) != Some(b'/') {
        return None;
    }
    let (tool, name_end) = tool_name_at(text, tags, at + 2)?;
    let after = skip_whitespace(text, name_end);
    match byte_at(text, after) {
        Some(b'>') => Some(CloseTag {
            tool,
            start: at,
            end: after + 1,
            truncated: false,
        }),
        None => Some(CloseTag {
            tool,
            start: at,
            end: after,
            truncated: true,
        }),
        Some(_) => None,
    }
}

/// Parses an opening tool tag at `at`. A tag cut off by the end of the input is not a tag:
/// a half-written command must not run.
pub(crate) fn open_tag_at(text: &str, tags: &TagSet, at: usize) -> Option<OpenTag> {
    if byte_at(text, at) != Some(b'<') {
        return None;
    }
    let (tool, mut cursor) = tool_name_at(text, tags, at + 1)?;
    let mut tag = OpenTag {
        tool,
        attrs: Vec::new(),
        self_closing: false,
        end: 0,
        repaired: false,
    };
    loop {
        cursor = skip_whitespace(text, cursor);
        match byte_at(text, cursor)? {
            b'>' => {
                tag.end = cursor + 1;
                return Some(tag);
            }
            b'/' if byte_at(text, cursor + 1) == Some(b'>') => {
                tag.self_closing = true;
                tag.end = cursor + 2;
                return Some(tag);
            }
            b'/' => cursor += 1,
            b'<' => return None,
            _ => match attribute_at(text, tags, &mut tag, cursor)? {
                Attribute::Next(next) => cursor = next,
                Attribute::Ended => return Some(tag),
            },
        }
    }
}

/// What reading one attribute of an open tag came to.
enum Attribute {
    /// Read; what follows it starts at this byte.
    Next(usize),
    /// Its value ran to the tag's end (`tag.end` is set).
    Ended,
}

/// Reads the attribute at `cursor` into `tag`: a bare name, a quoted value (an unterminated
/// one ends the tag, repaired) or an unquoted one (`/>` right after it ends the tag). `None`
/// when the input ends or the tag is broken.
fn attribute_at(text: &str, tags: &TagSet, tag: &mut OpenTag, cursor: usize) -> Option<Attribute> {
    let mut cursor = cursor;
    let name_start = cursor;
    while byte_at(text, cursor).is_some_and(|byte| {
        !byte.is_ascii_whitespace() && !matches!(byte, b'=' | b'>' | b'/' | b'<')
    }) {
        cursor += 1;
    }
    let name = text.get(name_start..cursor)?.to_ascii_lowercase();
    let after_name = skip_whitespace(text, cursor);
    if byte_at(text, after_name) != Some(b'=') {
        push_attr(&mut tag.attrs, name, String::new());
        return Some(Attribute::Next(cursor));
    }
    let value_start = skip_whitespace(text, after_name + 1);
    match byte_at(text, value_start)? {
        quote @ (b'"' | b'\'') => match quoted_value(text, tags, value_start + 1, quote) {
            QuotedValue::Closed { value, end } => {
                push_attr(&mut tag.attrs, name, value.to_owned());
                Some(Attribute::Next(end))
            }
            QuotedValue::Unterminated { value, gt } => {
                tag.repaired = true;
                let trimmed = value.trim_end();
                tag.self_closing = trimmed.ends_with('/');
                let value = trimmed.trim_end_matches('/').trim_end();
                push_attr(&mut tag.attrs, name, value.to_owned());
                tag.end = gt + 1;
                Some(Attribute::Ended)
            }
            QuotedValue::Broken => None,
        },
        _ => {
            let mut value_end = value_start;
            while byte_at(text, value_end)
                .is_some_and(|byte| !byte.is_ascii_whitespace() && !matches!(byte, b'>' | b'<'))
            {
                value_end += 1;
            }
            let mut value = text.get(value_start..value_end)?;
            if byte_at(text, value_end) == Some(b'>') && value.ends_with('/') {
                value = value.trim_end_matches('/');
                tag.self_closing = true;
                push_attr(&mut tag.attrs, name, value.to_owned());
                tag.end = value_end + 1;
                return Some(Attribute::Ended);
            }
            push_attr(&mut tag.attrs, name, value.to_owned());
            Some(Attribute::Next(value_end))
        }
    }
}

/// The most attributes an open tag keeps: no tool reads more than a few, and a reply with
/// tens of thousands in one tag must not cost a comparison of each with all before it.
const MAX_ATTRIBUTES: usize = 32;

/// Keeps an attribute unless the tag already has one of that name (the first wins) or is
/// full ([`MAX_ATTRIBUTES`]; the rest are read past and dropped).
fn push_attr(attrs: &mut Vec<(String, String)>, name: String, value: String) {
    if attrs.len() < MAX_ATTRIBUTES && !attrs.iter().any(|(existing, _)| *existing == name) {
        attrs.push((name, value));
    }
}

enum QuotedValue<'a> {
    Closed { value: &'a str, end: usize },
    Unterminated { value: &'a str, gt: usize },
    Broken,
}

/// Reads a quoted value starting after its opening quote. A value that runs past a `>` into
/// another tool tag (or to the end of input) before its closing quote was left open by the
/// model; it is cut at that first `>`, which is where the model meant the tag to end.
fn quoted_value<'t>(text: &'t str, tags: &TagSet, start: usize, quote: u8) -> QuotedValue<'t> {
    let bytes = text.as_bytes();
    let mut first_gt = None;
    let mut at = start;
    while let Some(&byte) = bytes.get(at) {
        if byte == quote {
            return match text.get(start..at) {
                Some(value) => QuotedValue::Closed { value, end: at + 1 },
                None => QuotedValue::Broken,
            };
        }
        if byte == b'>' && first_gt.is_none() {
            first_gt = Some(at);
        }
        if byte == b'<' && first_gt.is_some() && starts_tool_tag(text, tags, at) {
            break;
        }
        at += 1;
    }
    match first_gt.and_then(|gt| Some((text.get(start..gt)?, gt))) {
        Some((value, gt)) => QuotedValue::Unterminated { value, gt },
        None => QuotedValue::Broken,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parser::tags::{bundled, bundled_tag};

    fn attrs(tag: &OpenTag) -> Vec<(&str, &str)> {
        tag.attrs
            .iter()
            .map(|(name, value)| (name.as_str(), value.as_str()))
            .collect()
    }

    #[test]
    fn reads_quoted_unquoted_and_bare_attributes() {
        let text = r#"<GET Path="a b" line=3 preview body='x"y'/>"#;
        let tag = open_tag_at(text, &bundled(), 0).unwrap();
        assert_eq!(tag.tool, bundled_tag("get"));
        assert!(tag.self_closing);
        assert_eq!(tag.end, text.len());
        assert_eq!(
            attrs(&tag),
            vec![
                ("path", "a b"),
                ("line", "3"),
                ("preview", ""),
                ("body", "x\"y")
            ]
        );
    }

    #[test]
    fn a_tag_keeps_its_first_attributes_up_to_the_bound() {
        let many: String = (0..20_000).map(|n| format!(" a{n}=\"{n}\"")).collect();
        let text = format!("<get path=\"src/x\" path=\"other\"{many}/>");
        let tag = open_tag_at(&text, &bundled(), 0).unwrap();
        assert!(tag.self_closing);
        assert_eq!(tag.end, text.len(), "the dropped attributes are read past");
        assert_eq!(tag.attrs.len(), MAX_ATTRIBUTES);
        assert_eq!(tag.attrs[0], ("path".to_string(), "src/x".to_string()));
        assert_eq!(tag.attrs[1], ("a0".to_string(), "0".to_string()));
        let last = MAX_ATTRIBUTES - 2;
        assert_eq!(tag.attrs[MAX_ATTRIBUTES - 1].0, format!("a{last}"));
    }

    #[test]
    fn unquoted_value_before_slash_gt_self_closes() {
        let tag = open_tag_at("<get path=src/a.js/>", &bundled(), 0).unwrap();
        assert!(tag.self_closing);
        assert_eq!(attrs(&tag), vec![("path", "src/a.js")]);
    }

    #[test]
    fn non_tool_and_truncated_tags_are_not_tags() {
        assert_eq!(open_tag_at("<getter>", &bundled(), 0), None);
        assert_eq!(open_tag_at("<div>", &bundled(), 0), None);
        assert_eq!(open_tag_at("<get path=\"a\"", &bundled(), 0), None);
        assert_eq!(open_tag_at("<3", &bundled(), 0), None);
    }

    #[test]
    fn unterminated_quote_is_cut_at_the_tag_end() {
        let text = "<get path=\"a.js/>\n<get path=\"b.js\"/>";
        let tag = open_tag_at(text, &bundled(), 0).unwrap();
        assert!(tag.repaired);
        assert!(tag.self_closing);
        assert_eq!(attrs(&tag), vec![("path", "a.js")]);
        assert_eq!(text.get(tag.end..), Some("\n<get path=\"b.js\"/>"));
    }

    #[test]
    fn close_tags_allow_space_and_truncation() {
        let close = close_tag_at("</Update >", &bundled(), 0).unwrap();
        assert_eq!(
            (close.tool, close.end, close.truncated),
            (bundled_tag("update"), 10, false)
        );
        let cut = close_tag_at("</update", &bundled(), 0).unwrap();
        assert!(cut.truncated);
        assert_eq!(close_tag_at("</p>", &bundled(), 0), None);
    }
}
