//! Rendering one row as a tag: attributes in a fixed order, empty ones left out.
//!
//! Bodies are inserted verbatim (the model must see code as it is). Attribute values cannot
//! hold a `"` without breaking the tag, so it becomes `'`.

use crate::context::ContextRow;

/// Longest `summary="…"` taken from an attribute.
pub(super) const SUMMARY_LIMIT: usize = 80;

/// A tag being built.
pub(super) struct Tag<'a> {
    name: &'a str,
    attributes: String,
}

impl<'a> Tag<'a> {
    /// A tag named `name` with no attributes yet.
    pub(super) fn new(name: &'a str) -> Tag<'a> {
        Tag {
            name,
            attributes: String::new(),
        }
    }

    /// Adds `name="value"`, always.
    pub(super) fn attribute(mut self, name: &str, value: &str) -> Tag<'a> {
        self.attributes.push(' ');
        self.attributes.push_str(name);
        self.attributes.push_str("=\"");
        self.attributes.push_str(&value.replace('"', "'"));
        self.attributes.push('"');
        self
    }

    /// Adds `name="value"` unless the value is empty.
    pub(super) fn text(self, name: &str, value: Option<&str>) -> Tag<'a> {
        match value {
            Some(value) if !value.is_empty() => self.attribute(name, value),
            _ => self,
        }
    }

    /// Adds `name="number"` unless the number is 0.
    pub(super) fn number(self, name: &str, value: i64) -> Tag<'a> {
        if value == 0 {
            return self;
        }
        self.attribute(name, &value.to_string())
    }

    /// `<name …>body</name>`, or `<name …/>` when the body is empty.
    pub(super) fn close(self, body: &str) -> String {
        if body.is_empty() {
            return format!("<{}{}/>", self.name, self.attributes);
        }
        self.wrap(body)
    }

    /// `<name …>body</name>`, even with an empty body.
    pub(super) fn wrap(self, body: &str) -> String {
        format!("<{0}{1}>{2}</{0}>", self.name, self.attributes, body)
    }
}

/// The first `limit` characters of `text`.
pub(super) fn cut(text: &str, limit: usize) -> &str {
    match text.char_indices().nth(limit) {
        Some((index, _)) => text.get(..index).unwrap_or(text),
        None => text,
    }
}

/// The model-authored summary of a row, cut to [`SUMMARY_LIMIT`].
pub(super) fn summary_attribute(row: &ContextRow) -> Option<&str> {
    row.attribute("summary")
        .map(|summary| cut(summary, SUMMARY_LIMIT))
}

/// What a history row is about: the target the command named, else its own path.
pub(super) fn target(row: &ContextRow) -> &str {
    ["path", "file", "command", "question"]
        .iter()
        .find_map(|name| row.attribute(name).filter(|value| !value.is_empty()))
        .unwrap_or(&row.path)
}

/// Removes `<scheme>://turn_<n>/` prefixes: result-path noise in a one-line summary.
pub(super) fn strip_result_prefixes(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(found) = rest.find("://turn_") {
        let (before, after) = rest.split_at(found);
        let scheme_start = before
            .rfind(|character: char| !(character.is_ascii_alphanumeric() || character == '_'))
            .map_or(0, |index| index + 1);
        let digits = after
            .get("://turn_".len()..)
            .unwrap_or("")
            .chars()
            .take_while(char::is_ascii_digit)
            .count();
        let tail = after.get("://turn_".len() + digits..).unwrap_or("");
        let is_prefix = scheme_start < before.len() && digits > 0 && tail.starts_with('/');
        if is_prefix {
            out.push_str(before.get(..scheme_start).unwrap_or(""));
            rest = tail.get(1..).unwrap_or("");
        } else {
            out.push_str(before);
            out.push_str("://turn_");
            rest = after.get("://turn_".len()..).unwrap_or("");
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_attributes_are_left_out_and_quotes_are_softened() {
        let tag = Tag::new("get")
            .attribute("path", "a\"b")
            .number("turn", 0)
            .number("status", 200)
            .text("summary", Some(""))
            .text("fidelity", Some("full"));
        assert_eq!(
            tag.close(""),
            "<get path=\"a'b\" status=\"200\" fidelity=\"full\"/>"
        );
        assert_eq!(Tag::new("unknown").wrap(""), "<unknown></unknown>");
        assert_eq!(Tag::new("known").close("x"), "<known>x</known>");
    }

    #[test]
    fn cut_counts_characters() {
        assert_eq!(cut("héllo", 2), "hé");
        assert_eq!(cut("hi", 5), "hi");
    }

    #[test]
    fn result_prefixes_are_removed_only_when_complete() {
        assert_eq!(
            strip_result_prefixes("# get get://turn_12/known%3A//*"),
            "# get known%3A//*"
        );
        assert_eq!(
            strip_result_prefixes("see ://turn_1/x and set://turn_x/y"),
            "see ://turn_1/x and set://turn_x/y"
        );
        assert_eq!(strip_result_prefixes("sh://turn_3/"), "");
    }
}
