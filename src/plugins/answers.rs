//! What a unit of work's commands need from outside the store (a page, a search's hits, an
//! MCP server's answer), obtained before the unit begins so that the writer never waits on
//! the network.
//!
//! Each kind of answer is one type. Whoever obtains them puts them in [`Answers`]; the unit
//! runs inside [`Answers::apply`], and a handler finds its kind with [`answered`]. What the
//! unit does not take is dropped with it, even when it panics.

use std::any::{Any, TypeId};
use std::cell::RefCell;
use std::collections::{HashMap, VecDeque};
use std::hash::Hash;

thread_local! {
    static CURRENT: RefCell<Option<Answers>> = const { RefCell::new(None) };
}

/// The answers obtained for one unit of work, at most one value of each kind.
#[derive(Default)]
pub struct Answers {
    kinds: HashMap<TypeId, Box<dyn Any + Send>>,
}

impl std::fmt::Debug for Answers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Answers")
            .field("kinds", &self.kinds.len())
            .finish()
    }
}

impl Answers {
    /// Answers of one kind.
    pub fn of<T: Any + Send>(answers: T) -> Answers {
        Answers::default().with(answers)
    }

    /// These answers and `answers`, in place of any of the same kind.
    pub fn with<T: Any + Send>(mut self, answers: T) -> Answers {
        self.kinds.insert(TypeId::of::<T>(), Box::new(answers));
        self
    }

    /// Runs `work` with these answers for its handlers to find; the answers of a unit that
    /// runs inside `work` stand in for them until it ends.
    pub fn apply<R>(self, work: impl FnOnce() -> R) -> R {
        let outer = CURRENT.with(|current| current.replace(Some(self)));
        let _restore = Restore(Some(outer));
        work()
    }
}

/// Puts back the answers that stood before a unit, when it ends or unwinds.
struct Restore(Option<Option<Answers>>);

impl Drop for Restore {
    fn drop(&mut self) {
        let outer = self.0.take().flatten();
        CURRENT.with(|current| current.replace(outer));
    }
}

/// What `look` makes of the answers of kind `T` of the unit running on this thread; `None`
/// outside a unit, or when none of that kind were obtained.
pub fn answered<T: Any, R>(look: impl FnOnce(&mut T) -> R) -> Option<R> {
    CURRENT.with(|current| {
        let mut current = current.borrow_mut();
        let answers = current.as_mut()?.kinds.get_mut(&TypeId::of::<T>())?;
        answers.downcast_mut::<T>().map(look)
    })
}

/// A kind of answers kept per command, by the command's key `K` (a reply may write the same
/// command twice: its answers are taken in the order they were put).
#[derive(Debug)]
pub struct Keyed<K, V> {
    waiting: HashMap<K, VecDeque<V>>,
}

impl<K, V> Default for Keyed<K, V> {
    fn default() -> Self {
        Keyed {
            waiting: HashMap::new(),
        }
    }
}

impl<K: Eq + Hash + 'static, V: 'static> Keyed<K, V> {
    /// Keeps `answer` for the command at `key`.
    pub fn put(&mut self, key: K, answer: V) {
        self.waiting.entry(key).or_default().push_back(answer);
    }

    /// The first answer kept for `key` by the unit running on this thread.
    pub fn take(key: &K) -> Option<V> {
        answered::<Keyed<K, V>, _>(|answers| answers.waiting.get_mut(key)?.pop_front()).flatten()
    }
}

#[cfg(test)]
mod tests {
    use std::panic::{catch_unwind, AssertUnwindSafe};

    use super::{answered, Answers, Keyed};

    #[derive(Debug, PartialEq)]
    struct Pages(Vec<&'static str>);

    #[derive(Debug, PartialEq)]
    struct Hits(u32);

    fn next_page() -> Option<&'static str> {
        answered::<Pages, _>(|pages| pages.0.pop()).flatten()
    }

    #[test]
    fn a_handler_finds_its_kind_only_inside_the_unit() {
        assert_eq!(next_page(), None);
        let answers = Answers::of(Pages(vec!["b", "a"])).with(Hits(3));
        let taken = answers.apply(|| {
            let first = next_page();
            let hits = answered::<Hits, _>(|hits| hits.0);
            (first, next_page(), next_page(), hits)
        });
        assert_eq!(taken, (Some("a"), Some("b"), None, Some(3)));
        assert_eq!(next_page(), None);
        assert_eq!(answered::<Hits, _>(|hits| hits.0), None);
    }

    #[test]
    fn a_kind_put_again_replaces_the_first() {
        let answers = Answers::of(Hits(1)).with(Hits(2));
        assert_eq!(
            answers.apply(|| answered::<Hits, _>(|hits| hits.0)),
            Some(2)
        );
    }

    #[test]
    fn an_inner_unit_stands_in_until_it_ends() {
        let seen = Answers::of(Hits(1)).apply(|| {
            let inner = Answers::of(Pages(vec!["p"]))
                .apply(|| (answered::<Hits, _>(|hits| hits.0), next_page()));
            (inner, answered::<Hits, _>(|hits| hits.0))
        });
        assert_eq!(seen, ((None, Some("p")), Some(1)));
    }

    #[test]
    fn a_unit_that_panics_leaves_nothing_for_the_next() {
        let unwound = catch_unwind(AssertUnwindSafe(|| {
            Answers::of(Pages(vec!["stale"])).apply(|| panic!("handler bug"))
        }));
        assert!(unwound.is_err());
        assert_eq!(next_page(), None);
    }

    #[test]
    fn keyed_answers_are_taken_in_order_inside_their_unit_only() {
        let mut outcomes: Keyed<&str, u32> = Keyed::default();
        outcomes.put("call", 1);
        outcomes.put("call", 2);
        outcomes.put("other", 3);
        let taken = Answers::of(outcomes).apply(|| {
            let first = Keyed::<&str, u32>::take(&"call");
            let second = Keyed::<&str, u32>::take(&"call");
            (first, second, Keyed::<&str, u32>::take(&"call"))
        });
        assert_eq!(taken, (Some(1), Some(2), None));
        assert_eq!(
            Keyed::<&str, u32>::take(&"other"),
            None,
            "nothing outside the unit"
        );
    }
}
