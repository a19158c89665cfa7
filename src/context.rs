//! What the model sees on one turn: the visible entries projected into rows
//! ([`materialize`]) and the two-message packet assembled from them with its token measures
//! ([`packet`]).
//!
//! Materialization reads `v_model_context` on the DB thread, projects every row through the
//! tool registry's views and stores the result in `turn_context`, so that table holds exactly
//! what the model saw. Assembly itself is pure (see [`crate::plugins::assembly`]); it turns
//! the rows into a [`packet::Packet`] whose token figures are kept apart by measure:
//! projected entry tokens (display), the assembled estimate (this packet) and, later, the
//! provider's actual count.
//!
//! Errors: materialization fails only when the store does, so it returns
//! [`DbError`](crate::db::DbError); assembly never fails (hostile text is rendered, not
//! rejected).

pub mod materialize;
pub mod packet;

use crate::db::functions::estimate_tokens;

pub use materialize::{ContextRow, MaterializeContext, Projector, ReadContext, TurnTarget};
pub use packet::{Bucket, BucketShare, Packet};

/// The one token formula, `ceil(characters / divisor)`, shared with the database's
/// `countTokens` (the same function backs both).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TokenMath {
    divisor: u32,
}

impl TokenMath {
    /// Token math with `divisor` characters per token (0 is treated as 1).
    pub fn new(divisor: u32) -> TokenMath {
        TokenMath {
            divisor: divisor.max(1),
        }
    }

    /// Characters per token.
    pub fn divisor(self) -> u32 {
        self.divisor
    }

    /// The token estimate of `text`.
    pub fn count(self, text: &str) -> i64 {
        i64::from(estimate_tokens(text, self.divisor))
    }
}
