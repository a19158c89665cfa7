//! The SQL functions rummy registers on every connection: `schemeOf`, `countTokens`,
//! `slugify`, and the pattern functions `hedmatch`, `hedsearch` and `hedreplace`.
//!
//! The pattern functions are the hedberg pattern language (glob, regex, sed, JSONPath,
//! XPath, literal); hedberg caches compiled patterns per thread. A pattern that does not
//! compile matches nothing.

use diesel::sql_types::{Nullable, Text};
use diesel::SqliteConnection;

use std::cell::RefCell;
use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};

use super::paths;
use super::DbError;
use crate::hedberg::{self, HedbergError, WorkLimit};

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

/// Body-search verdicts (`hedsearch`) evaluated beside the writer before a unit of work,
/// keyed by pattern and a digest of the body: inside the unit they are looked up, so the
/// writer does not compute them (a body changed since is a miss, computed under the
/// writer's budget). A search that ran out of budget is kept as its limit.
#[derive(Debug, Default)]
pub struct SearchVerdicts {
    verdicts: HashMap<(String, u64), Result<bool, WorkLimit>>,
}

thread_local! {
    static RECORDING: RefCell<Option<SearchVerdicts>> = const { RefCell::new(None) };
    static PREPARED: RefCell<Option<SearchVerdicts>> = const { RefCell::new(None) };
}

/// Runs `work` and returns, beside its result, every body search it evaluated.
pub fn recording<T>(work: impl FnOnce() -> T) -> (T, SearchVerdicts) {
    RECORDING.with(|slot| slot.replace(Some(SearchVerdicts::default())));
    let result = work();
    let verdicts = RECORDING.with(|slot| slot.take()).unwrap_or_default();
    (result, verdicts)
}

/// Runs `work` with `verdicts` answering the body searches they cover.
pub fn with_prepared<T>(verdicts: SearchVerdicts, work: impl FnOnce() -> T) -> T {
    PREPARED.with(|slot| slot.replace(Some(verdicts)));
    let result = work();
    PREPARED.with(|slot| slot.take());
    result
}

/// A 64-bit digest of a value, the key of work prepared beside the writer.
pub(crate) fn digest(value: &(impl Hash + ?Sized)) -> u64 {
    let mut hasher = DefaultHasher::new();
    value.hash(&mut hasher);
    hasher.finish()
}

/// `hedsearch`: a prepared verdict when there is one, else evaluated (and recorded when
/// recording). Work past the budget matches nothing; the budget says why.
fn body_search(pattern: String, subject: &str) -> bool {
    let prepared = PREPARED.with(|slot| slot.borrow().is_some());
    let recording = RECORDING.with(|slot| slot.borrow().is_some());
    if !prepared && !recording {
        return matches!(hedberg::pattern_search(&pattern, subject), Ok(Some(_)));
    }
    let key = (pattern, digest(subject));
    let known = PREPARED.with(|slot| {
        slot.borrow()
            .as_ref()
            .and_then(|verdicts| verdicts.verdicts.get(&key).copied())
    });
    let verdict = known.unwrap_or_else(|| match hedberg::pattern_search(&key.0, subject) {
        Ok(hit) => Ok(hit.is_some()),
        Err(HedbergError::WorkLimit(limit)) => Err(limit),
        Err(_) => Ok(false),
    });
    if recording {
        RECORDING.with(|slot| {
            if let Some(verdicts) = slot.borrow_mut().as_mut() {
                verdicts.verdicts.insert(key, verdict);
            }
        });
    }
    match verdict {
        Ok(found) => found,
        Err(limit) => {
            hedberg::budget::current().stop(limit);
            false
        }
    }
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
    hedmatch_utils::register_impl(
        conn,
        |pattern: Option<String>, subject: Option<String>| match (pattern, subject) {
            (Some(pattern), Some(subject)) => {
                i32::from(hedberg::pattern_match(&pattern, &subject).unwrap_or(false))
            }
            _ => 0,
        },
    )?;
    hedsearch_utils::register_impl(
        conn,
        |pattern: Option<String>, subject: Option<String>| match (pattern, subject) {
            (Some(pattern), Some(subject)) => i32::from(body_search(pattern, &subject)),
            _ => 0,
        },
    )?;
    hedreplace_utils::register_impl(
        conn,
        |pattern: Option<String>, replacement: Option<String>, subject: Option<String>| {
            let (pattern, subject) = (pattern?, subject?);
            let replacement = replacement.unwrap_or_default();
            hedberg::pattern_replace(&pattern, &replacement, &subject)
                .ok()
                .flatten()
        },
    )?;
    Ok(())
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

    fn connection() -> (tempfile::TempDir, SqliteConnection) {
        let dir = tempfile::tempdir().unwrap();
        let conn = crate::db::open_connection(
            &dir.path().join("f.db"),
            crate::db::ConnectionSetup::default(),
        )
        .unwrap();
        (dir, conn)
    }

    fn matches(conn: &mut SqliteConnection, pattern: &str, subject: &str) -> bool {
        use diesel::RunQueryDsl;
        diesel::select(hedmatch(Some(pattern), Some(subject)))
            .get_result::<i32>(conn)
            .unwrap()
            == 1
    }

    #[test]
    fn hedmatch_speaks_the_whole_pattern_language() {
        let (_dir, mut conn) = connection();
        assert!(matches(&mut conn, "*", "app.js"));
        assert!(!matches(&mut conn, "*", "src/app.js"));
        assert!(matches(&mut conn, "known://*", "known://a/b"));
        assert!(!matches(&mut conn, "known://*", "unknown://a"));
        assert!(matches(&mut conn, "**", "known://a/b"));
        assert!(matches(&mut conn, "/^src\\/.*\\.rs$/", "src/main.rs"));
        assert!(matches(&mut conn, "exact.txt", "exact.txt"));
        assert!(!matches(&mut conn, "exact.txt", "exact.txt.bak"));
        assert!(!matches(&mut conn, "/(unclosed/", "anything"));
    }

    #[test]
    fn prepared_searches_are_looked_up_not_computed() {
        use diesel::RunQueryDsl;
        use std::rc::Rc;
        let (_dir, mut conn) = connection();
        let body = format!("<r>{}</r>", "<i/>".repeat(200));
        let xpath = "//*[count(//*) > 3]";
        let search = |conn: &mut SqliteConnection| -> i32 {
            diesel::select(hedsearch(Some(xpath), Some(body.as_str())))
                .get_result(conn)
                .unwrap()
        };
        let (found, verdicts) = recording(|| search(&mut conn));
        assert_eq!(found, 1);
        let tiny = Rc::new(hedberg::Budget::new(hedberg::Limits {
            max_steps: 1,
            ..hedberg::Limits::default()
        }));
        let looked_up = hedberg::budget::scoped(Rc::clone(&tiny), || {
            with_prepared(verdicts, || search(&mut conn))
        });
        assert_eq!((looked_up, tiny.exceeded()), (1, None));
        let computed = hedberg::budget::scoped(Rc::clone(&tiny), || search(&mut conn));
        assert_eq!(computed, 0);
        assert!(tiny.exceeded().is_some());
    }

    #[test]
    fn hedsearch_and_hedreplace_work_inside_bodies() {
        use diesel::RunQueryDsl;
        let (_dir, mut conn) = connection();
        let found: i32 = diesel::select(hedsearch(Some("TODO"), Some("a TODO here")))
            .get_result(&mut conn)
            .unwrap();
        assert_eq!(found, 1);
        let missing: i32 = diesel::select(hedsearch(Some("TODO"), None::<String>))
            .get_result(&mut conn)
            .unwrap();
        assert_eq!(missing, 0);
        let replaced: Option<String> =
            diesel::select(hedreplace(Some("3000"), Some("8080"), Some("port = 3000")))
                .get_result(&mut conn)
                .unwrap();
        assert_eq!(replaced.as_deref(), Some("port = 8080"));
    }
}
