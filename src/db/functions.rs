//! The SQL functions rummy registers on every connection: `schemeOf`, `countTokens`,
//! `slugify`, and the pattern functions `hedmatch`, `hedsearch` and `hedreplace`.
//!
//! The pattern functions understand globs and literals (the pattern language's two common
//! forms); each is a one-line call into a small private function so it can be pointed at the
//! hedberg module. Compiled globs are cached per connection.

use std::collections::HashMap;
use std::sync::Mutex;

use diesel::sql_types::{Nullable, Text};
use diesel::SqliteConnection;
use globset::{GlobBuilder, GlobMatcher};

use super::paths;
use super::DbError;

diesel::define_sql_function! {
    /// The scheme of an entry path, NULL for bare paths.
    #[sql_name = "schemeOf"]
    fn scheme_of(path: Nullable<Text>) -> Nullable<Text>;
}

diesel::define_sql_function! {
    /// `ceil(characters / divisor)`, 0 for NULL.
    #[sql_name = "countTokens"]
    fn count_tokens(text: Nullable<Text>) -> Integer;
}

diesel::define_sql_function! {
    /// The text percent-encoded and cut to 80 characters.
    #[sql_name = "slugify"]
    fn slugify(text: Nullable<Text>) -> Text;
}

diesel::define_sql_function! {
    /// 1 when the pattern matches the whole subject.
    #[sql_name = "hedmatch"]
    fn hedmatch(pattern: Nullable<Text>, subject: Nullable<Text>) -> Integer;
}

diesel::define_sql_function! {
    /// 1 when the pattern occurs in the subject.
    #[sql_name = "hedsearch"]
    fn hedsearch(pattern: Nullable<Text>, subject: Nullable<Text>) -> Integer;
}

diesel::define_sql_function! {
    /// The subject with the pattern's matches replaced, NULL when nothing matched.
    #[sql_name = "hedreplace"]
    fn hedreplace(
        pattern: Nullable<Text>,
        replacement: Nullable<Text>,
        subject: Nullable<Text>,
    ) -> Nullable<Text>;
}

/// The token estimate rummy uses everywhere: `ceil(characters / divisor)`, 0 for empty text.
/// A divisor of 0 is treated as 1.
pub fn estimate_tokens(text: &str, divisor: u32) -> i32 {
    let characters = text.chars().count();
    let divisor = usize::try_from(divisor.max(1)).unwrap_or(1);
    i32::try_from(characters.div_ceil(divisor)).unwrap_or(i32::MAX)
}

/// Registers every rummy SQL function on `conn`; `token_divisor` drives `countTokens`.
pub fn register_functions(conn: &mut SqliteConnection, token_divisor: u32) -> Result<(), DbError> {
    scheme_of_utils::register_impl(conn, |path: Option<String>| {
        path.as_deref()
            .and_then(paths::scheme_of)
            .map(str::to_owned)
    })?;
    count_tokens_utils::register_impl(conn, move |text: Option<String>| {
        estimate_tokens(text.as_deref().unwrap_or(""), token_divisor)
    })?;
    slugify_utils::register_impl(conn, |text: Option<String>| {
        paths::slugify(text.as_deref().unwrap_or(""))
    })?;
    let match_cache = PatternCache::default();
    hedmatch_utils::register_impl(
        conn,
        move |pattern: Option<String>, subject: Option<String>| {
            i32::from(match_cache.with(pattern, subject, |compiled, subject| {
                compiled.matches(subject)
            }))
        },
    )?;
    let search_cache = PatternCache::default();
    hedsearch_utils::register_impl(
        conn,
        move |pattern: Option<String>, subject: Option<String>| {
            i32::from(search_cache.with(pattern, subject, |compiled, subject| {
                compiled.found_in(subject)
            }))
        },
    )?;
    let replace_cache = PatternCache::default();
    hedreplace_utils::register_impl(
        conn,
        move |pattern: Option<String>, replacement: Option<String>, subject: Option<String>| {
            let replacement = replacement.unwrap_or_default();
            replace_cache.with(pattern, subject, |compiled, subject| {
                compiled.replace(subject, &replacement)
            })
        },
    )?;
    Ok(())
}

/// Compiled patterns of one connection, keyed by pattern text.
#[derive(Default)]
struct PatternCache {
    compiled: Mutex<HashMap<String, Pattern>>,
}

impl PatternCache {
    const CAPACITY: usize = 256;

    /// Runs `apply` on the compiled pattern; the default result when either input is NULL.
    fn with<T: Default>(
        &self,
        pattern: Option<String>,
        subject: Option<String>,
        apply: impl FnOnce(&Pattern, &str) -> T,
    ) -> T {
        let (Some(pattern), Some(subject)) = (pattern, subject) else {
            return T::default();
        };
        let Ok(mut compiled) = self.compiled.lock() else {
            return apply(&Pattern::compile(&pattern), &subject);
        };
        if compiled.len() >= Self::CAPACITY && !compiled.contains_key(&pattern) {
            compiled.clear();
        }
        let entry = compiled
            .entry(pattern)
            .or_insert_with_key(|pattern| Pattern::compile(pattern));
        apply(entry, &subject)
    }
}

/// A pattern after type detection.
enum Pattern {
    /// Exact, case-sensitive text.
    Literal(String),
    /// A glob; `*` and `?` stay within one `/` segment.
    Glob(GlobMatcher),
}

impl Pattern {
    fn compile(pattern: &str) -> Pattern {
        if !is_glob(pattern) {
            return Pattern::Literal(pattern.to_owned());
        }
        let glob = scheme_wildcard_crosses_segments(pattern)
            .replace('{', "\\{")
            .replace('}', "\\}");
        match GlobBuilder::new(&glob)
            .literal_separator(true)
            .backslash_escape(true)
            .build()
        {
            Ok(glob) => Pattern::Glob(glob.compile_matcher()),
            Err(_) => Pattern::Literal(pattern.to_owned()),
        }
    }

    fn matches(&self, subject: &str) -> bool {
        match self {
            Pattern::Literal(text) => text == subject,
            Pattern::Glob(glob) => glob.is_match(subject),
        }
    }

    fn found_in(&self, subject: &str) -> bool {
        match self {
            Pattern::Literal(text) => subject.contains(text.as_str()),
            Pattern::Glob(glob) => glob.is_match(subject),
        }
    }

    fn replace(&self, subject: &str, replacement: &str) -> Option<String> {
        match self {
            Pattern::Literal(text) if subject.contains(text.as_str()) => {
                Some(subject.replace(text.as_str(), replacement))
            }
            Pattern::Glob(glob) if glob.is_match(subject) => Some(replacement.to_owned()),
            _ => None,
        }
    }
}

/// A glob contains `**`, or a `*`/`?` at the start or after anything but `.` or `\`
/// (so `foo.*` and `a\*b` stay literal).
fn is_glob(pattern: &str) -> bool {
    if pattern.contains("**") {
        return true;
    }
    let mut previous: Option<char> = None;
    for character in pattern.chars() {
        if matches!(character, '*' | '?') && !matches!(previous, Some('.') | Some('\\')) {
            return true;
        }
        previous = Some(character);
    }
    false
}

/// In a scheme path the first `://*` crosses segments: `known://*` lists every known entry.
fn scheme_wildcard_crosses_segments(pattern: &str) -> String {
    match pattern.find("://*") {
        Some(index)
            if !pattern
                .get(index + 4..)
                .is_some_and(|rest| rest.starts_with('*')) =>
        {
            let (head, tail) = pattern.split_at(index + 4);
            format!("{head}*{tail}")
        }
        _ => pattern.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_round_up_per_character() {
        assert_eq!(estimate_tokens("", 4), 0);
        assert_eq!(estimate_tokens("abcde", 4), 2);
        assert_eq!(estimate_tokens("éééé", 4), 1);
        assert_eq!(estimate_tokens("abc", 0), 3);
    }

    #[test]
    fn glob_detection_follows_the_pattern_language() {
        assert!(is_glob("*.js"));
        assert!(is_glob("src/**"));
        assert!(is_glob("TODO?"));
        assert!(!is_glob("foo.*"));
        assert!(!is_glob("a\\*b"));
        assert!(!is_glob("c++"));
    }

    #[test]
    fn star_stays_in_its_segment_except_after_a_scheme() {
        let top_level = Pattern::compile("*");
        assert!(top_level.matches("app.js"));
        assert!(!top_level.matches("src/app.js"));
        assert!(!top_level.matches("known://x"));
        let known = Pattern::compile("known://*");
        assert!(known.matches("known://a/b"));
        assert!(!known.matches("unknown://a"));
        let prefix = Pattern::compile("known://plan_*");
        assert!(prefix.matches("known://plan_a"));
        assert!(!prefix.matches("known://plan_a/b"));
        assert!(Pattern::compile("**").matches("known://a/b"));
    }

    #[test]
    fn literals_match_whole_and_search_inside() {
        let literal = Pattern::compile("log{a,b}.txt");
        assert!(literal.matches("log{a,b}.txt"));
        assert!(!literal.matches("loga.txt"));
        assert!(Pattern::compile("TODO").found_in("a TODO here"));
        assert_eq!(
            Pattern::compile("a").replace("banana", "o"),
            Some("bonono".to_owned())
        );
        assert_eq!(Pattern::compile("x").replace("banana", "o"), None);
    }

    #[test]
    fn braces_in_globs_are_literal() {
        assert!(Pattern::compile("*{a}.txt").matches("x{a}.txt"));
        assert!(!Pattern::compile("*{a,b}.txt").matches("xa.txt"));
    }
}
