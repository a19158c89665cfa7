//! Splicing a tolerant match: the replacement takes the file's indentation when the SEARCH
//! block's differs, and the model is told so.

use crate::hedberg::Edited;

/// Replaces body lines `first..=last` by `replace`, re-indented to the file's style.
pub(super) fn splice(
    body_lines: &[&str],
    (first, last): (usize, usize),
    search: &str,
    replace: &str,
) -> Edited {
    let file_indent = body_lines
        .get(first..=last)
        .unwrap_or_default()
        .iter()
        .find(|line| !super::is_blank(line))
        .map_or("", |line| leading_whitespace(line));
    let search_indent = search
        .split('\n')
        .find(|line| !super::is_blank(line))
        .map_or("", leading_whitespace);
    let (replacement, warning) = if file_indent == search_indent {
        (replace.to_string(), None)
    } else {
        (
            reindent(replace, search_indent, file_indent),
            Some(healing_warning(file_indent)),
        )
    };
    let before = body_lines.get(..first).unwrap_or_default();
    let after = body_lines.get(last + 1..).unwrap_or_default();
    let mut pieces: Vec<&str> = Vec::with_capacity(before.len() + after.len() + 1);
    pieces.extend_from_slice(before);
    pieces.push(&replacement);
    pieces.extend_from_slice(after);
    Edited {
        body: pieces.join("\n"),
        warning,
    }
}

fn leading_whitespace(line: &str) -> &str {
    let content = line.trim_start_matches(|c: char| c.is_whitespace() || c == '\u{feff}');
    &line[..line.len() - content.len()]
}

fn reindent(replace: &str, search_indent: &str, file_indent: &str) -> String {
    replace
        .split('\n')
        .map(|line| {
            if super::is_blank(line) {
                line.to_string()
            } else if let Some(rest) = line.strip_prefix(search_indent) {
                format!("{file_indent}{rest}")
            } else {
                format!("{file_indent}{}", line.trim_start())
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn healing_warning(file_indent: &str) -> String {
    let shown: String = file_indent
        .chars()
        .map(|c| match c {
            '\t' => "\\t".to_string(),
            ' ' => "s".to_string(),
            other => other.to_string(),
        })
        .collect();
    format!(
        "Indentation healing applied. The file has different indentation ('{shown}') than your SEARCH block. Please try to match indentation exactly in future edits."
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_indentation_survives() {
        let lines = ["    if (x) {", "        return 1;", "    }", ""];
        let edited = splice(
            &lines,
            (0, 2),
            "if (x) {\n    return 1;\n}",
            "if (x) {\n    return 2;\n\n}",
        );
        assert_eq!(edited.body, "    if (x) {\n        return 2;\n\n    }\n");
        assert!(edited
            .warning
            .is_some_and(|w| w.contains("Indentation healing") && w.contains("('ssss')")));
    }

    #[test]
    fn same_indentation_is_left_alone() {
        let lines = ["\ta", "\tb"];
        let edited = splice(&lines, (1, 1), "\tb", "\tc\n  d");
        assert_eq!(edited.body, "\ta\n\tc\n  d");
        assert_eq!(edited.warning, None);
    }

    #[test]
    fn tabs_are_shown_escaped() {
        assert_eq!(
            healing_warning("\t\t"),
            "Indentation healing applied. The file has different indentation ('\\t\\t') than your SEARCH block. Please try to match indentation exactly in future edits."
        );
    }
}
