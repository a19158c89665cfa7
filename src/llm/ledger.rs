//! The record of every answered model call (`model_calls`): a run's turns, a sub-agent's
//! turns (`subagent`, under the sub-agent's run) and memory's sidecar calls alike. A caller
//! says whom and what a call is for ([`CallFor`]) with its request; the provider actor
//! records the answer once, here, and no caller writes a record of its own. A call that
//! failed, timed out or was cancelled before its answer recorded nothing. Its cost is fixed
//! when recorded ([`charged`]): what the provider reported, else the catalogue's price of
//! the model then. The `/metrics` counters by model and project are counted here too. Before
//! a call, the caps are checked ([`Ledger::admit`], `spending`); the time each call is
//! recorded at, and the caps' periods, come from the server's clock (`usage::Clock`).

use std::sync::Arc;

use crate::db::enums::CallPurpose;
use crate::db::ids::{LoopId, RunId};
use crate::db::models::run::ModelCallForm;
use crate::db::queries::usage;
use crate::db::DbHandle;

use super::chat::Usage;
use super::error::LlmError;
use super::spending::Spending;
use crate::db::queries::models;
use crate::metrics::Metrics;
use crate::usage::{Micros, Price, Tokens};

/// Whom and what a model call is for, as the run's usage shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CallFor {
    pub run: RunId,
    /// The loop it was made in, when there is one.
    pub loop_id: Option<LoopId>,
    /// The turn it is (`Turn`), or the run's latest turn when it was made (0 before its
    /// first).
    pub turn: i32,
    /// `Turn` (`Subagent` for a delegated run's), `SessionNotes` or `Rerank`.
    pub purpose: CallPurpose,
}

/// Where the provider actors record answered calls. Cheap to clone.
#[derive(Clone)]
pub struct Ledger {
    db: DbHandle,
    metrics: Arc<Metrics>,
    spending: Spending,
}

impl Ledger {
    /// A ledger writing to the store behind `db`, counting in `metrics`, holding the caps of
    /// `spending`.
    pub(crate) fn new(db: DbHandle, metrics: Arc<Metrics>, spending: Spending) -> Ledger {
        Ledger {
            db,
            metrics,
            spending,
        }
    }

    pub(crate) fn spending(&self) -> &Spending {
        &self.spending
    }

    /// Whether `call` may be made: refused with [`LlmError::CapReached`] when a cap of
    /// its run, person, project or the server is reached, or [`LlmError::Ledger`] when the
    /// spending cannot be read (a cap is never passed unread).
    pub(super) async fn admit(&self, call: &CallFor) -> Result<(), LlmError> {
        match self.spending.admit(&self.db, call.run).await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(cap)) => Err(LlmError::CapReached(Box::new(cap))),
            Err(error) => Err(LlmError::Ledger(error.to_string())),
        }
    }

    /// Records one answered call of `model` (the catalogue's `actual`) and what the
    /// provider reported it used, at the price the catalogue has for it now. A failure to
    /// write is logged: the answer stands.
    pub(super) async fn record(&self, call: CallFor, model: String, used: Usage) {
        let tokens = tokens_of(&used);
        let reported = used.cost;
        let spending = self.spending.clone();
        let at = spending.clock().now();
        let recorded = self
            .db
            .call(move |conn| {
                let price = models::price_of(conn, &model)?;
                let form = ModelCallForm {
                    run_id: call.run,
                    loop_id: call.loop_id,
                    turn: call.turn,
                    purpose: call.purpose,
                    model,
                    tokens,
                    cost: charged(reported, &price, &tokens),
                    at,
                };
                let project = usage::record_call(conn, &form)?;
                let warnings = spending.warnings(conn, call.run, at)?;
                Ok((form, project, warnings))
            })
            .await;
        match recorded {
            Ok((form, (project_id, project), warnings)) => {
                self.metrics
                    .record_spending(&form.model, &project, &form.tokens, form.cost);
                self.spending.warn(project_id, warnings);
            }
            Err(error) => {
                tracing::warn!(%error, run.id = %call.run, purpose = call.purpose.as_str(), "cannot record a model call's usage");
            }
        }
    }
}

/// What a call costs: the provider's reported cost (US dollars) when it reported one above
/// zero, else what its tokens cost at `price`.
pub(crate) fn charged(reported: f64, price: &Price, used: &Tokens) -> Micros {
    match Micros::from_dollars(reported) {
        Some(cost) if cost > Micros(0) => cost,
        _ => price.cost(used),
    }
}

/// The provider's counts as the ledger keeps them.
fn tokens_of(used: &Usage) -> Tokens {
    let count = |tokens: u64| i64::try_from(tokens).unwrap_or(i64::MAX);
    Tokens {
        prompt_tokens: count(used.prompt_tokens),
        cached_tokens: count(used.cached_tokens),
        completion_tokens: count(used.completion_tokens),
        reasoning_tokens: count(used.reasoning_tokens),
        total_tokens: count(used.total_tokens),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reported_cost_above_zero_wins_over_the_price() {
        let price = Price::from_dollars(1.0, None, 2.0).unwrap();
        let used = Tokens {
            prompt_tokens: 1_000,
            completion_tokens: 500,
            ..Tokens::default()
        };
        assert_eq!(charged(0.25, &price, &used), Micros(250_000));
        assert_eq!(charged(0.0, &price, &used), Micros(2_000), "none reported");
        assert_eq!(charged(-1.0, &price, &used), Micros(2_000), "nonsense");
        assert_eq!(charged(f64::NAN, &price, &used), Micros(2_000), "nonsense");
    }

    #[test]
    fn the_provider_s_counts_are_kept_saturating() {
        let used = Usage {
            prompt_tokens: u64::MAX,
            cached_tokens: 1,
            completion_tokens: 2,
            reasoning_tokens: 3,
            total_tokens: 4,
            cost: 0.0,
        };
        assert_eq!(
            tokens_of(&used),
            Tokens {
                prompt_tokens: i64::MAX,
                cached_tokens: 1,
                completion_tokens: 2,
                reasoning_tokens: 3,
                total_tokens: 4,
            }
        );
    }
}
