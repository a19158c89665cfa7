//! Which of the eight edit forms a `<set>` command uses, decided from its attributes and raw
//! body, and applying the result to a target's current content.

use std::sync::LazyLock;

use regex::Regex;

use super::{apply_blocks, parse_edit_content, parse_json_edit, parse_sed};
use super::{EditBlock, Edited, HedbergError};

/// What a `<set>` command asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SetRevision {
    /// Edit the current content with these blocks, in order (structured edit blocks, or a
    /// chain of sed commands).
    Blocks(Vec<EditBlock>),
    /// Edit the current content with one search/replace (JSON, one sed command, or the
    /// `search`/`body` attributes).
    Replace(EditBlock),
    /// Replace the whole content with this text (empty: only fidelity or summary change).
    Write(String),
}

/// The ladder's decision, and whether it consumed the `body` attribute (as the search
/// text or as the written content) rather than leaving it a content filter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Classified {
    /// What to do to the target.
    pub revision: SetRevision,
    /// The `body` attribute became part of the revision.
    pub body_attribute_used: bool,
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
pub fn classify_set(attributes: &SetAttributes<'_>, raw_body: &str) -> Classified {
    let text = raw_body.trim();
    let kept = |revision| Classified {
        revision,
        body_attribute_used: false,
    };
    if has_structured_marker(text) {
        let blocks = parse_edit_content(raw_body);
        if !blocks.is_empty() {
            return kept(SetRevision::Blocks(blocks));
        }
    }
    if let Some(edit) = parse_json_edit(text) {
        return kept(SetRevision::Replace(EditBlock::literal(
            edit.search,
            edit.replace,
        )));
    }
    let mut sed_blocks = parse_sed(text);
    if sed_blocks.len() > 1 {
        return kept(SetRevision::Blocks(sed_blocks));
    }
    if let Some(block) = sed_blocks.pop() {
        return kept(SetRevision::Replace(block));
    }
    if let Some(search) = attributes.search.filter(|search| !search.is_empty()) {
        let replace = attributes.replace.unwrap_or(text);
        return kept(SetRevision::Replace(EditBlock::literal(search, replace)));
    }
    let used = |revision| Classified {
        revision,
        body_attribute_used: true,
    };
    if let Some(body) = attributes.body.filter(|body| !body.is_empty()) {
        if !text.is_empty() {
            return used(SetRevision::Replace(EditBlock::literal(body, text)));
        }
        return used(SetRevision::Write(body.to_string()));
    }
    kept(SetRevision::Write(text.to_string()))
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
            Self::Blocks(blocks) => apply_blocks(current, blocks),
            Self::Replace(block) => apply_blocks(current, std::slice::from_ref(block)),
            Self::Write(text) => Ok(Edited::clean(text.clone())),
        }
    }

    /// Whether it edits the current content (as opposed to replacing it).
    pub fn is_edit(&self) -> bool {
        !matches!(self, Self::Write(_))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn classify(body: &str) -> SetRevision {
        classify_set(&SetAttributes::default(), body).revision
    }

    #[test]
    fn ladder_order() {
        assert_eq!(
            classify("\n<<<<<<< SEARCH\na\n=======\nb\n>>>>>>> REPLACE\n"),
            SetRevision::Blocks(vec![EditBlock::literal("a", "b")])
        );
        assert_eq!(
            classify(r#"{"search":"a","replace":"b"}"#),
            SetRevision::Replace(EditBlock::literal("a", "b"))
        );
        assert_eq!(
            classify(" s|a|b|g "),
            SetRevision::Replace(EditBlock::sed("a", "b", "g"))
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
            classify_set(&search_only, "").revision,
            SetRevision::Replace(EditBlock::literal("b", ""))
        );
        let with_replace = SetAttributes {
            search: Some("b"),
            replace: Some("c"),
            body: None,
        };
        assert_eq!(
            classify_set(&with_replace, "ignored").revision,
            SetRevision::Replace(EditBlock::literal("b", "c"))
        );
        let value = SetAttributes {
            body: Some(":AI[]"),
            ..SetAttributes::default()
        };
        assert_eq!(
            classify_set(&value, " done ").revision,
            SetRevision::Replace(EditBlock::literal(":AI[]", "done"))
        );
        assert_eq!(
            classify_set(&value, ""),
            Classified {
                revision: SetRevision::Write(":AI[]".into()),
                body_attribute_used: true
            }
        );
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
