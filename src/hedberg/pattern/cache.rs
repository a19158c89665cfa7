//! The free functions the SQL layer calls, with compiled patterns memoised per thread (a
//! query calls them once per row with the same pattern).

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

use super::{Pattern, SearchHit};
use crate::hedberg::{budget, HedbergError};

/// Compiled patterns kept per thread; the memo is dropped whole when it grows past this.
const MEMO_CAPACITY: usize = 256;

thread_local! {
    static MEMO: RefCell<HashMap<String, Rc<Pattern>>> = RefCell::new(HashMap::new());
}

fn compiled(pattern: &str) -> Result<Rc<Pattern>, HedbergError> {
    if let Some(found) = MEMO.with(|memo| memo.borrow().get(pattern).cloned()) {
        return Ok(found);
    }
    let fresh = Rc::new(Pattern::compile(pattern)?);
    MEMO.with(|memo| {
        let mut memo = memo.borrow_mut();
        if memo.len() >= MEMO_CAPACITY {
            memo.clear();
        }
        memo.insert(pattern.to_string(), Rc::clone(&fresh));
    });
    Ok(fresh)
}

/// `hedmatch(pattern, subject)`: see [`Pattern::is_match`]. Fails once the thread's budget
/// is spent.
pub fn pattern_match(pattern: &str, subject: &str) -> Result<bool, HedbergError> {
    let matched = compiled(pattern)?.is_match(subject);
    within_budget(matched)
}

/// `hedsearch(pattern, subject)`: see [`Pattern::search`].
pub fn pattern_search(pattern: &str, subject: &str) -> Result<Option<SearchHit>, HedbergError> {
    let hit = compiled(pattern)?.search(subject);
    within_budget(hit)
}

/// The result, unless the budget ran out while it was computed (then it is not to be used).
fn within_budget<T>(result: T) -> Result<T, HedbergError> {
    match budget::current().exceeded() {
        Some(limit) => Err(limit.into()),
        None => Ok(result),
    }
}

/// `hedreplace(pattern, replacement, subject)`: see [`Pattern::replace`].
pub fn pattern_replace(
    pattern: &str,
    replacement: &str,
    subject: &str,
) -> Result<Option<String>, HedbergError> {
    let replaced = compiled(pattern)?.replace(subject, replacement);
    within_budget(replaced)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repeated_calls_agree_and_errors_are_not_memoised() {
        for _ in 0..3 {
            assert_eq!(pattern_match("/a/g", "cat"), Ok(true));
        }
        assert!(pattern_match("/(/", "x").is_err());
        assert!(pattern_match("/(/", "x").is_err());
    }

    #[test]
    fn memo_stays_bounded() {
        for n in 0..(MEMO_CAPACITY * 2) {
            assert_eq!(pattern_match(&format!("p{n}"), &format!("p{n}")), Ok(true));
        }
        assert!(MEMO.with(|memo| memo.borrow().len()) <= MEMO_CAPACITY);
    }
}
