//! Unified diffs of an edit, in the exact text clients parse from `set://` results.

use std::fmt::Write as _;
use std::time::{Duration, Instant};

use super::budget;

use similar::{Algorithm, ChangeTag, DiffOp, TextDiff};

/// Lines of unchanged context around each change.
const CONTEXT_LINES: usize = 3;
/// Past this (or the thread's budget deadline, when sooner) the line diff settles for a
/// coarser (still correct) result.
const DIFF_TIMEOUT: Duration = Duration::from_secs(2);
const SEPARATOR: &str = "===================================================================";
const NO_NEWLINE: &str = "\\ No newline at end of file";

/// The unified diff from `old` to `new`: a 67-`=` line, `--- <path>\told\t` and
/// `+++ <path>\tnew\t` headers, then hunks with 3 context lines, and
/// `\ No newline at end of file` after a last line that lacks one. Equal texts give the
/// headers only.
pub fn unified_diff(path: &str, old: &str, new: &str) -> String {
    let deadline = (Instant::now() + DIFF_TIMEOUT).min(budget::current().deadline());
    let diff = TextDiff::configure()
        .algorithm(Algorithm::Myers)
        .deadline(deadline)
        .diff_lines(old, new);
    let mut out = format!("{SEPARATOR}\n--- {path}\told\t\n+++ {path}\tnew\t\n");
    for group in diff.grouped_ops(CONTEXT_LINES) {
        write_hunk_header(&mut out, &group);
        for op in &group {
            for change in diff.iter_changes(op) {
                let sign = match change.tag() {
                    ChangeTag::Equal => ' ',
                    ChangeTag::Delete => '-',
                    ChangeTag::Insert => '+',
                };
                let value = change.value();
                out.push(sign);
                match value.strip_suffix('\n') {
                    Some(line) => {
                        out.push_str(line);
                        out.push('\n');
                    }
                    None => {
                        out.push_str(value);
                        out.push('\n');
                        out.push_str(NO_NEWLINE);
                        out.push('\n');
                    }
                }
            }
        }
    }
    out
}

fn write_hunk_header(out: &mut String, group: &[DiffOp]) {
    let (Some(first), Some(last)) = (group.first(), group.last()) else {
        return;
    };
    let old_lines = last.old_range().end - first.old_range().start;
    let new_lines = last.new_range().end - first.new_range().start;
    // An empty side names the line before it, as in every unified diff.
    let old_start = first.old_range().start + usize::from(old_lines > 0);
    let new_start = first.new_range().start + usize::from(new_lines > 0);
    let _ = writeln!(
        out,
        "@@ -{old_start},{old_lines} +{new_start},{new_lines} @@"
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(path: &str) -> String {
        format!("{SEPARATOR}\n--- {path}\told\t\n+++ {path}\tnew\t\n")
    }

    #[test]
    fn changed_line_with_context() {
        assert_eq!(
            unified_diff("a.txt", "a\nb\nc\n", "a\nB\nc\n"),
            header("a.txt") + "@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n"
        );
    }

    #[test]
    fn new_file_without_final_newline() {
        assert_eq!(
            unified_diff("new.js", "", "x"),
            header("new.js") + "@@ -0,0 +1,1 @@\n+x\n\\ No newline at end of file\n"
        );
    }

    #[test]
    fn deleted_content_and_equal_texts() {
        assert_eq!(
            unified_diff("f", "x\n", ""),
            header("f") + "@@ -1,1 +0,0 @@\n-x\n"
        );
        assert_eq!(unified_diff("f", "same\n", "same\n"), header("f"));
    }

    #[test]
    fn distant_changes_make_separate_hunks() {
        let old: String = (1..=20).map(|n| format!("{n}\n")).collect();
        let new: String = (1..=20)
            .map(|n| match n {
                2 => "two\n".to_string(),
                19 => "nineteen\n".to_string(),
                n => format!("{n}\n"),
            })
            .collect();
        let diff = unified_diff("n", &old, &new);
        assert_eq!(diff.matches("\n@@ ").count(), 2, "{diff}");
        assert!(diff.contains("@@ -1,5 +1,5 @@\n 1\n-2\n+two\n 3\n"));
        assert!(diff.contains("@@ -16,5 +16,5 @@\n 16\n 17\n 18\n-19\n+nineteen\n 20\n"));
    }

    #[test]
    fn last_line_newline_change() {
        assert_eq!(
            unified_diff("f", "a\nb", "a\nb\n"),
            header("f") + "@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+b\n"
        );
    }
}
