//! A rule's pattern over a command line, and the default pattern of a command a person
//! allows always.
//!
//! A command with a shell operator (`;`, `&`, `|`, a backtick, `$(`, `<`, `>`, a line
//! break) may chain another command after the one a glob names, so it is matched only by a
//! pattern that is its exact text, and such a pattern is never read as a glob: `cargo test
//! *` can never allow `cargo test x; rm -rf /`. Any other pattern is a glob over the line
//! (`hedberg::LineGlob`: `*` spans any characters, a last lone `*` also none), matched
//! against the command with its runs of blanks made one space; its first word is a literal
//! program name, so no pattern allows every program.
//!
//! The default pattern of a command is its program and first argument followed by ` *`
//! (`cargo test --all` → `cargo test *`, `ls` → `ls *`), those words' glob characters
//! escaped; a command with a shell operator gets its exact text.

use crate::agent::allow::RuleError;
use crate::hedberg::LineGlob;

/// The most characters a pattern may have.
const MOST_CHARACTERS: usize = 4096;

/// What makes a shell read more than one plain command in a line.
const OPERATORS: &[&str] = &[";", "&", "|", "`", "$(", "<", ">", "\n", "\r"];

/// The characters a glob reads as more than themselves.
const GLOB_CHARACTERS: &[char] = &['*', '?', '[', '\\'];

/// Whether `line` has a shell operator.
pub(crate) fn has_operators(line: &str) -> bool {
    OPERATORS.iter().any(|operator| line.contains(operator))
}

/// A rule's pattern, compiled.
#[derive(Debug, Clone)]
pub(crate) enum CommandPattern {
    /// A pattern with a shell operator: exactly this command.
    Exact(String),
    /// A glob over a command without one.
    Glob(LineGlob),
}

impl CommandPattern {
    /// Reads `pattern`, or says why it is no pattern.
    pub(crate) fn parse(pattern: &str) -> Result<CommandPattern, RuleError> {
        let bad = |why: &str| RuleError::BadPattern {
            pattern: pattern.to_owned(),
            why: why.to_owned(),
        };
        if pattern.trim().is_empty() {
            return Err(bad("it is empty"));
        }
        if pattern.chars().count() > MOST_CHARACTERS {
            return Err(bad("it is longer than 4096 characters"));
        }
        if has_operators(pattern) {
            return Ok(CommandPattern::Exact(pattern.to_owned()));
        }
        let program = pattern.split_whitespace().next().unwrap_or_default();
        if program.contains(GLOB_CHARACTERS) {
            return Err(bad(
                "its first word must name a program, without *, ?, [ or \\",
            ));
        }
        LineGlob::compile(&blanks_as_spaces(pattern))
            .map(CommandPattern::Glob)
            .map_err(|error| bad(&error.to_string()))
    }

    /// Whether `command` is one this pattern allows.
    pub(crate) fn matches(&self, command: &str) -> bool {
        match self {
            CommandPattern::Exact(text) => text == command,
            CommandPattern::Glob(glob) => {
                !has_operators(command) && glob.is_match(&blanks_as_spaces(command))
            }
        }
    }
}

/// The pattern a person allowing `command` always gets when they name none: see the module
/// doc. Fails only for a command with no word.
pub(crate) fn default_pattern(command: &str) -> Result<String, RuleError> {
    if has_operators(command) {
        return Ok(command.to_owned());
    }
    let words: Vec<String> = command.split_whitespace().take(2).map(escaped).collect();
    if words.is_empty() {
        return Err(RuleError::BadPattern {
            pattern: command.to_owned(),
            why: "the command is empty".to_owned(),
        });
    }
    Ok(format!("{} *", words.join(" ")))
}

/// `word` with its glob characters escaped.
fn escaped(word: &str) -> String {
    word.chars().fold(String::new(), |mut out, c| {
        if GLOB_CHARACTERS.contains(&c) {
            out.push('\\');
        }
        out.push(c);
        out
    })
}

/// `line` trimmed, its runs of blanks one space.
fn blanks_as_spaces(line: &str) -> String {
    line.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn allows(pattern: &str, command: &str) -> bool {
        CommandPattern::parse(pattern).unwrap().matches(command)
    }

    #[test]
    fn the_default_is_the_program_and_its_first_argument_then_any_arguments() {
        assert_eq!(default_pattern("cargo test --all").unwrap(), "cargo test *");
        assert_eq!(default_pattern("  cargo   test  ").unwrap(), "cargo test *");
        assert_eq!(default_pattern("ls").unwrap(), "ls *");
        assert_eq!(default_pattern(r"ls *.rs -l").unwrap(), r"ls \*.rs *");
        assert!(default_pattern("   ").is_err());
        for command in [
            "cargo test --all",
            "cargo test",
            "ls",
            "ls *.rs -l",
            "git  log  -3",
        ] {
            let pattern = default_pattern(command).unwrap();
            assert!(allows(&pattern, command), "{pattern} allows {command}");
        }
        assert!(allows("cargo test *", "cargo test -- acp::ts"));
        assert!(!allows("cargo test *", "cargo build"));
        assert!(!allows(r"ls \*.rs *", "ls secret.rs"));
    }

    #[test]
    fn a_command_with_a_shell_operator_is_allowed_only_by_its_exact_text() {
        for command in [
            "cargo test * ; rm -rf /",
            "cargo test && rm -rf /",
            "cargo test | sh",
            "cargo test `rm -rf /`",
            "cargo test $(rm -rf /)",
            "cargo test > /etc/passwd",
            "cargo test < /dev/zero",
            "cargo test & rm -rf /",
            "cargo test\nrm -rf /",
        ] {
            assert!(!allows("cargo test *", command), "{command:?}");
            assert!(!allows("cargo *", command), "{command:?}");
            assert_eq!(default_pattern(command).unwrap(), command);
            assert!(allows(command, command), "{command:?}");
        }
        assert!(!allows("cargo test && make", "cargo test && make install"));
        assert!(
            !allows("ls *.rs | wc -l", "ls a.rs | wc -l"),
            "never a glob"
        );
    }

    #[test]
    fn a_pattern_names_its_program() {
        for bad in ["", "   ", "*", "* test", "carg? test", "[a-z]* x", r"\ls *"] {
            assert!(
                matches!(
                    CommandPattern::parse(bad),
                    Err(RuleError::BadPattern { .. })
                ),
                "{bad:?}"
            );
        }
        let longest = format!("ls {}", "a".repeat(MOST_CHARACTERS - 3));
        assert!(CommandPattern::parse(&longest).is_ok(), "4096 characters");
        assert!(
            CommandPattern::parse(&format!("{longest}a")).is_err(),
            "4097"
        );
    }
}
