//! What the model sees on one turn: the visible entries projected into rows
//! ([`materialize`]) and the two-message packet assembled from them with its token measures
//! ([`packet`]).
//!
//! Materialization reads `v_model_context` on the DB thread, projects every row through the
//! tool registry's views and stores the result in `turn_context`, so that table holds exactly
//! what the model saw. Assembly itself is pure (the assembly plugins, `plugins::assembly`); it turns
//! the rows into a [`packet::Packet`] whose token figures are kept apart by measure:
//! projected entry tokens (display), the assembled estimate (this packet) and, later, the
//! provider's actual count.
//!
//! Errors: materialization fails only when the store does, so it returns
//! [`DbError`](crate::db::DbError); assembly never fails (hostile text is rendered, not
//! rejected).

pub(crate) mod materialize;
pub(crate) mod packet;
pub(crate) mod snapshot;
pub(crate) mod view;

pub(crate) use materialize::{ContextRow, Projector};
pub(crate) use packet::{BucketShare, Packet};

/// The one token formula, shared with the budget and the database's `countTokens`.
pub(crate) use crate::budget::TokenMath;
