//! Sed substitution syntax: `s/search/replace/flags`, any non-word, non-space delimiter,
//! optional trailing delimiter, and chains of commands separated by spaces, `;` or newlines.

mod substitute;

pub(crate) use substitute::SedProgram;

use super::EditBlock;

/// Flag letters a sed command keeps; anything after them ends the flags.
const SED_FLAGS: &[char] = &['g', 'i', 'm', 's', 'v'];

/// Parses one or more chained sed commands. The text (trimmed) must start with `s` and a
/// delimiter; each following command may use its own delimiter. An empty list means the
/// text is not sed.
///
/// In the parsed texts an escaped delimiter is the bare delimiter; every other backslash
/// sequence is kept verbatim. `flags` keeps the leading run of `g i m s v`.
pub fn parse_sed(input: &str) -> Vec<EditBlock> {
    let mut blocks = Vec::new();
    let mut rest = input.trim();
    while let Some(command) = SedCommand::parse(rest) {
        let flag_length = command
            .after_replace
            .find(|c: char| !SED_FLAGS.contains(&c))
            .unwrap_or(command.after_replace.len());
        let (flags, after_flags) = command.after_replace.split_at(flag_length);
        blocks.push(EditBlock::sed(command.search, command.replace, flags));
        rest = after_flags.trim_start_matches(|c: char| c.is_whitespace() || c == ';');
    }
    blocks
}

/// One sed command split into its parts, delimiters already removed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SedCommand<'a> {
    /// The delimiter the command uses.
    pub delimiter: char,
    /// Search text, escaped delimiters unescaped.
    pub search: String,
    /// Replacement text, escaped delimiters unescaped.
    pub replace: String,
    /// Everything after the replacement's closing delimiter (empty when it had none).
    pub after_replace: &'a str,
}

impl<'a> SedCommand<'a> {
    /// Splits `s<d>search<d>replace[<d>rest]`; `None` unless `text` starts with `s`, a valid
    /// delimiter and a closed search part.
    pub(super) fn parse(text: &'a str) -> Option<Self> {
        let mut chars = text.chars();
        if chars.next() != Some('s') {
            return None;
        }
        let delimiter = chars.next().filter(|&c| is_delimiter(c))?;
        let body = chars.as_str();
        let (search, after_search) = split_part(body, delimiter);
        let after_search = after_search?;
        let (replace, after_replace) = split_part(after_search, delimiter);
        Some(Self {
            delimiter,
            search: unescape_delimiter(search, delimiter),
            replace: unescape_delimiter(replace, delimiter),
            after_replace: after_replace.unwrap_or(""),
        })
    }

    /// The flags part for the pattern language: text up to the next unescaped delimiter.
    pub(super) fn pattern_flags(&self) -> &'a str {
        split_part(self.after_replace, self.delimiter).0
    }
}

fn is_delimiter(c: char) -> bool {
    !(c.is_alphanumeric() || c == '_' || c.is_whitespace() || c == '\\')
}

/// Splits at the first delimiter not escaped by a backslash. Returns the part and the text
/// after the delimiter, or `None` when the text ran out first.
fn split_part(text: &str, delimiter: char) -> (&str, Option<&str>) {
    let mut escaped = false;
    for (index, c) in text.char_indices() {
        if escaped {
            escaped = false;
        } else if c == '\\' {
            escaped = true;
        } else if c == delimiter {
            return (&text[..index], Some(&text[index + c.len_utf8()..]));
        }
    }
    (text, None)
}

fn unescape_delimiter(part: &str, delimiter: char) -> String {
    let mut out = String::with_capacity(part.len());
    let mut chars = part.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some(next) if next == delimiter => out.push(next),
            Some(next) => {
                out.push('\\');
                out.push(next);
            }
            None => out.push('\\'),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn single_command_with_flags() {
        assert_eq!(parse_sed("s/a/b/g"), vec![EditBlock::sed("a", "b", "g")]);
        assert_eq!(parse_sed("s#x#y#gix"), vec![EditBlock::sed("x", "y", "gi")]);
        assert_eq!(
            parse_sed("s/old/new"),
            vec![EditBlock::sed("old", "new", "")]
        );
        assert_eq!(parse_sed("s/a/"), vec![EditBlock::sed("a", "", "")]);
    }

    #[test]
    fn escapes() {
        assert_eq!(
            parse_sed(r"s/a\/b/c/"),
            vec![EditBlock::sed("a/b", "c", "")]
        );
        assert_eq!(
            parse_sed(r"s/(\w+)\\/[\1]/"),
            vec![EditBlock::sed(r"(\w+)\\", r"[\1]", "")]
        );
        assert_eq!(
            parse_sed(r"s|a/b|c\|d|"),
            vec![EditBlock::sed("a/b", "c|d", "")]
        );
    }

    #[test]
    fn chains_with_own_delimiters() {
        assert_eq!(
            parse_sed("s/a/b/;s|c|d|\n s,e,f,g"),
            vec![
                EditBlock::sed("a", "b", ""),
                EditBlock::sed("c", "d", ""),
                EditBlock::sed("e", "f", "g")
            ]
        );
    }

    #[test]
    fn prose_after_a_command_ends_the_chain() {
        assert_eq!(
            parse_sed("s/a/b/ and this/is/text"),
            vec![EditBlock::sed("a", "b", "")]
        );
    }

    #[test]
    fn not_sed() {
        for text in [
            "s/a",
            "s_a_b_",
            "s a b ",
            "x s/a/b/",
            "",
            "s",
            "s\\a\\b\\",
            "sed",
        ] {
            assert!(parse_sed(text).is_empty(), "{text:?}");
        }
    }

    #[test]
    fn pattern_flags_stop_at_the_next_delimiter() {
        let command = SedCommand::parse("s/a/b/gi/extra").expect("sed");
        assert_eq!(command.pattern_flags(), "gi");
        let bare = SedCommand::parse("s/a/b").expect("sed");
        assert_eq!(bare.pattern_flags(), "");
    }
}
