//! Running a sed substitution the way sed does: line by line, first match per line unless
//! `g`, `\1`…`\9` back-references in the replacement.

use std::cell::Cell;

use regex::{Captures, Regex};

use crate::hedberg::budget::{self, Budget};

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
    pub(crate) fn compile(
        search: &str,
        replacement: &str,
        flags: &str,
    ) -> Result<Self, regex::Error> {
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

    /// Applies the substitution; `None` when the regex matched nowhere, or when the thread's
    /// budget ran out (steps, or a result over the output cap: `s/./&&&&/g` on a large
    /// file stops there instead of taking gigabytes); the budget then says why.
    pub(crate) fn apply(&self, text: &str) -> Option<String> {
        let budget = budget::current();
        match self.scope {
            Scope::WholeText => self.substitute(text, 0, &budget),
            Scope::EachLine => {
                let mut matched = false;
                let mut out = String::with_capacity(text.len());
                for (index, line) in text.split('\n').enumerate() {
                    budget.charge_bytes(line.len()).ok()?;
                    if index > 0 {
                        out.push('\n');
                    }
                    let (content, ending) = match line.strip_suffix('\r') {
                        Some(content) => (content, "\r"),
                        None => (line, ""),
                    };
                    match self.substitute(content, out.len(), &budget) {
                        Some(changed) => {
                            matched = true;
                            out.push_str(&changed);
                            out.push_str(ending);
                        }
                        None if budget.exceeded().is_some() => return None,
                        None => out.push_str(line),
                    }
                    budget.check_output(out.len()).ok()?;
                }
                matched.then_some(out)
            }
        }
    }

    /// One pass over `text`, whose result follows `already` bytes of output.
    fn substitute(&self, text: &str, already: usize, budget: &Budget) -> Option<String> {
        if !self.regex.is_match(text) {
            return None;
        }
        let produced = Cell::new(already.saturating_add(text.len()));
        let expand = |captures: &Captures<'_>| {
            if budget.exceeded().is_some() {
                return String::new();
            }
            let expansion = expand_replacement(&self.replacement, captures);
            produced.set(produced.get().saturating_add(expansion.len()));
            match budget.check_output(produced.get()) {
                Ok(()) => expansion,
                Err(_) => String::new(),
            }
        };
        let replaced = match self.occurrences {
            Occurrences::All => self.regex.replace_all(text, expand),
            Occurrences::First => self.regex.replace(text, expand),
        };
        if budget.exceeded().is_some() {
            return None;
        }
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
    fn a_multiplying_substitution_stops_at_the_output_cap() {
        use std::rc::Rc;
        let limits = budget::Limits {
            max_output_bytes: 10_000,
            ..budget::Limits::default()
        };
        let capped = Rc::new(Budget::new(limits));
        let text = "abc\n".repeat(1_000);
        let program = SedProgram::compile("(.)", &"\\1".repeat(50), "g").expect("valid");
        let applied = budget::scoped(Rc::clone(&capped), || program.apply(&text));
        assert_eq!(applied, None);
        assert_eq!(capped.exceeded(), Some(budget::WorkLimit::Output(10_000)));
        let one_line = "x".repeat(5_000);
        let fresh = Rc::new(Budget::new(limits));
        assert_eq!(
            budget::scoped(Rc::clone(&fresh), || program.apply(&one_line)),
            None
        );
        assert_eq!(fresh.exceeded(), Some(budget::WorkLimit::Output(10_000)));
    }

    #[test]
    fn no_match_is_none() {
        assert_eq!(run("z", "y", "g", "abc"), None);
        assert!(SedProgram::compile("foo(", "x", "").is_err());
    }
}
