//! The edit engine behind every `<set>` edit: a sed step, an exact-text step, and the
//! tolerant matcher, applied so that an ambiguous SEARCH edits nothing and a CRLF body
//! stays CRLF.

use super::budget;
use super::matcher;
use super::sed::SedProgram;
use super::{EditBlock, HedbergError};

/// A successfully edited body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Edited {
    /// The new content.
    pub body: String,
    /// Model-facing notes about how the edit was healed (indentation), if any.
    pub warning: Option<String>,
}

impl Edited {
    pub(crate) fn clean(body: String) -> Self {
        Self {
            body,
            warning: None,
        }
    }
}

/// Applies one block to `body`.
///
/// * replace-only (`search: None`): the replacement is the new body;
/// * blank SEARCH: the replacement is appended as new last line(s);
/// * sed: the regex runs line by line (first match per line unless `g`); a search that is not
///   a valid regex or matches nowhere is then tried as literal text;
/// * literal: exactly one verbatim occurrence is replaced, several are refused
///   ([`HedbergError::AmbiguousSearch`]); none falls back to the tolerant matcher
///   (unescaping, trimmed lines, indentation healing).
///
/// Replacement text is verbatim (only sed expands `\1`…`\9`). A body whose every line ends
/// in CRLF keeps CRLF, replacement lines included.
pub fn apply_edit(body: &str, block: &EditBlock) -> Result<Edited, HedbergError> {
    let Some(search) = block.search.as_deref() else {
        return Ok(Edited::clean(block.replace.clone()));
    };
    if !is_crlf_text(body) {
        return edit_lf(body, search, &block.replace, block);
    }
    let edited = edit_lf(&to_lf(body), &to_lf(search), &to_lf(&block.replace), block)?;
    Ok(Edited {
        body: edited.body.replace('\n', "\r\n"),
        warning: edited.warning,
    })
}

/// Applies blocks one after another, each on the previous result. The first error aborts
/// and nothing is applied; so does running out of the thread's budget (each block costs a
/// scan of the text, and no intermediate text may pass the output cap). A first block that is replace-only replaces the whole body and
/// the others are ignored. Warnings of all blocks are joined.
pub fn apply_blocks(body: &str, blocks: &[EditBlock]) -> Result<Edited, HedbergError> {
    if let Some(EditBlock {
        search: None,
        replace,
        ..
    }) = blocks.first()
    {
        return Ok(Edited::clean(replace.clone()));
    }
    let budget = budget::current();
    let mut current = body.to_string();
    let mut warnings: Vec<String> = Vec::new();
    for block in blocks {
        budget.charge_bytes(current.len())?;
        let edited = apply_edit(&current, block)?;
        budget.check_output(edited.body.len())?;
        current = edited.body;
        warnings.extend(edited.warning);
    }
    Ok(Edited {
        body: current,
        warning: (!warnings.is_empty()).then(|| warnings.join(" ")),
    })
}

/// The tolerant matcher alone (no sed, no exact-text step): what runs when the SEARCH text
/// does not occur verbatim.
pub fn apply_tolerant(body: &str, search: &str, replace: &str) -> Result<Edited, HedbergError> {
    if !is_crlf_text(body) {
        return matcher::match_and_patch(body, search, replace);
    }
    let edited = matcher::match_and_patch(&to_lf(body), &to_lf(search), &to_lf(replace))?;
    Ok(Edited {
        body: edited.body.replace('\n', "\r\n"),
        warning: edited.warning,
    })
}

fn edit_lf(
    body: &str,
    search: &str,
    replace: &str,
    block: &EditBlock,
) -> Result<Edited, HedbergError> {
    if block.sed && !search.is_empty() {
        let patched = SedProgram::compile(search, replace, &block.flags)
            .ok()
            .and_then(|program| program.apply(body));
        if let Some(limit) = budget::current().exceeded() {
            return Err(limit.into());
        }
        if let Some(patched) = patched {
            return Ok(Edited::clean(patched));
        }
    }
    if matcher::is_blank(search) {
        return Ok(matcher::append(body, replace));
    }
    match body.matches(search).take(2).count() {
        0 => matcher::match_and_patch(body, search, replace),
        1 => Ok(Edited::clean(body.replacen(search, replace, 1))),
        _ => Err(HedbergError::AmbiguousSearch {
            locations: body.matches(search).count(),
        }),
    }
}

/// Whether every line break of `text` is CRLF (and there is at least one).
fn is_crlf_text(text: &str) -> bool {
    let line_feeds = text.matches('\n').count();
    line_feeds > 0 && text.matches("\r\n").count() == line_feeds
}

fn to_lf(text: &str) -> String {
    text.replace("\r\n", "\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_edit_is_verbatim() {
        let edited = apply_edit("price: 5", &EditBlock::literal("5", "$$10 $&")).expect("edit");
        assert_eq!(edited, Edited::clean("price: $$10 $&".into()));
    }

    #[test]
    fn ambiguous_exact_edit_is_refused() {
        let error = apply_edit("a;\na;\na;\n", &EditBlock::literal("a;", "b;")).unwrap_err();
        assert_eq!(error, HedbergError::AmbiguousSearch { locations: 3 });
        assert!(error.to_string().contains("matched 3 locations"));
    }

    #[test]
    fn crlf_body_stays_crlf() {
        let edited =
            apply_edit("a\r\nb\r\nc\r\n", &EditBlock::literal("b\nc", "x\ny")).expect("edit");
        assert_eq!(edited.body, "a\r\nx\r\ny\r\n");
        let healed = apply_edit("  a\r\n  b\r\n", &EditBlock::literal("b", "c")).expect("edit");
        assert_eq!(healed.body, "  a\r\n  c\r\n");
    }

    #[test]
    fn sed_falls_back_to_literal_text() {
        let edited = apply_edit("foo(", &EditBlock::sed("foo(", "bar", "")).expect("edit");
        assert_eq!(edited.body, "bar");
        let missing = apply_edit("abc", &EditBlock::sed("z+", "y", "g")).unwrap_err();
        assert_eq!(missing, HedbergError::SearchNotFound);
    }

    #[test]
    fn blocks_apply_in_order_and_abort_on_error() {
        let blocks = [EditBlock::literal("a", "b"), EditBlock::literal("b", "c")];
        assert_eq!(apply_blocks("a", &blocks).expect("edit").body, "c");
        let failing = [EditBlock::literal("a", "b"), EditBlock::literal("zzz", "c")];
        assert_eq!(
            apply_blocks("a", &failing),
            Err(HedbergError::SearchNotFound)
        );
        let replace_only = [EditBlock::replace_only("new"), EditBlock::literal("x", "y")];
        assert_eq!(
            apply_blocks("old", &replace_only).expect("edit").body,
            "new"
        );
    }

    #[test]
    fn empty_body_has_nothing_to_find() {
        assert_eq!(
            apply_edit("", &EditBlock::literal("y = 1", "y = 2")),
            Err(HedbergError::SearchNotFound)
        );
    }
}
