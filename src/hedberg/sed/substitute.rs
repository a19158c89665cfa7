//! Running a sed substitution the way sed does: line by line, first match per line unless
//! `g`, `\1`…`\9` back-references in the replacement.

use regex::{Captures, Regex};

use crate::hedberg::regex_options::RegexOptions;

/// A compiled sed substitution.
#[derive(Debug, Clone)]
pub(crate) struct SedProgram {
    regex: Regex,
    replacement: String,
    scope: Scope,
    occurrences: Occurrences,
}

/// What one substitution pass sees.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scope {
    /// Each line alone, without its line break (sed's pattern space).
    EachLine,
    /// The whole text, for searches that name a line break themselves.
    WholeText,
}

/// Which matches of one pass are replaced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Occurrences {
    First,
    All,
}

impl SedProgram {
    /// Compiles a substitution; fails when `search` is not a valid (or is an oversized)
    /// regular expression.
    pub fn compile(search: &str, replacement: &str, flags: &str) -> Result<Self, regex::Error> {
        let names_line_break = search.contains('\n') || search.contains("\\n");
        let (scope, options) = if names_line_break {
            (
                Scope::WholeText,
                RegexOptions::from_flags(flags).with_multi_line(),
            )
        } else {
            (Scope::EachLine, RegexOptions::from_flags(flags))
        };
        Ok(Self {
            regex: options.compile(search)?,
            replacement: replacement.to_string(),
            scope,
            occurrences: if flags.contains('g') {
                Occurrences::All
            } else {
                Occurrences::First
            },
        })
    }

    /// Applies the substitution; `None` when the regex matched nowhere.
    pub fn apply(&self, text: &str) -> Option<String> {
        match self.scope {
            Scope::WholeText => self.substitute(text),
            Scope::EachLine => {
                let mut matched = false;
                let lines: Vec<String> = text
                    .split('\n')
                    .map(|line| {
                        let (content, ending) = match line.strip_suffix('\r') {
                            Some(content) => (content, "\r"),
                            None => (line, ""),
                        };
                        match self.substitute(content) {
                            Some(changed) => {
                                matched = true;
                                changed + ending
                            }
                            None => line.to_string(),
                        }
                    })
                    .collect();
                matched.then(|| lines.join("\n"))
            }
        }
    }

    fn substitute(&self, text: &str) -> Option<String> {
        if !self.regex.is_match(text) {
            return None;
        }
        let expand = |captures: &Captures<'_>| expand_replacement(&self.replacement, captures);
        let replaced = match self.occurrences {
            Occurrences::All => self.regex.replace_all(text, expand),
            Occurrences::First => self.regex.replace(text, expand),
        };
        Some(replaced.into_owned())
    }
}

/// Expands sed escapes: `\1`…`\9` (groups), `\\`, `\n`, `\t`, `\&`. Anything else, `&` and
/// `$` included, is literal.
fn expand_replacement(template: &str, captures: &Captures<'_>) -> String {
    let mut out = String::with_capacity(template.len());
    let mut chars = template.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some(digit @ '1'..='9') => {
                let group = digit.to_digit(10).map_or(0, |d| d as usize);
                out.push_str(captures.get(group).map_or("", |m| m.as_str()));
            }
            Some('\\') => out.push('\\'),
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some('&') => out.push('&'),
            Some(other) => {
                out.push('\\');
                out.push(other);
            }
            None => out.push('\\'),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(search: &str, replacement: &str, flags: &str, text: &str) -> Option<String> {
        SedProgram::compile(search, replacement, flags)
            .expect("valid")
            .apply(text)
    }

    #[test]
    fn first_match_per_line_without_g() {
        assert_eq!(run("a", "b", "", "aaa\naa"), Some("baa\nba".into()));
        assert_eq!(run("a", "b", "g", "aaa\naa"), Some("bbb\nbb".into()));
        assert_eq!(run("a", "b", "i", "AaA"), Some("baA".into()));
    }

    #[test]
    fn anchors_work_per_line_and_crlf_survives() {
        assert_eq!(
            run("=$", "= 5", "", "x =\r\ny =\r\n"),
            Some("x = 5\r\ny = 5\r\n".into())
        );
        assert_eq!(run("^", "# ", "", "a\nb"), Some("# a\n# b".into()));
    }

    #[test]
    fn backreferences_and_literal_specials() {
        assert_eq!(run("(\\w+)", "[\\1]", "", "foo"), Some("[foo]".into()));
        assert_eq!(
            run("x", "$1 & \\& \\\\ \\q", "", "x"),
            Some("$1 & & \\ \\q".into())
        );
        assert_eq!(run("(a)", "\\2\\1", "", "a"), Some("a".into()));
    }

    #[test]
    fn line_breaks_in_the_search_span_lines() {
        assert_eq!(run("a\\nb", "c", "", "a\nb\n"), Some("c\n".into()));
    }

    #[test]
    fn no_match_is_none() {
        assert_eq!(run("z", "y", "g", "abc"), None);
        assert!(SedProgram::compile("foo(", "x", "").is_err());
    }
}
