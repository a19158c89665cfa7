//! Unified-diff hunks as edit blocks: `-` lines are searched, `+` lines replace them, and
//! context lines belong to both.

use super::EditBlock;

/// Each `@@ … @@` hunk with at least one line becomes a block. Text before the first hunk
/// header (the `---`/`+++` file headers) and text after a header's closing `@@` (a section
/// label) are not part of any hunk.
pub(super) fn diff_blocks(content: &str, lines: &[&str]) -> Vec<EditBlock> {
    if !content.contains("@@") || !(content.contains("\n-") || content.contains("\n+")) {
        return Vec::new();
    }
    let mut blocks = Vec::new();
    let mut hunk: Option<Hunk> = None;
    let mut index = 0;
    while let Some(line) = lines.get(index) {
        index += 1;
        if is_hunk_header(line) {
            if let Some(done) = hunk.take() {
                blocks.extend(done.into_block());
            }
            hunk = Some(Hunk::default());
            continue;
        }
        let Some(current) = hunk.as_mut() else {
            continue;
        };
        if is_file_header_pair(line, lines.get(index)) {
            index += 1;
            continue;
        }
        current.push(line);
    }
    if let Some(done) = hunk {
        blocks.extend(done.into_block());
    }
    blocks
}

fn is_hunk_header(line: &str) -> bool {
    line.strip_prefix("@@")
        .is_some_and(|rest| rest.contains("@@"))
}

/// A `--- a/x` line directly followed by `+++ b/x` starts the next file of a multi-file diff.
fn is_file_header_pair(line: &str, next: Option<&&str>) -> bool {
    line.starts_with("--- ") && next.is_some_and(|next| next.starts_with("+++ "))
}

#[derive(Default)]
struct Hunk {
    old: Vec<String>,
    new: Vec<String>,
    any_line: bool,
}

impl Hunk {
    fn push(&mut self, line: &str) {
        if let Some(removed) = line.strip_prefix('-') {
            self.old.push(removed.to_string());
        } else if let Some(added) = line.strip_prefix('+') {
            self.new.push(added.to_string());
        } else if let Some(context) = line.strip_prefix(' ') {
            self.old.push(context.to_string());
            self.new.push(context.to_string());
        } else {
            return;
        }
        self.any_line = true;
    }

    fn into_block(self) -> Option<EditBlock> {
        self.any_line
            .then(|| EditBlock::literal(self.old.join("\n"), self.new.join("\n")))
    }
}

#[cfg(test)]
mod tests {
    use super::super::parse_edit_content;
    use super::*;

    #[test]
    fn headers_and_context_lines() {
        let body = "--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n";
        assert_eq!(
            parse_edit_content(body),
            vec![EditBlock::literal("a\nb\nc", "a\nB\nc")]
        );
    }

    #[test]
    fn section_label_after_header_is_not_context() {
        let body = "@@ -1,2 +1,2 @@ fn main() {\n-x\n+y\n";
        assert_eq!(parse_edit_content(body), vec![EditBlock::literal("x", "y")]);
    }

    #[test]
    fn several_hunks_and_files() {
        let body = "@@ -1 +1 @@\n-a\n+b\n--- a/g\n+++ b/g\n@@ -4 +4 @@\n c\n-d\n\\ No newline at end of file\n+e";
        assert_eq!(
            parse_edit_content(body),
            vec![
                EditBlock::literal("a", "b"),
                EditBlock::literal("c\nd", "c\ne")
            ]
        );
    }

    #[test]
    fn needs_a_changed_line() {
        assert!(parse_edit_content("@@ note @@ only prose").is_empty());
    }
}
