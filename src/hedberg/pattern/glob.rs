//! Path globs: `*` and `?` stay inside one `/` segment, `**` spans segments, `[…]` classes
//! (`[!a]` and `[^a]` negate), braces are literal, a leading `!` negates, dot-files match.
//! A `.`/`..` segment never matches `*`, `?` or a class, but a globstar spans every segment,
//! those included, so `**` matches every path. In scheme paths (`known://*`) the first `://*`
//! spans the whole rest of the path.
//!
//! A [`LineGlob`] is the same glob over one line of text (a command line), where nothing
//! separates segments: `*` spans any characters but a line break.

use regex::Regex;

use crate::hedberg::regex_options::RegexOptions;
use crate::hedberg::HedbergError;

/// What a glob is matched against, which decides what `*` and `?` span.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Syntax {
    /// A path: `*` and `?` stay inside one `/` segment, `**` spans them.
    Path,
    /// One line: `*` spans any characters, `?` any one; a `*` that is the line's last word
    /// also matches no word at all, with the space before it.
    Line,
}

/// A compiled glob.
#[derive(Debug, Clone)]
pub(crate) struct Glob {
    regex: Regex,
    negated: bool,
    dot_segments: Vec<String>,
}

impl Glob {
    /// Compiles a glob; fails only when the translated expression exceeds the size limits.
    pub(super) fn compile(pattern: &str) -> Result<Self, regex::Error> {
        let (negated, body) = match pattern.strip_prefix('!') {
            Some(rest) => (true, rest),
            None => (false, pattern),
        };
        let body = widen_scheme_wildcard(body);
        let dot_segments = body
            .split('/')
            .filter(|segment| *segment == "." || *segment == "..")
            .map(str::to_string)
            .collect();
        let source = format!("(?s)^(?:{})/?$", translate(&body, Syntax::Path));
        Ok(Self {
            regex: RegexOptions::default().compile(&source)?,
            negated,
            dot_segments,
        })
    }

    /// Whether the whole `subject` matches (one trailing `/` is tolerated).
    pub(super) fn is_match(&self, subject: &str) -> bool {
        self.matches_positively(subject) != self.negated
    }

    /// The match before negation: every `.`/`..` segment of the subject is spelled in the
    /// pattern or lies inside what a globstar matched (the translation captures exactly the
    /// globstars).
    fn matches_positively(&self, subject: &str) -> bool {
        let unspelled: Vec<(usize, usize)> = dot_segments(subject)
            .filter(|&(start, end)| {
                let segment = subject.get(start..end).unwrap_or_default();
                !self.dot_segments.iter().any(|allowed| allowed == segment)
            })
            .collect();
        if unspelled.is_empty() {
            return self.regex.is_match(subject);
        }
        let Some(captures) = self.regex.captures(subject) else {
            return false;
        };
        let globstars: Vec<(usize, usize)> = captures
            .iter()
            .skip(1)
            .flatten()
            .map(|span| (span.start(), span.end()))
            .collect();
        unspelled.iter().all(|&(start, end)| {
            globstars
                .iter()
                .any(|&(from, to)| from <= start && end <= to)
        })
    }
}

/// A glob over one line of text, such as a command line: `*` matches any run of characters
/// (`/` and spaces included, never a line break), `?` any one, `[…]` classes and `\`
/// escapes as in a path glob; a `*` standing alone as the last word also matches nothing,
/// with the space before it, so `cargo test *` matches `cargo test` and `cargo test --all`
/// but not `cargo tests`. The whole line must match; nothing negates.
#[derive(Debug, Clone)]
pub struct LineGlob {
    regex: Regex,
}

impl LineGlob {
    /// Compiles `pattern`; fails only when the translated expression exceeds the size limits.
    pub fn compile(pattern: &str) -> Result<LineGlob, HedbergError> {
        let source = format!("^(?:{})$", translate(pattern, Syntax::Line));
        let regex = RegexOptions::default().compile(&source).map_err(|error| {
            HedbergError::InvalidPattern {
                pattern: pattern.to_owned(),
                reason: error.to_string(),
            }
        })?;
        Ok(LineGlob { regex })
    }

    /// Whether the whole of `line` matches.
    pub fn is_match(&self, line: &str) -> bool {
        self.regex.is_match(line)
    }
}

/// The byte ranges of the subject's `.` and `..` segments.
fn dot_segments(subject: &str) -> impl Iterator<Item = (usize, usize)> + '_ {
    subject
        .split('/')
        .scan(0, |start, segment| {
            let range = (*start, *start + segment.len());
            *start += segment.len() + 1;
            Some((range, segment))
        })
        .filter(|(_, segment)| *segment == "." || *segment == "..")
        .map(|(range, _)| range)
}

/// Whether a pattern reads as a glob: it has `**`, or a `*`/`?` at the start or after a
/// character other than `.` and `\` (so `foo.*`, `file.?` and `a\*b` are literal).
pub(crate) fn looks_like_glob(pattern: &str) -> bool {
    if pattern.contains("**") {
        return true;
    }
    let mut previous: Option<char> = None;
    for c in pattern.chars() {
        if (c == '*' || c == '?') && !matches!(previous, Some('.' | '\\')) {
            return true;
        }
        previous = Some(c);
    }
    false
}

fn widen_scheme_wildcard(pattern: &str) -> String {
    let Some(at) = pattern.find("://*") else {
        return pattern.to_string();
    };
    let after = &pattern[at + 4..];
    if after.starts_with('*') {
        return pattern.to_string();
    }
    format!("{}://**{after}", &pattern[..at])
}

fn translate(pattern: &str, syntax: Syntax) -> String {
    let chars: Vec<char> = pattern.chars().collect();
    let mut out = String::with_capacity(pattern.len() * 2);
    let mut index = 0;
    while let Some(&c) = chars.get(index) {
        index += 1;
        match c {
            '\\' => match chars.get(index) {
                Some(&escaped) => {
                    index += 1;
                    out.push_str(&regex::escape(&escaped.to_string()));
                }
                None => out.push_str(r"\\"),
            },
            '*' if syntax == Syntax::Line => {
                let run_start = index - 1;
                while chars.get(index) == Some(&'*') {
                    index += 1;
                }
                let last_word =
                    run_start > 0 && chars.get(run_start - 1) == Some(&' ') && index == chars.len();
                if last_word && out.ends_with(' ') {
                    out.pop();
                    out.push_str("(?: .*)?");
                } else {
                    out.push_str(".*");
                }
            }
            '?' if syntax == Syntax::Line => out.push('.'),
            '*' => {
                let run_start = index - 1;
                while chars.get(index) == Some(&'*') {
                    index += 1;
                }
                let segment_start = run_start == 0 || chars.get(run_start - 1) == Some(&'/');
                let segment_end = chars.get(index).is_none_or(|&next| next == '/');
                if index - run_start < 2 && segment_start && segment_end {
                    // A lone `*` segment names an entry: it never matches an empty segment.
                    out.push_str("[^/]+");
                } else if index - run_start < 2 || !segment_start || !segment_end {
                    out.push_str("[^/]*");
                } else if chars.get(index) == Some(&'/') {
                    index += 1;
                    out.push_str("(.*/)?");
                } else if out.ends_with('/') {
                    out.pop();
                    out.push_str("(/.*)?");
                } else {
                    out.push_str("(.*)");
                }
            }
            '?' => out.push_str("[^/]"),
            '[' => match class_end(&chars, index) {
                Some(end) => {
                    out.push_str(&translate_class(chars.get(index..end).unwrap_or_default()));
                    index = end + 1;
                }
                None => out.push_str(r"\["),
            },
            other => out.push_str(&regex::escape(&other.to_string())),
        }
    }
    out
}

/// Index of the `]` closing a class whose content starts at `start` (a `]` right after the
/// opening bracket or its negation is a member).
fn class_end(chars: &[char], start: usize) -> Option<usize> {
    let mut index = start;
    if matches!(chars.get(index), Some('!' | '^')) {
        index += 1;
    }
    if chars.get(index) == Some(&']') {
        index += 1;
    }
    while let Some(&c) = chars.get(index) {
        match c {
            ']' => return Some(index),
            '\\' => index += 2,
            _ => index += 1,
        }
    }
    None
}

fn translate_class(content: &[char]) -> String {
    let (negated, members) = match content.split_first() {
        Some(('!' | '^', rest)) => (true, rest),
        _ => (false, content),
    };
    let mut out = String::from(if negated { "[^" } else { "[" });
    let mut index = 0;
    while let Some(&c) = members.get(index) {
        index += 1;
        let member = if c == '\\' {
            let escaped = members.get(index).copied().unwrap_or('\\');
            index += 1;
            escaped
        } else {
            c
        };
        let is_range = c == '-' && index > 1 && index < members.len();
        if is_range {
            out.push('-');
        } else if member.is_ascii_punctuation() {
            out.push('\\');
            out.push(member);
        } else {
            out.push(member);
        }
    }
    out.push(']');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matches(pattern: &str, subject: &str) -> bool {
        Glob::compile(pattern).expect("glob").is_match(subject)
    }

    fn line_matches(pattern: &str, line: &str) -> bool {
        LineGlob::compile(pattern)
            .expect("line glob")
            .is_match(line)
    }

    #[test]
    fn a_line_glob_spans_slashes_and_its_last_lone_star_may_match_no_word() {
        assert!(line_matches("cargo test *", "cargo test"));
        assert!(line_matches("cargo test *", "cargo test --all"));
        assert!(line_matches("cargo test *", "cargo test tests/it -- acp::"));
        assert!(!line_matches("cargo test *", "cargo tests"));
        assert!(!line_matches("cargo test *", "cargo testx --all"));
        assert!(!line_matches("cargo test *", "sudo cargo test"));
        assert!(line_matches("git * --help", "git log --oneline --help"));
        assert!(line_matches("ls ?", "ls a"));
        assert!(line_matches(r"ls \*.rs *", "ls *.rs -l"));
        assert!(!line_matches(r"ls \*.rs *", "ls main.rs"));
        assert!(!line_matches("cargo test *", "cargo test\nrm -rf /"));
        assert!(line_matches("make", "make"));
        assert!(!line_matches("make", "make all"));
    }

    #[test]
    fn segments_and_globstars() {
        assert!(matches("src/**/*.ts", "src/a/b.ts"));
        assert!(matches("src/**/*.ts", "src/b.ts"));
        assert!(!matches("src/*", "src/a/b.js"));
        assert!(!matches("src/*", "src/"));
        assert!(!matches("*", ""));
        assert!(matches("*.js", ".js"));
        assert!(matches("**", "a/b/c"));
        assert!(matches("dir/**", "dir"));
        assert!(matches("**/*.test.*", "foo.test.js"));
        assert!(matches("a**b", "axxb"));
        assert!(!matches("a**b", "ax/b"));
        assert!(matches("*.js", "a.js/"));
        assert!(matches("*", "multi\nline"));
    }

    #[test]
    fn classes_braces_and_negation() {
        assert!(matches("[!a]*.js", "b.js"));
        assert!(!matches("[!a]*.js", "a.js"));
        assert!(matches("[a-c]?", "bz"));
        assert!(matches("[]x]*", "]"));
        assert!(matches("[a&&b]*", "&"));
        assert!(matches("log{a,b}*", "log{a,b}.txt"));
        assert!(matches("[unclosed*", "[unclosed.txt"));
        assert!(matches(r"\**", "*x"));
        assert!(!matches("!*.js", "a.js"));
        assert!(matches("!*.js", "a.ts"));
    }

    #[test]
    fn dot_segments_and_scheme_paths() {
        assert!(!matches("*", ".."));
        assert!(!matches("a/*/b", "a/./b"));
        assert!(matches("a/./*", "a/./b"));
        assert!(!matches("?.", ".."));
        assert!(!matches("*/**", "../etc/passwd"));
        assert!(matches("*", ".env"));
        assert!(matches("known://*", "known://"));
        assert!(matches("known://*", "known://a/b"));
        assert!(!matches("known://plan_*", "known://plan_a/b"));
    }

    #[test]
    fn a_globstar_spans_dot_segments() {
        assert!(matches("**", "../../etc/passwd"));
        assert!(matches("**", "get://turn_1/../../etc/passwd"));
        assert!(matches("get://**", "get://turn_1/../x"));
        assert!(matches("get://*", "get://turn_1/./x"));
        assert!(matches("src/**/*.rs", "src/../a.rs"));
        assert!(matches("**/x/**", "../x/y"));
        assert!(!matches("**/*", "a/.."));
        assert!(!matches("!**", "a/../b"));
    }

    #[test]
    fn detection() {
        for glob in ["*.js", "what?", "TODO?", "a/**", "?x"] {
            assert!(looks_like_glob(glob), "{glob}");
        }
        for literal in ["foo.*", "file.?", r"a\*b", "[abc].js", "c++"] {
            assert!(!looks_like_glob(literal), "{literal}");
        }
    }
}
