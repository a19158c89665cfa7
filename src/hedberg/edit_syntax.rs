//! Block edit syntaxes found in a `<set>` body: merge-conflict SEARCH/REPLACE, replace-only,
//! unified diff and `<old_text>`/`<new_text>` pairs.
//!
//! CRLF line breaks are accepted everywhere and the parsed texts use `\n`; the edit engine
//! gives replacement lines the target's own line ending.

mod unified;

use std::sync::LazyLock;

use regex::Regex;

use super::EditBlock;

static SEARCH_MARKER: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"<{3,} ?SEARCH\s*$").ok());
static SEPARATOR: LazyLock<Option<Regex>> = LazyLock::new(|| Regex::new(r"^={3,12}\s*$").ok());
static REPLACE_MARKER: LazyLock<Option<Regex>> =
    LazyLock::new(|| Regex::new(r"^>{3,12} ?REPLACE").ok());
static OLD_NEW_TEXT: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(r"(?s)<old_text>(.*?)</old_text>\s*<new_text>(.*?)</new_text>").ok()
});

/// Parses the block edit syntaxes of a `<set>` body; the first syntax that yields blocks wins,
/// in the order merge conflict, replace-only, unified diff, old_text/new_text.
///
/// An empty list means no block syntax was recognised (the body is then some other edit
/// form or a full-content write).
pub fn parse_edit_content(content: &str) -> Vec<EditBlock> {
    let normalized = content.replace("\r\n", "\n");
    let lines: Vec<&str> = normalized.split('\n').collect();
    let merge_blocks = merge_conflict_blocks(&lines);
    if !merge_blocks.is_empty() {
        return merge_blocks;
    }
    let replace_only = replace_only_blocks(&lines);
    if !replace_only.is_empty() {
        return replace_only;
    }
    let diff_blocks = unified::diff_blocks(&normalized, &lines);
    if !diff_blocks.is_empty() {
        return diff_blocks;
    }
    old_new_text_blocks(&normalized)
}

fn line_matches(pattern: &LazyLock<Option<Regex>>, line: &str) -> bool {
    pattern.as_ref().is_some_and(|regex| regex.is_match(line))
}

fn is_search_marker(line: &str) -> bool {
    line_matches(&SEARCH_MARKER, line)
}

fn is_separator(line: &str) -> bool {
    line_matches(&SEPARATOR, line)
}

fn is_replace_marker(line: &str) -> bool {
    line_matches(&REPLACE_MARKER, line)
}

fn position_after(lines: &[&str], start: usize, predicate: fn(&str) -> bool) -> Option<usize> {
    lines
        .iter()
        .enumerate()
        .skip(start)
        .find(|(_, line)| predicate(line))
        .map(|(index, _)| index)
}

fn joined(lines: &[&str], start: usize, end: usize) -> String {
    lines
        .get(start..end)
        .map(|part| part.join("\n"))
        .unwrap_or_default()
}

fn merge_conflict_blocks(lines: &[&str]) -> Vec<EditBlock> {
    let mut blocks = Vec::new();
    let mut cursor = 0;
    while let Some(marker) = position_after(lines, cursor, is_search_marker) {
        let Some(separator) = position_after(lines, marker + 1, is_separator) else {
            break;
        };
        let Some(replace_marker) = position_after(lines, separator + 1, is_replace_marker) else {
            break;
        };
        let search = joined(lines, marker + 1, separator);
        let replace = joined(lines, separator + 1, replace_marker);
        blocks.push(EditBlock::literal(search, replace));
        cursor = replace_marker + 1;
    }
    blocks
}

fn replace_only_blocks(lines: &[&str]) -> Vec<EditBlock> {
    let mut blocks = Vec::new();
    let mut cursor = 0;
    while let Some(separator) = position_after(lines, cursor, is_separator) {
        let Some(replace_marker) = position_after(lines, separator + 1, is_replace_marker) else {
            break;
        };
        blocks.push(EditBlock::replace_only(joined(
            lines,
            separator + 1,
            replace_marker,
        )));
        cursor = replace_marker + 1;
    }
    blocks
}

/// Layout newlines right inside the tags are not part of the text: `<old_text>\nfoo\n</old_text>`
/// means `foo`.
fn strip_layout_newlines(text: &str) -> String {
    let text = text.strip_prefix('\n').unwrap_or(text);
    text.strip_suffix('\n').unwrap_or(text).to_string()
}

fn old_new_text_blocks(content: &str) -> Vec<EditBlock> {
    let Some(regex) = OLD_NEW_TEXT.as_ref() else {
        return Vec::new();
    };
    regex
        .captures_iter(content)
        .map(|captures| {
            let old = captures.get(1).map_or("", |m| m.as_str());
            let new = captures.get(2).map_or("", |m| m.as_str());
            EditBlock::literal(strip_layout_newlines(old), strip_layout_newlines(new))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merge_conflict_collects_every_block() {
        let body = "<<<<<<< SEARCH\na\n=======\nb\n>>>>>>> REPLACE\nnoise\n<<< SEARCH\nc\nd\n===\n\n>>> REPLACE";
        assert_eq!(
            parse_edit_content(body),
            vec![EditBlock::literal("a", "b"), EditBlock::literal("c\nd", "")]
        );
    }

    #[test]
    fn crlf_markers_are_recognised() {
        let body = "<<<<<<< SEARCH\r\nold\r\nmore\r\n=======\r\nnew\r\n>>>>>>> REPLACE\r\n";
        assert_eq!(
            parse_edit_content(body),
            vec![EditBlock::literal("old\nmore", "new")]
        );
    }

    #[test]
    fn empty_sections_need_no_blank_line() {
        let body = "<<<<<<< SEARCH\n=======\n>>>>>>> REPLACE";
        assert_eq!(parse_edit_content(body), vec![EditBlock::literal("", "")]);
    }

    #[test]
    fn replace_only_blocks_have_no_search() {
        let body = "=======\nnew content\n>>>>>>> REPLACE\n=======\nmore\n>>>>>>> REPLACE";
        assert_eq!(
            parse_edit_content(body),
            vec![
                EditBlock::replace_only("new content"),
                EditBlock::replace_only("more")
            ]
        );
    }

    #[test]
    fn replace_only_marker_must_start_a_line() {
        assert!(parse_edit_content("x=======\nfull\n>>>>>>> REPLACE").is_empty());
    }

    #[test]
    fn old_text_new_text_pairs_drop_layout_newlines() {
        let body = "\n<old_text>\nfoo\n</old_text>\n<new_text>\nFOO\n</new_text>\n<old_text>a</old_text><new_text>b</new_text>";
        assert_eq!(
            parse_edit_content(body),
            vec![
                EditBlock::literal("foo", "FOO"),
                EditBlock::literal("a", "b")
            ]
        );
    }

    #[test]
    fn plain_text_has_no_blocks() {
        assert!(parse_edit_content("just some text\n=== heading").is_empty());
    }
}
