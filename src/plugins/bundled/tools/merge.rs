//! The `merge` text of a proposal: the change from old to new content as
//! `<<<<<<< SEARCH` / `=======` / `>>>>>>> REPLACE` blocks, one per diff hunk with three
//! lines of context, so a client (or the server on accept) can apply it to the file as it
//! is. A whole-content write is one block with an empty SEARCH.

use similar::{Algorithm, TextDiff};

use crate::hedberg::budget;

const SEARCH: &str = "<<<<<<< SEARCH";
const DIVIDER: &str = "=======";
const REPLACE: &str = ">>>>>>> REPLACE";
const CONTEXT_LINES: usize = 3;

/// The blocks turning `old` into `new`; `None` when nothing changes. Past the thread's
/// budget deadline the diff settles for coarser (still correct) blocks.
pub(crate) fn render(old: &str, new: &str) -> Option<String> {
    if old == new {
        return None;
    }
    if old.is_empty() {
        return Some(block("", new));
    }
    let diff = TextDiff::configure()
        .algorithm(Algorithm::Myers)
        .deadline(budget::current().deadline())
        .diff_lines(old, new);
    let old_lines = diff.old_slices();
    let new_lines = diff.new_slices();
    let blocks: Vec<String> = diff
        .grouped_ops(CONTEXT_LINES)
        .iter()
        .filter_map(|group| {
            let (first, last) = (group.first()?, group.last()?);
            let search = old_lines
                .get(first.old_range().start..last.old_range().end)?
                .concat();
            let replace = new_lines
                .get(first.new_range().start..last.new_range().end)?
                .concat();
            Some(block(trim_newline(&search), trim_newline(&replace)))
        })
        .collect();
    Some(blocks.join("\n"))
}

/// A write of the whole content.
pub(crate) fn whole(content: &str) -> String {
    block("", content)
}

fn block(search: &str, replace: &str) -> String {
    let mut text = String::from(SEARCH);
    for section in [search, DIVIDER, replace] {
        text.push('\n');
        text.push_str(section);
    }
    text.push('\n');
    text.push_str(REPLACE);
    text.replace(
        &format!("{SEARCH}\n\n{DIVIDER}"),
        &format!("{SEARCH}\n{DIVIDER}"),
    )
}

fn trim_newline(text: &str) -> &str {
    text.strip_suffix('\n').unwrap_or(text)
}

/// Applies `merge` to `body`: an empty SEARCH replaces everything; otherwise each SEARCH
/// is replaced at its first occurrence after the previous replacement. `None` when a
/// SEARCH is not found or the text is not merge blocks.
pub(crate) fn apply(body: &str, merge: &str) -> Option<String> {
    let blocks = parse(merge)?;
    let mut result = body.to_owned();
    let mut cursor = 0;
    for (search, replace) in blocks {
        if search.is_empty() {
            return Some(replace);
        }
        let found = cursor + result.get(cursor..)?.find(&search)?;
        result.replace_range(found..found + search.len(), &replace);
        cursor = found + replace.len();
    }
    Some(result)
}

fn parse(merge: &str) -> Option<Vec<(String, String)>> {
    let mut blocks = Vec::new();
    let mut lines = merge.split('\n');
    while let Some(line) = lines.next() {
        if line != SEARCH {
            continue;
        }
        let search = section(&mut lines, DIVIDER)?;
        let replace = section(&mut lines, REPLACE)?;
        blocks.push((search, replace));
    }
    (!blocks.is_empty()).then_some(blocks)
}

fn section<'a>(lines: &mut impl Iterator<Item = &'a str>, end: &str) -> Option<String> {
    let mut collected = Vec::new();
    for line in lines.by_ref() {
        if line == end {
            return Some(collected.join("\n"));
        }
        collected.push(line);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hunks_round_trip() {
        let old: String = (1..=30).map(|n| format!("line {n}\n")).collect();
        let new = old
            .replace("line 3\n", "line three\n")
            .replace("line 25\n", "");
        let merge = render(&old, &new).unwrap();
        assert_eq!(merge.matches(SEARCH).count(), 2);
        assert_eq!(apply(&old, &merge).unwrap(), new);
    }

    #[test]
    fn whole_writes_replace_everything() {
        assert_eq!(render("", "new\n").unwrap(), whole("new\n"));
        assert_eq!(apply("old", &whole("fresh")).unwrap(), "fresh");
        assert_eq!(render("same", "same"), None);
    }

    #[test]
    fn missing_search_is_refused() {
        let merge = render("a\nb\n", "a\nc\n").unwrap();
        assert_eq!(apply("x\ny\n", &merge), None);
        assert_eq!(apply("x", "not merge text"), None);
    }
}
