//! Edits computed beside the writer. Before the unit of work that runs a reply's commands,
//! each `<set>` edit is applied to the entries it selects as they are then, under the request
//! limits on a reader; inside the unit the writer looks each result up by path, bodies and
//! blocks, so a large or slow edit (the text, its merge blocks and its diff) never holds the
//! writer. A body changed since (an earlier command of the same reply, a proposal amended in
//! the same turn) is a miss, computed under the writer's own small budget.

use std::cell::RefCell;
use std::collections::HashMap;

use crate::db::functions::digest;
use crate::hedberg::{apply_blocks, unified_diff, EditBlock, Edited, HedbergError};
use crate::plugins::bundled::tools::merge;

/// An edit applied to one body, with what its result or proposal shows.
#[derive(Debug, Clone)]
pub(crate) struct Product {
    pub edited: Edited,
    /// Merge blocks from the base text to the edited one; `None` when nothing changes.
    pub merge: Option<String>,
    /// The unified diff from the base text; present whenever `merge` is.
    pub patch: Option<String>,
}

/// Edit results keyed by path, base text, edited text and blocks.
#[derive(Debug, Default)]
pub(crate) struct PreparedEdits {
    products: HashMap<u64, Result<Product, HedbergError>>,
}

thread_local! {
    static PREPARED: RefCell<Option<PreparedEdits>> = const { RefCell::new(None) };
}

fn key(path: &str, base: &str, current: &str, blocks: &[EditBlock]) -> u64 {
    digest(&(path, base, current, blocks))
}

/// Applies `blocks` to `current`; the merge blocks and the diff go from `base` (the file as
/// stored, which `current` may already amend) to the result. Charged to the thread's budget.
fn compute(
    path: &str,
    base: &str,
    current: &str,
    blocks: &[EditBlock],
) -> Result<Product, HedbergError> {
    let edited = apply_blocks(current, blocks)?;
    let merge = merge::render(base, &edited.body);
    let patch = merge
        .as_ref()
        .map(|_| unified_diff(path, base, &edited.body));
    Ok(Product {
        edited,
        merge,
        patch,
    })
}

impl PreparedEdits {
    /// Applies `blocks` to the body of the entry at `path` and keeps the result. Returns
    /// false once the budget is spent (nothing later can be computed either).
    pub(crate) fn prepare(&mut self, path: &str, body: &str, blocks: &[EditBlock]) -> bool {
        let product = compute(path, body, body, blocks);
        let spent = matches!(product, Err(HedbergError::WorkLimit(_)));
        self.products.insert(key(path, body, body, blocks), product);
        !spent
    }

    /// Runs `work` with these results answering the edits they cover.
    pub(crate) fn apply<T>(self, work: impl FnOnce() -> T) -> T {
        PREPARED.with(|slot| slot.replace(Some(self)));
        let result = work();
        PREPARED.with(|slot| slot.take());
        result
    }
}

/// The edit of `current` by `blocks`, from `base`: the prepared result when there is one,
/// else computed now.
pub(crate) fn edit(
    path: &str,
    base: &str,
    current: &str,
    blocks: &[EditBlock],
) -> Result<Product, HedbergError> {
    let prepared = PREPARED.with(|slot| {
        slot.borrow().as_ref().and_then(|edits| {
            edits
                .products
                .get(&key(path, base, current, blocks))
                .cloned()
        })
    });
    prepared.unwrap_or_else(|| compute(path, base, current, blocks))
}

#[cfg(test)]
mod tests {
    use std::rc::Rc;

    use super::*;
    use crate::hedberg::budget::{self, Budget, Limits};

    fn replace(search: &str, with: &str) -> Vec<EditBlock> {
        vec![EditBlock::literal(search, with)]
    }

    #[test]
    fn a_prepared_edit_is_looked_up_not_recomputed() {
        let blocks = replace("alpha", "beta");
        let mut edits = PreparedEdits::default();
        assert!(edits.prepare("a.txt", "alpha\n", &blocks));
        // Nothing may be computed here: a budget of no steps and no time.
        let spent = Rc::new(Budget::new(Limits {
            max_steps: 0,
            timeout: std::time::Duration::ZERO,
            ..Limits::default()
        }));
        let product = budget::scoped(spent, || {
            edits.apply(|| edit("a.txt", "alpha\n", "alpha\n", &blocks))
        })
        .unwrap();
        assert_eq!(product.edited.body, "beta\n");
        assert!(product.merge.unwrap().contains("beta"));
        assert!(product.patch.unwrap().contains("+beta"));
    }

    #[test]
    fn a_changed_body_is_computed_under_the_current_budget() {
        let blocks = replace("alpha", "beta");
        let mut edits = PreparedEdits::default();
        edits.prepare("a.txt", "alpha\n", &blocks);
        let spent = Rc::new(Budget::new(Limits {
            max_steps: 0,
            ..Limits::default()
        }));
        let changed = budget::scoped(spent, || {
            edits.apply(|| edit("a.txt", "alpha\n", "alpha alpha\n", &blocks))
        });
        assert!(
            matches!(changed, Err(HedbergError::WorkLimit(_))),
            "{changed:?}"
        );
        let fresh = edit("a.txt", "alpha\n", "alpha\n", &blocks).unwrap();
        assert_eq!(fresh.edited.body, "beta\n");
    }

    #[test]
    fn an_edit_that_changes_nothing_has_no_merge_and_no_patch() {
        let product = edit("a.txt", "same\n", "same\n", &replace("same", "same")).unwrap();
        assert_eq!(product.merge, None);
        assert_eq!(product.patch, None);
    }
}
