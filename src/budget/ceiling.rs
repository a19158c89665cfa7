//! The pre-LLM ceiling check: this turn's calibrated packet against the context window.
//!
//! Over the window → 413 without calling the LLM (seed SPEC §4.5: "`contextSize` is the
//! ceiling. Over = 413"). The write guard keeps its own, lower ceiling during dispatch, so
//! the gap between the two absorbs what the guard cannot see. Panic loops do not use this
//! check; their turns are gated by the panic tracker instead.

use super::tokens::{CalibratedTokens, ContextWindow};

/// The outcome of the pre-LLM check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CeilingVerdict {
    /// The packet fits; `headroom` tokens remain in the window.
    Fits {
        /// Window minus packet.
        headroom: u64,
    },
    /// The model's window is unknown, so nothing is enforced.
    Unbounded,
    /// The packet is larger than the window: 413, do not call the LLM.
    Overflow(Overflow),
}

/// A packet that does not fit its window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Overflow {
    /// The calibrated size of the packet.
    pub measured: CalibratedTokens,
    /// The window it was checked against.
    pub window: ContextWindow,
    /// How far over: `measured − window`, at least 1.
    pub overflow: u64,
}

/// Checks a turn's calibrated packet against the window.
pub(crate) fn check_ceiling(measured: CalibratedTokens, window: ContextWindow) -> CeilingVerdict {
    if window.is_unknown() {
        return CeilingVerdict::Unbounded;
    }
    let limit = window.limit();
    if measured <= limit {
        return CeilingVerdict::Fits {
            headroom: limit.saturating_sub(measured).get(),
        };
    }
    CeilingVerdict::Overflow(Overflow {
        measured,
        window,
        overflow: measured.saturating_sub(limit).get(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_packet_at_the_window_fits() {
        let verdict = check_ceiling(CalibratedTokens::new(8192), ContextWindow::new(8192));
        assert_eq!(verdict, CeilingVerdict::Fits { headroom: 0 });
        let verdict = check_ceiling(CalibratedTokens::new(8000), ContextWindow::new(8192));
        assert_eq!(verdict, CeilingVerdict::Fits { headroom: 192 });
    }

    #[test]
    fn one_token_over_is_an_overflow_with_its_amount() {
        let verdict = check_ceiling(CalibratedTokens::new(8193), ContextWindow::new(8192));
        let CeilingVerdict::Overflow(overflow) = verdict else {
            panic!("expected an overflow, got {verdict:?}");
        };
        assert_eq!(overflow.overflow, 1);
        assert_eq!(overflow.measured.get(), 8193);
        assert_eq!(overflow.window.get(), 8192);
    }

    #[test]
    fn an_unknown_window_enforces_nothing() {
        let verdict = check_ceiling(CalibratedTokens::new(u64::MAX), ContextWindow::new(0));
        assert_eq!(verdict, CeilingVerdict::Unbounded);
    }
}
