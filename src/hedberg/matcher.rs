//! The whitespace-tolerant fallback matcher used when a SEARCH text is not found verbatim:
//! regex-unescaping, line-anchored exact match, blank-SEARCH append, trimmed line-by-line
//! match, and indentation healing of the replacement.

mod healing;

use std::collections::HashMap;

use super::{Edited, HedbergError};

/// Occurrences examined while looking for line-anchored ones. Bounds the work on periodic
/// texts (overlapping occurrences); the count past it is only reported, never acted on.
const MAX_EXAMINED_OCCURRENCES: usize = 256;

/// Applies `replace` at the one place `search` matches tolerantly. Several matches are
/// refused ([`HedbergError::AmbiguousSearch`]); none is [`HedbergError::SearchNotFound`].
pub(crate) fn match_and_patch(
    body: &str,
    search: &str,
    replace: &str,
) -> Result<Edited, HedbergError> {
    if is_blank(search) {
        return Ok(append(body, replace));
    }
    let unescaped = regex_unescape(search);
    let search = if unescaped != search && body.contains(&unescaped) {
        unescaped.as_str()
    } else {
        search
    };
    let anchored = line_anchored_occurrences(body, search);
    match anchored.as_slice() {
        [only] => {
            let mut patched = String::with_capacity(body.len() + replace.len());
            patched.push_str(body.get(..*only).unwrap_or_default());
            patched.push_str(replace);
            patched.push_str(body.get(only + search.len()..).unwrap_or_default());
            return Ok(Edited::clean(patched));
        }
        [] => {}
        several => {
            return Err(HedbergError::AmbiguousSearch {
                locations: several.len(),
            })
        }
    }
    let body_lines: Vec<&str> = body.split('\n').collect();
    let range = trimmed_line_match(&body_lines, search)?;
    Ok(healing::splice(&body_lines, range, search, replace))
}

/// Whether a SEARCH text has nothing but whitespace (such a SEARCH appends).
pub(crate) fn is_blank(text: &str) -> bool {
    trim(text).is_empty()
}

/// Appends `replace` as new last line(s): a line break first when the body lacks one, and one
/// after.
pub(crate) fn append(body: &str, replace: &str) -> Edited {
    let mut patched = String::with_capacity(body.len() + replace.len() + 2);
    patched.push_str(body);
    if !body.is_empty() && !body.ends_with('\n') {
        patched.push('\n');
    }
    patched.push_str(replace);
    patched.push('\n');
    Edited::clean(patched)
}

/// Trims whitespace the way the model's tools do, the byte-order mark included.
pub(crate) fn trim(text: &str) -> &str {
    text.trim_matches(|c: char| c.is_whitespace() || c == '\u{feff}')
}

/// Drops a backslash before regex punctuation: models sometimes escape SEARCH text.
fn regex_unescape(search: &str) -> String {
    let mut out = String::with_capacity(search.len());
    let mut chars = search.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\' {
            if let Some(&next) = chars.peek() {
                if "[](){}.*+?^$|\\".contains(next) {
                    out.push(next);
                    chars.next();
                    continue;
                }
            }
        }
        out.push(c);
    }
    out
}

/// Byte offsets where `search` occurs starting a line (overlapping occurrences count).
fn line_anchored_occurrences(body: &str, search: &str) -> Vec<usize> {
    let mut found = Vec::new();
    let mut from = 0;
    for _ in 0..MAX_EXAMINED_OCCURRENCES {
        let Some(offset) = body.get(from..).and_then(|rest| rest.find(search)) else {
            break;
        };
        let at = from + offset;
        if at == 0 || body.as_bytes().get(at - 1) == Some(&b'\n') {
            found.push(at);
        }
        from = at
            + body
                .get(at..)
                .and_then(|rest| rest.chars().next())
                .map_or(1, char::len_utf8);
    }
    found
}

/// Line range (first, last, inclusive) where the trimmed, non-blank SEARCH lines equal
/// consecutive non-blank body lines (blank body lines in between are skipped).
fn trimmed_line_match(body_lines: &[&str], search: &str) -> Result<(usize, usize), HedbergError> {
    let mut ids: HashMap<&str, usize> = HashMap::new();
    let search_tokens: Vec<usize> = search
        .split('\n')
        .map(trim)
        .filter(|token| !token.is_empty())
        .map(|token| {
            let next = ids.len();
            *ids.entry(token).or_insert(next)
        })
        .collect();
    let unknown = usize::MAX;
    let (positions, body_tokens): (Vec<usize>, Vec<usize>) = body_lines
        .iter()
        .enumerate()
        .map(|(index, line)| (index, trim(line)))
        .filter(|(_, token)| !token.is_empty())
        .map(|(index, token)| (index, ids.get(token).copied().unwrap_or(unknown)))
        .unzip();
    let starts = find_all(&body_tokens, &search_tokens);
    match starts.as_slice() {
        [] => Err(HedbergError::SearchNotFound),
        [start] => {
            let first = positions.get(*start).copied();
            let last = positions.get(start + search_tokens.len() - 1).copied();
            first.zip(last).ok_or(HedbergError::SearchNotFound)
        }
        several => Err(HedbergError::AmbiguousSearch {
            locations: several.len(),
        }),
    }
}

/// Every (overlapping) start of `needle` in `haystack`, in linear time (Knuth–Morris–Pratt).
fn find_all(haystack: &[usize], needle: &[usize]) -> Vec<usize> {
    if needle.is_empty() || needle.len() > haystack.len() {
        return Vec::new();
    }
    let mut failure = vec![0usize; needle.len()];
    let mut matched = 0;
    for index in 1..needle.len() {
        while matched > 0 && needle.get(index) != needle.get(matched) {
            matched = failure.get(matched - 1).copied().unwrap_or(0);
        }
        if needle.get(index) == needle.get(matched) {
            matched += 1;
        }
        if let Some(slot) = failure.get_mut(index) {
            *slot = matched;
        }
    }
    let mut starts = Vec::new();
    matched = 0;
    for (index, token) in haystack.iter().enumerate() {
        while matched > 0 && needle.get(matched) != Some(token) {
            matched = failure.get(matched - 1).copied().unwrap_or(0);
        }
        if needle.get(matched) == Some(token) {
            matched += 1;
        }
        if matched == needle.len() {
            starts.push(index + 1 - needle.len());
            matched = failure.get(matched - 1).copied().unwrap_or(0);
        }
    }
    starts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kmp_finds_overlapping_starts() {
        assert_eq!(find_all(&[1, 1, 1, 2, 1, 1], &[1, 1]), vec![0, 1, 4]);
        assert_eq!(find_all(&[1, 2, 1, 2, 1], &[1, 2, 1]), vec![0, 2]);
        assert!(find_all(&[1], &[1, 1]).is_empty());
    }

    #[test]
    fn unescape_only_touches_regex_punctuation() {
        assert_eq!(regex_unescape(r"foo\(1\) \d \\"), r"foo(1) \d \");
    }

    #[test]
    fn anchored_occurrences_overlap() {
        assert_eq!(line_anchored_occurrences("a\na\nxa", "a\na"), vec![0]);
        assert_eq!(line_anchored_occurrences("ab\nab\n", "ab"), vec![0, 3]);
        assert_eq!(line_anchored_occurrences("é\né", "é"), vec![0, 3]);
    }

    #[test]
    fn blank_lines_inside_the_match_are_covered() {
        let lines = vec!["x", "  a", "", "  b", "y"];
        assert_eq!(trimmed_line_match(&lines, "a\nb"), Ok((1, 3)));
        assert_eq!(
            trimmed_line_match(&lines, "a\nc"),
            Err(HedbergError::SearchNotFound)
        );
    }

    #[test]
    fn append_adds_line_breaks() {
        assert_eq!(append("a", "b").body, "a\nb\n");
        assert_eq!(append("a\n", "b").body, "a\nb\n");
        assert_eq!(append("", "b").body, "b\n");
    }
}
