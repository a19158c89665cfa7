//! The SQL functions the schema needs (generated columns, views, triggers): `schemeOf`,
//! `countTokens` and `searchable` (memory's full-text indexes), registered on every SQLite
//! connection from the Rust below; the PostgreSQL migrations define the same three in
//! PL/pgSQL, with the same results, and SQLite's own
//! `json_patch`, `json_extract` and `datetime` besides; the tables of inputs and outputs in
//! the tests pin all of them on both backends.
//!
//! Entry patterns (the hedberg pattern language: glob, regex, sed, JSONPath, XPath,
//! literal) are evaluated in Rust on either backend (`queries::entries::selected`); body
//! searches go through `body_search`, which looks up what was prepared beside the writer.

use diesel::sql_types::{Nullable, Text};
use diesel::SqliteConnection;

use std::cell::RefCell;
use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};

use super::paths;
use super::queries::memory;
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
    /// The text as memory's full-text indexes read it (`queries::memory::searchable`).
    fn searchable(text: Nullable<Text>) -> Nullable<Text>;
}

/// The token estimate rummy uses everywhere: `ceil(characters / divisor)`, 0 for empty text.
/// A divisor of 0 is treated as 1.
pub(crate) fn estimate_tokens(text: &str, divisor: u32) -> i32 {
    let characters = text.chars().count();
    let divisor = usize::try_from(divisor.max(1)).unwrap_or(1);
    i32::try_from(characters.div_ceil(divisor)).unwrap_or(i32::MAX)
}

/// Body-search verdicts evaluated beside the writer before a unit of work,
/// keyed by pattern and a digest of the body: inside the unit they are looked up, so the
/// writer does not compute them (a body changed since is a miss, computed under the
/// writer's budget). A search that ran out of budget is kept as its limit.
#[derive(Debug, Default)]
pub(crate) struct SearchVerdicts {
    verdicts: HashMap<(String, u64), Result<bool, WorkLimit>>,
}

thread_local! {
    static RECORDING: RefCell<Option<SearchVerdicts>> = const { RefCell::new(None) };
    static PREPARED: RefCell<Option<SearchVerdicts>> = const { RefCell::new(None) };
}

/// Runs `work` and returns, beside its result, every body search it evaluated.
pub(crate) fn recording<T>(work: impl FnOnce() -> T) -> (T, SearchVerdicts) {
    RECORDING.with(|slot| slot.replace(Some(SearchVerdicts::default())));
    let result = work();
    let verdicts = RECORDING.with(|slot| slot.take()).unwrap_or_default();
    (result, verdicts)
}

/// Runs `work` with `verdicts` answering the body searches they cover.
pub(crate) fn with_prepared<T>(verdicts: SearchVerdicts, work: impl FnOnce() -> T) -> T {
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

/// Whether `subject` (an entry's body) has a match for `pattern`: a prepared verdict when
/// there is one, else evaluated (and recorded when recording). Work past the budget matches
/// nothing; the budget says why.
pub(crate) fn body_search(pattern: &str, subject: &str) -> bool {
    let prepared = PREPARED.with(|slot| slot.borrow().is_some());
    let recording = RECORDING.with(|slot| slot.borrow().is_some());
    if !prepared && !recording {
        return matches!(hedberg::pattern_search(pattern, subject), Ok(Some(_)));
    }
    let key = (pattern.to_owned(), digest(subject));
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
pub(crate) fn register_functions(
    conn: &mut SqliteConnection,
    token_divisor: u32,
) -> Result<(), DbError> {
    scheme_of_utils::register_impl(conn, |path: Option<String>| {
        path.as_deref()
            .and_then(paths::scheme_of)
            .map(str::to_owned)
    })?;
    count_tokens_utils::register_impl(conn, move |text: Option<String>| {
        estimate_tokens(text.as_deref().unwrap_or(""), token_divisor)
    })?;
    searchable_utils::register_impl(conn, |text: Option<String>| {
        text.map(|text| memory::searchable(&text).into_owned())
    })?;
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

    /// `schemeOf` and `countTokens` (divisor 4): input, then the result both backends'
    /// SQL and the Rust give.
    const SCHEMES: [(Option<&str>, Option<&str>); 7] = [
        (Some("known://a"), Some("known")),
        (Some("src/a.js"), None),
        (Some("://x"), None),
        (Some("a://b://c"), Some("a")),
        (Some("HTTPS://x.org"), Some("HTTPS")),
        (Some("é://ü"), Some("é")),
        (None, None),
    ];
    const TOKENS: [(Option<&str>, i32); 6] = [
        (Some(""), 0),
        (Some("abcd"), 1),
        (Some("abcde"), 2),
        (Some("éééé"), 1),
        (Some("日本語のテキスト"), 2),
        (None, 0),
    ];

    /// `searchable`: runs of Chinese, Japanese and Korean letters as their pairs, their
    /// punctuation as spaces, everything else as it was.
    const SEARCHABLE: [(Option<&str>, Option<&str>); 8] = [
        (Some("deploy with care"), Some("deploy with care")),
        (
            Some("数据库每天备份。"),
            Some(" 数据 据库 库每 每天 天备 备份  "),
        ),
        (Some("用Rust写"), Some("  Rust  ")),
        (
            Some("東京に行く。テスト・ケース"),
            Some(" 東京 京に に行 行く   テス スト   ケー ース "),
        ),
        (Some("Rust、Go—“ok”！"), Some("Rust Go  ok  ")),
        (Some("서버를 재시작"), Some(" 서버 버를   재시 시작 ")),
        (Some("𠮷野家々"), Some(" 𠮷野 野家 家々 ")),
        (None, None),
    ];

    /// `json_patch(target, patch)`, which PostgreSQL gets from the migrations.
    const PATCHES: [(&str, &str, &str); 4] = [
        (
            r#"{"b":1,"a":{"x":1,"y":2}}"#,
            r#"{"a":{"x":null,"z":[1,2]},"c":"new","b":null}"#,
            r#"{"a":{"y":2,"z":[1,2]},"c":"new"}"#,
        ),
        (
            "{}",
            r#"{"k":{"n":null,"m":1},"s":"a\"b"}"#,
            r#"{"k":{"m":1},"s":"a\"b"}"#,
        ),
        (r#"{"a":1}"#, r#"{"a":2}"#, r#"{"a":2}"#),
        (r#"{"é":"ü"}"#, r#"{"z":true}"#, r#"{"é":"ü","z":true}"#),
    ];
    /// `CAST(json_extract(attributes, '$.summary') AS TEXT)`, as the schema reads a summary.
    const SUMMARIES: [(&str, Option<&str>); 5] = [
        (r#"{"summary":"hi"}"#, Some("hi")),
        (r#"{"summary":5}"#, Some("5")),
        (r#"{"summary":null}"#, None),
        ("{}", None),
        (r#"{"summary":{"a":1}}"#, Some(r#"{"a":1}"#)),
    ];

    #[derive(diesel::QueryableByName)]
    struct Value {
        #[diesel(sql_type = Nullable<Text>)]
        value: Option<String>,
    }

    /// The tables through `conn`'s SQL functions.
    fn sql_agrees_with_the_table(conn: &mut crate::db::Conn) {
        use crate::db::statement::statement;
        use diesel::RunQueryDsl;
        for (target, patch, patched) in PATCHES {
            let sql: Value = statement("SELECT json_patch(?, ?) AS value")
                .bind::<Text, _>(target)
                .bind::<Text, _>(patch)
                .get_result(conn)
                .unwrap();
            assert_eq!(
                sql.value.as_deref(),
                Some(patched),
                "json_patch({target}, {patch})"
            );
        }
        for (attributes, summary) in SUMMARIES {
            let sql: Value =
                statement("SELECT CAST(json_extract(?, '$.summary') AS TEXT) AS value")
                    .bind::<Text, _>(attributes)
                    .get_result(conn)
                    .unwrap();
            assert_eq!(sql.value.as_deref(), summary, "json_extract({attributes})");
        }
        let now: Value = statement("SELECT datetime('now', '-' || ? || ' days') AS value")
            .bind::<diesel::sql_types::Integer, _>(3)
            .get_result(conn)
            .unwrap();
        let shape: String = now
            .value
            .unwrap_or_default()
            .chars()
            .map(|c| if c.is_ascii_digit() { '9' } else { c })
            .collect();
        assert_eq!(shape, "9999-99-99 99:99:99");
        for (path, scheme) in SCHEMES {
            let sql: Option<String> = diesel::select(scheme_of(path)).get_result(conn).unwrap();
            assert_eq!(sql.as_deref(), scheme, "schemeOf({path:?})");
            assert_eq!(
                path.and_then(paths::scheme_of),
                scheme,
                "scheme_of({path:?})"
            );
        }
        for (text, rewritten) in SEARCHABLE {
            let sql: Option<String> = diesel::select(searchable(text)).get_result(conn).unwrap();
            assert_eq!(sql.as_deref(), rewritten, "searchable({text:?})");
        }
        for (text, tokens) in TOKENS {
            let sql: i32 = diesel::select(count_tokens(text)).get_result(conn).unwrap();
            assert_eq!(sql, tokens, "countTokens({text:?})");
            assert_eq!(estimate_tokens(text.unwrap_or(""), 4), tokens);
        }
    }

    #[test]
    fn sqlite_functions_give_the_shared_results() {
        let mut db = crate::db::testing::TestDb::sqlite();
        sql_agrees_with_the_table(&mut db.conn);
    }

    #[test]
    #[ignore = "needs PostgreSQL: RUMMY_TEST_DATABASE_URL"]
    fn postgres_functions_give_the_shared_results() {
        let database = crate::db::testing::ScratchDatabase::required();
        let mut conn = database.migrated().unwrap();
        sql_agrees_with_the_table(&mut conn);
    }

    #[test]
    fn prepared_searches_are_looked_up_not_computed() {
        use std::rc::Rc;
        let body = format!("<r>{}</r>", "<i/>".repeat(200));
        let xpath = "//*[count(//*) > 3]";
        let (found, verdicts) = recording(|| body_search(xpath, &body));
        assert!(found);
        let tiny = Rc::new(hedberg::Budget::new(hedberg::Limits {
            max_steps: 1,
            ..hedberg::Limits::default()
        }));
        let looked_up = hedberg::budget::scoped(Rc::clone(&tiny), || {
            with_prepared(verdicts, || body_search(xpath, &body))
        });
        assert_eq!((looked_up, tiny.exceeded()), (true, None));
        let computed = hedberg::budget::scoped(Rc::clone(&tiny), || body_search(xpath, &body));
        assert!(!computed);
        assert!(tiny.exceeded().is_some());
    }
}
