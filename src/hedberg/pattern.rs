//! The pattern language of `hedmatch`, `hedsearch` and `hedreplace`: one string that is,
//! by detection in this order, a sed command `s/a/b/flags`, a `/regex/flags`, a JSONPath
//! `$.…`, an XPath `//…`, a glob, or literal text.

mod cache;
mod glob;
mod json_path;
mod regex_replace;
mod xpath;

use regex::Regex;
use serde_json::Value;

use self::glob::Glob;
use self::json_path::JsonPath;
use self::xpath::XPathPattern;
use super::budget;
use super::regex_options::RegexOptions;
use super::sed::{SedCommand, SedProgram};
use super::HedbergError;

pub use self::glob::LineGlob;
pub use cache::{pattern_match, pattern_replace, pattern_search};

/// Flag letters a `/regex/` may carry.
const REGEX_FLAGS: &str = "gimsuy";
/// Flag letters a sed-form pattern may carry.
const SED_PATTERN_FLAGS: &str = "dgimsuvy";

/// The detected kind of a pattern.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PatternKind {
    /// `s/search/replace/flags`.
    Sed,
    /// `/body/flags`.
    Regex,
    /// `$.key`, `$..key`, `$[0]`, ….
    JsonPath,
    /// `//name`, `/a/b[1]`, `/a/child::b`, ….
    XPath,
    /// `*.js`, `src/**`, `what?`, ….
    Glob,
    /// Anything else, compared as plain text.
    Literal,
}

/// Where a pattern was found in a subject.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchHit {
    /// The matched text, or for JSONPath the first selected JSON value.
    pub matched: Matched,
    /// Offset of the match in characters (Unicode scalar values); 0 for JSONPath and XPath.
    pub index: usize,
}

/// What a search matched.
#[derive(Debug, Clone, PartialEq)]
pub enum Matched {
    /// Matched text (for XPath, the text content of the first selected node).
    Text(String),
    /// The first value a JSONPath selected.
    Json(Value),
}

/// A compiled pattern; matching is stateless.
#[derive(Debug, Clone)]
pub struct Pattern {
    compiled: Compiled,
}

#[derive(Debug, Clone)]
enum Compiled {
    Sed {
        search: String,
        finder: SedFinder,
        program: SedProgram,
    },
    Regex(Regex),
    JsonPath(Option<JsonPath>),
    XPath(Option<XPathPattern>),
    Glob(Glob),
    Literal(String),
}

/// How a sed-form pattern finds text: literally without flags, as a regex with them.
#[derive(Debug, Clone)]
enum SedFinder {
    Literal,
    Regex(Regex),
}

impl Pattern {
    /// Detects the pattern's kind and compiles it. Fails on an invalid or oversized regex
    /// body and on unknown regex/sed flags.
    pub fn compile(pattern: &str) -> Result<Self, HedbergError> {
        let invalid = |reason: String| HedbergError::InvalidPattern {
            pattern: pattern.to_string(),
            reason,
        };
        let compiled = if let Some(command) = sed_form(pattern) {
            compile_sed(&command).map_err(invalid)?
        } else if let Some((body, flags)) = regex_form(pattern) {
            Compiled::Regex(
                RegexOptions::from_flags(flags)
                    .compile(body)
                    .map_err(|error| invalid(error.to_string()))?,
            )
        } else if json_path::looks_like_json_path(pattern) {
            Compiled::JsonPath(JsonPath::parse(pattern))
        } else if xpath::looks_like_xpath(pattern) {
            Compiled::XPath(XPathPattern::compile(pattern))
        } else if glob::looks_like_glob(pattern) {
            Compiled::Glob(Glob::compile(pattern).map_err(|error| invalid(error.to_string()))?)
        } else {
            Compiled::Literal(pattern.to_string())
        };
        Ok(Self { compiled })
    }

    /// The detected kind.
    pub fn kind(&self) -> PatternKind {
        match self.compiled {
            Compiled::Sed { .. } => PatternKind::Sed,
            Compiled::Regex(_) => PatternKind::Regex,
            Compiled::JsonPath(_) => PatternKind::JsonPath,
            Compiled::XPath(_) => PatternKind::XPath,
            Compiled::Glob(_) => PatternKind::Glob,
            Compiled::Literal(_) => PatternKind::Literal,
        }
    }

    /// `hedmatch`: literal text and globs must equal/match the whole subject; regexes and
    /// sed searches match anywhere; JSONPath/XPath must select something. Every call is
    /// charged to the thread's [`budget`]; once it is spent nothing matches (callers ask
    /// the budget, as [`pattern_match`] does).
    pub fn is_match(&self, subject: &str) -> bool {
        if budget::current().charge_bytes(subject.len()).is_err() {
            return false;
        }
        match &self.compiled {
            Compiled::Literal(text) => text == subject,
            Compiled::Glob(glob) => glob.is_match(subject),
            Compiled::Regex(regex) => regex.is_match(subject),
            Compiled::Sed { search, finder, .. } => match finder {
                SedFinder::Literal => subject.contains(search.as_str()),
                SedFinder::Regex(regex) => regex.is_match(subject),
            },
            Compiled::JsonPath(_) | Compiled::XPath(_) => self.search(subject).is_some(),
        }
    }

    /// `hedsearch`: the first match and its character offset. Globs match the whole subject
    /// or nothing.
    pub fn search(&self, subject: &str) -> Option<SearchHit> {
        budget::current().charge_bytes(subject.len()).ok()?;
        let text_hit = |byte_index: usize, text: &str| SearchHit {
            matched: Matched::Text(text.to_string()),
            index: subject
                .get(..byte_index)
                .map_or(0, |before| before.chars().count()),
        };
        match &self.compiled {
            Compiled::Literal(text) => subject.find(text.as_str()).map(|at| text_hit(at, text)),
            Compiled::Glob(glob) => glob.is_match(subject).then(|| text_hit(0, subject)),
            Compiled::Regex(regex) => regex.find(subject).map(|m| text_hit(m.start(), m.as_str())),
            Compiled::Sed { search, finder, .. } => match finder {
                SedFinder::Literal => subject.find(search.as_str()).map(|at| text_hit(at, search)),
                SedFinder::Regex(regex) => {
                    regex.find(subject).map(|m| text_hit(m.start(), m.as_str()))
                }
            },
            Compiled::JsonPath(path) => {
                let document: Value = serde_json::from_str(subject).ok()?;
                let first = path.as_ref()?.select(&document).first().copied()?.clone();
                Some(SearchHit {
                    matched: Matched::Json(first),
                    index: 0,
                })
            }
            Compiled::XPath(xpath) => xpath.as_ref()?.first_text(subject).map(|text| SearchHit {
                matched: Matched::Text(text),
                index: 0,
            }),
        }
    }

    /// `hedreplace`: the new subject, or `None` when nothing matched, the kind cannot
    /// replace (JSONPath, XPath) or the result is over the budget's output cap.
    ///
    /// Literal text: every occurrence, verbatim. Glob: the whole subject, once. Regex: every
    /// match, with `$1`, `$<name>`, `$&`, `$$` expanded. Sed: its own replacement (the
    /// `replacement` argument is ignored), line by line, first match per line unless `g`.
    pub fn replace(&self, subject: &str, replacement: &str) -> Option<String> {
        let budget = budget::current();
        budget.charge_bytes(subject.len()).ok()?;
        let replaced = match &self.compiled {
            Compiled::Literal(text) => (!text.is_empty() && subject.contains(text.as_str()))
                .then(|| subject.replace(text.as_str(), replacement)),
            Compiled::Glob(glob) => glob.is_match(subject).then(|| replacement.to_string()),
            Compiled::Regex(regex) => regex_replace::replace_all(regex, subject, replacement),
            Compiled::Sed { program, .. } => program.apply(subject),
            Compiled::JsonPath(_) | Compiled::XPath(_) => None,
        }?;
        budget.check_output(replaced.len()).ok()?;
        Some(replaced)
    }
}

fn sed_form(pattern: &str) -> Option<SedCommand<'_>> {
    if !pattern.starts_with("s/") {
        return None;
    }
    SedCommand::parse(pattern)
}

fn compile_sed(command: &SedCommand<'_>) -> Result<Compiled, String> {
    let flags = command.pattern_flags();
    if let Some(unknown) = flags.chars().find(|c| !SED_PATTERN_FLAGS.contains(*c)) {
        return Err(format!("unknown sed flag {unknown:?}"));
    }
    let (finder, program) = if flags.is_empty() {
        let literal = regex::escape(&command.search);
        (
            SedFinder::Literal,
            SedProgram::compile(&literal, &command.replace, flags),
        )
    } else {
        let finder = RegexOptions::from_flags(flags)
            .compile(&command.search)
            .map_err(|error| error.to_string())?;
        (
            SedFinder::Regex(finder),
            SedProgram::compile(&command.search, &command.replace, flags),
        )
    };
    Ok(Compiled::Sed {
        search: command.search.clone(),
        finder,
        program: program.map_err(|error| error.to_string())?,
    })
}

/// `/body/flags` with at least one character after the first `/` and only regex flag
/// letters after the last one.
fn regex_form(pattern: &str) -> Option<(&str, &str)> {
    let inner = pattern.strip_prefix('/')?;
    if pattern.len() <= 2 {
        return None;
    }
    let last = inner.rfind('/')?;
    let flags = inner.get(last + 1..)?;
    flags
        .chars()
        .all(|c| REGEX_FLAGS.contains(c))
        .then(|| (inner.get(..last).unwrap_or_default(), flags))
}

#[cfg(test)]
mod tests;
