//! Which of the eight edit forms a `<set>` command uses, decided from its attributes and raw
//! body, and applying the result to a target's current content.

use std::sync::LazyLock;

use regex::Regex;

use super::{apply_blocks, parse_edit_content, parse_json_edit, parse_sed};
use super::{EditBlock, Edited, HedbergError};

/// What a `<set>` command asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SetRevision {
    /// Edit the current content with these blocks, in order.
    Edit(Vec<EditBlock>),
    /// Replace the whole content with this text.
    Write(String),
}

/// The `<set>` attributes that take part in choosing the edit form, after attribute healing
/// (a legacy `value` attribute is passed as `body`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SetAttributes<'a> {
    /// `search="…"`.
    pub search: Option<&'a str>,
    /// `replace="…"`.
    pub replace: Option<&'a str>,
    /// `body="…"` (or legacy `value="…"`).
    pub body: Option<&'a str>,
}

static STRUCTURED_MARKER: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"<{3,12} SEARCH|>{3,12} REPLACE|<old_text>").ok());

/// Decides the edit form; the first rule that applies wins:
/// 1. SEARCH/REPLACE, replace-only, unified diff or old_text/new_text blocks in the body;
/// 2. a JSON edit body (`{"search": …, "replace": …}` or `{search="…"}`);
/// 3. sed commands (`s/a/b/`, any delimiter, chains);
/// 4. a non-empty `search` attribute, replaced by the `replace` attribute or the body text;
/// 5. a `body` attribute together with body text: the attribute is searched, the text
///    replaces it;
/// 6. otherwise a full-content write of the trimmed body text (or the `body` attribute).
pub fn classify_set(attributes: &SetAttributes<'_>, raw_body: &str) -> SetRevision {
    let text = raw_body.trim();
    if has_structured_marker(text) {
        let blocks = parse_edit_content(raw_body);
        if !blocks.is_empty() {
            return SetRevision::Edit(blocks);
        }
    }
    if let Some(edit) = parse_json_edit(text) {
        return SetRevision::Edit(vec![EditBlock::literal(edit.search, edit.replace)]);
    }
    let sed_blocks = parse_sed(text);
    if !sed_blocks.is_empty() {
        return SetRevision::Edit(sed_blocks);
    }
    if let Some(search) = attributes.search.filter(|search| !search.is_empty()) {
        let replace = attributes.replace.unwrap_or(text);
        return SetRevision::Edit(vec![EditBlock::literal(search, replace)]);
    }
    if let Some(body) = attributes.body.filter(|body| !body.is_empty()) {
        if !text.is_empty() {
            return SetRevision::Edit(vec![EditBlock::literal(body, text)]);
        }
        return SetRevision::Write(body.to_string());
    }
    SetRevision::Write(text.to_string())
}

fn has_structured_marker(text: &str) -> bool {
    let is_diff = text.contains("@@") && (text.contains("\n-") || text.contains("\n+"));
    is_diff
        || STRUCTURED_MARKER
            .as_ref()
            .is_some_and(|marker| marker.is_match(text))
}

impl SetRevision {
    /// Applies the revision to the current content (see [`apply_blocks`]).
    pub fn apply(&self, current: &str) -> Result<Edited, HedbergError> {
        match self {
            Self::Edit(blocks) => apply_blocks(current, blocks),
            Self::Write(text) => Ok(Edited::clean(text.clone())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn classify(body: &str) -> SetRevision {
        classify_set(&SetAttributes::default(), body)
    }

    #[test]
    fn ladder_order() {
        assert_eq!(
            classify("\n<<<<<<< SEARCH\na\n=======\nb\n>>>>>>> REPLACE\n"),
            SetRevision::Edit(vec![EditBlock::literal("a", "b")])
        );
        assert_eq!(
            classify(r#"{"search":"a","replace":"b"}"#),
            SetRevision::Edit(vec![EditBlock::literal("a", "b")])
        );
        assert_eq!(
            classify(" s|a|b|g "),
            SetRevision::Edit(vec![EditBlock::sed("a", "b", "g")])
        );
        assert_eq!(classify("s/a"), SetRevision::Write("s/a".into()));
        assert_eq!(
            classify("<<<<<<< SEARCH\nunterminated"),
            SetRevision::Write("<<<<<<< SEARCH\nunterminated".into())
        );
    }

    #[test]
    fn attributes() {
        let search_only = SetAttributes {
            search: Some("b"),
            ..SetAttributes::default()
        };
        assert_eq!(
            classify_set(&search_only, ""),
            SetRevision::Edit(vec![EditBlock::literal("b", "")])
        );
        let with_replace = SetAttributes {
            search: Some("b"),
            replace: Some("c"),
            body: None,
        };
        assert_eq!(
            classify_set(&with_replace, "ignored"),
            SetRevision::Edit(vec![EditBlock::literal("b", "c")])
        );
        let value = SetAttributes {
            body: Some(":AI[]"),
            ..SetAttributes::default()
        };
        assert_eq!(
            classify_set(&value, " done "),
            SetRevision::Edit(vec![EditBlock::literal(":AI[]", "done")])
        );
        assert_eq!(classify_set(&value, ""), SetRevision::Write(":AI[]".into()));
    }

    #[test]
    fn write_and_apply() {
        let revision = classify("  export default {};\n");
        assert_eq!(
            revision.apply("old").expect("write").body,
            "export default {};"
        );
    }
}
