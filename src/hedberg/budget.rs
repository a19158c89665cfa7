//! The work one request or one command may spend on patterns and edits, so that no input
//! (an XPath with `count()` over a large body, a sed command that multiplies a file, an
//! edit repeated a thousand times) can hold a thread for long or take much memory.
//!
//! A [`Budget`] counts steps (one step is 64 bytes scanned or a JSON value visited; an
//! XPath node visit is charged 16 steps, up front), keeps a deadline, watches a cancellation
//! flag (set when the caller gave up) and caps the size of any text an edit produces. It is installed for the current thread with [`scoped`];
//! hedberg's functions charge the installed budget and, once it is spent, stop at once and
//! fail with [`HedbergError::WorkLimit`](super::HedbergError::WorkLimit). Without an installed
//! budget each call gets a fresh one with [`Limits::default`].

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Steps between two looks at the clock and the cancellation flag.
const CHECK_EVERY: u64 = 4096;

/// Bytes scanned per step.
pub(crate) const BYTES_PER_STEP: usize = 64;

/// How much work one unit (a request, a command, a unit of database work) may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Steps: nodes visited, or 64-byte stretches of text scanned.
    pub max_steps: u64,
    /// Wall-clock time.
    pub timeout: Duration,
    /// Largest text an edit or a replacement may produce, in bytes.
    pub max_output_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_steps: 20_000_000,
            timeout: Duration::from_secs(5),
            max_output_bytes: 4 * 1024 * 1024,
        }
    }
}

/// Which limit stopped the work. Its text is model- and client-facing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum WorkLimit {
    /// The step budget is spent.
    #[error("it needs more than {0} steps of pattern or edit work")]
    Steps(u64),
    /// The deadline passed.
    #[error("it ran past the {} ms allowed for pattern or edit work", .0.as_millis())]
    Time(Duration),
    /// An edit or replacement would produce more than this many bytes.
    #[error("its result would exceed {0} bytes")]
    Output(usize),
    /// The caller gave up (a timeout, a closed connection, an aborted run).
    #[error("its caller gave up")]
    Cancelled,
}

/// A budget being spent on one thread.
#[derive(Debug)]
pub struct Budget {
    limits: Limits,
    steps_left: Cell<u64>,
    until_check: Cell<u64>,
    deadline: Instant,
    cancelled: Option<Arc<AtomicBool>>,
    exceeded: Cell<Option<WorkLimit>>,
}

impl Budget {
    /// A fresh budget; the clock starts now.
    pub fn new(limits: Limits) -> Budget {
        Budget {
            limits,
            steps_left: Cell::new(limits.max_steps),
            until_check: Cell::new(CHECK_EVERY),
            deadline: Instant::now() + limits.timeout,
            cancelled: None,
            exceeded: Cell::new(None),
        }
    }

    /// The same budget, stopped as soon as `flag` is set.
    pub fn cancelled_by(self, flag: Arc<AtomicBool>) -> Budget {
        Budget {
            cancelled: Some(flag),
            ..self
        }
    }

    /// The limits it was made with.
    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// When the time limit passes.
    pub fn deadline(&self) -> Instant {
        self.deadline
    }

    /// The limit that stopped the work, once one has.
    pub fn exceeded(&self) -> Option<WorkLimit> {
        self.exceeded.get()
    }

    /// Spends `steps`; fails (now and ever after) once a limit is reached.
    pub fn charge(&self, steps: u64) -> Result<(), WorkLimit> {
        if let Some(limit) = self.exceeded.get() {
            return Err(limit);
        }
        let Some(left) = self.steps_left.get().checked_sub(steps) else {
            return self.fail(WorkLimit::Steps(self.limits.max_steps));
        };
        self.steps_left.set(left);
        match self.until_check.get().checked_sub(steps) {
            Some(until) if until > 0 => {
                self.until_check.set(until);
                Ok(())
            }
            _ => {
                self.until_check.set(CHECK_EVERY);
                self.check()
            }
        }
    }

    /// Spends the steps of scanning `bytes` bytes of text.
    pub fn charge_bytes(&self, bytes: usize) -> Result<(), WorkLimit> {
        self.charge(u64::try_from(bytes / BYTES_PER_STEP + 1).unwrap_or(u64::MAX))
    }

    /// Fails when a produced text of `bytes` bytes is over the output cap.
    pub fn check_output(&self, bytes: usize) -> Result<(), WorkLimit> {
        if bytes > self.limits.max_output_bytes {
            return self.fail(WorkLimit::Output(self.limits.max_output_bytes));
        }
        Ok(())
    }

    /// Looks at the clock and the cancellation flag.
    pub fn check(&self) -> Result<(), WorkLimit> {
        if let Some(limit) = self.exceeded.get() {
            return Err(limit);
        }
        if self
            .cancelled
            .as_ref()
            .is_some_and(|flag| flag.load(Ordering::Relaxed))
        {
            return self.fail(WorkLimit::Cancelled);
        }
        if Instant::now() >= self.deadline {
            return self.fail(WorkLimit::Time(self.limits.timeout));
        }
        Ok(())
    }

    /// Records that work done for this unit elsewhere (beside the writer) ran out.
    pub fn stop(&self, limit: WorkLimit) {
        self.exceeded.set(Some(limit));
    }

    fn fail(&self, limit: WorkLimit) -> Result<(), WorkLimit> {
        self.exceeded.set(Some(limit));
        Err(limit)
    }
}

thread_local! {
    static CURRENT: RefCell<Option<Rc<Budget>>> = const { RefCell::new(None) };
}

/// Runs `work` with `budget` installed for this thread (restoring the previous one after).
pub fn scoped<T>(budget: Rc<Budget>, work: impl FnOnce() -> T) -> T {
    let previous = CURRENT.with(|current| current.replace(Some(budget)));
    let result = work();
    CURRENT.with(|current| current.replace(previous));
    result
}

/// The installed budget, or a fresh default one for a call made without.
pub fn current() -> Rc<Budget> {
    CURRENT
        .with(|current| current.borrow().clone())
        .unwrap_or_else(|| Rc::new(Budget::new(Limits::default())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_run_out_and_stay_out() {
        let budget = Budget::new(Limits {
            max_steps: 10,
            ..Limits::default()
        });
        assert!(budget.charge(6).is_ok());
        assert_eq!(budget.charge(6), Err(WorkLimit::Steps(10)));
        assert_eq!(budget.charge(1), Err(WorkLimit::Steps(10)));
        assert_eq!(budget.exceeded(), Some(WorkLimit::Steps(10)));
    }

    #[test]
    fn cancellation_and_deadline_are_seen() {
        let flag = Arc::new(AtomicBool::new(false));
        let budget = Budget::new(Limits::default()).cancelled_by(Arc::clone(&flag));
        assert!(budget.check().is_ok());
        flag.store(true, Ordering::Relaxed);
        assert_eq!(budget.charge(CHECK_EVERY), Err(WorkLimit::Cancelled));
        let late = Budget::new(Limits {
            timeout: Duration::ZERO,
            ..Limits::default()
        });
        assert!(matches!(late.check(), Err(WorkLimit::Time(_))));
    }

    #[test]
    fn output_is_capped_and_budgets_nest() {
        let budget = Rc::new(Budget::new(Limits {
            max_output_bytes: 4,
            ..Limits::default()
        }));
        assert!(budget.check_output(4).is_ok());
        assert_eq!(budget.check_output(5), Err(WorkLimit::Output(4)));
        let inner = scoped(Rc::clone(&budget), || current().limits().max_output_bytes);
        assert_eq!(inner, 4);
        assert_eq!(current().limits(), Limits::default());
    }
}
