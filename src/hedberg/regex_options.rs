//! Compiling model- and client-written regular expressions with bounded size, from
//! JavaScript/sed-style flag letters.

use regex::{Regex, RegexBuilder};

/// Upper bound for a compiled program; hostile patterns like `(a{999}){999}` are refused.
const COMPILED_SIZE_LIMIT: usize = 1 << 21;
/// Upper bound for the lazy DFA cache used while searching.
const DFA_SIZE_LIMIT: usize = 1 << 22;
/// Upper bound on group/repetition nesting, keeping the parser's recursion shallow.
const NEST_LIMIT: u32 = 64;

/// Matching options read from flag letters (`i`, `m`, `s`; `g` is the caller's business and
/// other letters such as `u`, `v`, `y` change nothing here).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct RegexOptions {
    /// `i`: ignore case.
    pub case_insensitive: bool,
    /// `m`: `^`/`$` match at line boundaries.
    pub multi_line: bool,
    /// `s`: `.` matches `\n`.
    pub dot_matches_new_line: bool,
}

impl RegexOptions {
    /// Reads the option letters from a flag string.
    pub(super) fn from_flags(flags: &str) -> Self {
        Self {
            case_insensitive: flags.contains('i'),
            multi_line: flags.contains('m'),
            dot_matches_new_line: flags.contains('s'),
        }
    }

    /// These options with `^`/`$` matching at line boundaries.
    pub(super) fn with_multi_line(self) -> Self {
        Self {
            multi_line: true,
            ..self
        }
    }

    /// Compiles `source` with these options and the size limits.
    pub(super) fn compile(self, source: &str) -> Result<Regex, regex::Error> {
        RegexBuilder::new(source)
            .case_insensitive(self.case_insensitive)
            .multi_line(self.multi_line)
            .dot_matches_new_line(self.dot_matches_new_line)
            .size_limit(COMPILED_SIZE_LIMIT)
            .dfa_size_limit(DFA_SIZE_LIMIT)
            .nest_limit(NEST_LIMIT)
            .build()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_map_to_options() {
        let options = RegexOptions::from_flags("gim");
        assert!(options.case_insensitive && options.multi_line && !options.dot_matches_new_line);
        assert!(options.compile("^ab$").expect("regex").is_match("x\nAB"));
    }

    #[test]
    fn oversized_programs_are_refused() {
        assert!(RegexOptions::default().compile("(a{999}){999}").is_err());
        assert!(RegexOptions::default().compile(&"(".repeat(100)).is_err());
    }
}
