//! The record of every answered model call (`model_calls`): a run's turns, a sub-agent's
//! turns (`subagent`, under the sub-agent's run) and memory's sidecar calls alike. A caller
//! says whom and what a call is for ([`CallFor`]) with its request; the provider actor
//! records the answer once, here, and no caller writes a record of its own; with it, in the
//! same unit of work, the notification its caller asked to announce the answer with (a
//! turn's `run/progress processing`, `db::events`). A call that
//! failed, timed out or was cancelled before its answer recorded nothing. Its cost is fixed
//! when recorded ([`charged`]): what the provider reported, else the catalogue's price of
//! the model then. What the provider reported is recorded within sane bounds
//! (`usage::recorded_tokens`: a count left out is estimated from the texts with the
//! server's token math, an absurd one is recorded at the model's bound, with a warning in
//! the log). The `/metrics` counters by model and project are counted here too. Before a
//! call, the caps are checked ([`Ledger::admit`], `spending`); a cap's first warning in its
//! period becomes the `cap.warning` deliveries of the project's webhooks in the same unit
//! of work (`db::queries::webhooks`). The time each call is
//! recorded at, and the caps' periods, come from the server's clock (`usage::Clock`).

use std::sync::Arc;

use crate::db::enums::CallPurpose;
use crate::db::events::Publication;
use crate::db::ids::{LoopId, RunId};
use crate::db::models::run::ModelCallForm;
use crate::db::queries::runs::now_ms;
use crate::db::queries::{admin_changes, secrets};
use crate::db::queries::{run_events, usage, webhooks};
use crate::db::{Conn, DbError, DbHandle};
use crate::secrets::{Keyring, PROVIDER_KEY};

use super::paying::{payer, Payer};
use super::route::ProviderKind;

use super::chat::{ChatRequest, ChatResponse, Usage};
use super::error::LlmError;
use super::spending::Spending;
use crate::budget::TokenMath;
use crate::db::queries::models;
use crate::metrics::Metrics;
use crate::usage::{
    recorded_cost, recorded_tokens, Amended, CallBound, Estimate, Micros, Price, Tokens,
};

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

/// Whose key paid for an answered call: `person`'s own for `provider`, or the server's.
pub(super) struct Paid {
    pub provider: ProviderKind,
    pub person: Option<String>,
}

/// Notes, in the unit that records the call, that `person`'s own key for `provider` paid for
/// `call`: the key's last use, and the audit's `keys/use` (who, when, from which run; never
/// the key).
fn key_used(
    conn: &mut Conn,
    person: &str,
    provider: ProviderKind,
    call: &CallFor,
) -> Result<(), DbError> {
    secrets::used(conn, person, PROVIDER_KEY, provider.slug())?;
    let detail = serde_json::json!({
        "provider": provider.slug(),
        "run": call.run.0,
        "turn": call.turn,
        "purpose": call.purpose.as_str(),
    });
    admin_changes::record(conn, person, "keys/use", person, &detail.to_string())
}

/// Where the provider actors record answered calls. Cheap to clone.
#[derive(Clone)]
pub struct Ledger {
    db: DbHandle,
    /// Opens the people's own keys a call may carry (`paying`).
    keyring: Arc<Keyring>,
    metrics: Arc<Metrics>,
    spending: Spending,
    /// What estimates the counts a provider left out.
    tokens: TokenMath,
}

impl Ledger {
    /// A ledger writing to the store behind `db`, counting in `metrics`, holding the caps of
    /// `spending`, estimating what providers leave out with `tokens`.
    pub(crate) fn new(
        db: DbHandle,
        keyring: Arc<Keyring>,
        metrics: Arc<Metrics>,
        spending: Spending,
        tokens: TokenMath,
    ) -> Ledger {
        Ledger {
            db,
            keyring,
            metrics,
            spending,
            tokens,
        }
    }

    pub(crate) fn spending(&self) -> &Spending {
        &self.spending
    }

    /// Whether `call` may be made: refused with [`LlmError::CapReached`] when a cap of
    /// its run, person, project or the server is reached, or [`LlmError::Ledger`] when the
    /// spending cannot be read (a cap is never passed unread).
    /// Admitted, whose key pays for it (`paying`): a project that requires people's own
    /// keys refuses a call whose starter has none ([`LlmError::NotConfigured`]).
    pub(super) async fn admit(
        &self,
        call: &CallFor,
        provider: ProviderKind,
    ) -> Result<Payer, LlmError> {
        match self
            .spending
            .admit(&self.db, call.run, provider.slug())
            .await
        {
            Ok(Ok(on_file)) => payer(&self.keyring, provider, on_file),
            Ok(Err(cap)) => Err(LlmError::CapReached(Box::new(cap))),
            Err(error) => Err(LlmError::Ledger(error.to_string())),
        }
    }

    /// Records one answered call of `model` (the catalogue's `actual`): what the provider
    /// reported it used, within the model's bound, its counts left out estimated from the
    /// texts of `request` and `response`, at the price the catalogue has for it now; and, in
    /// the same unit of work, appends `announce` to the event log. A failure to write is
    /// logged (the announcement is then not sent): the answer stands.
    pub(super) async fn record(
        &self,
        call: CallFor,
        model: String,
        request: &ChatRequest,
        response: &ChatResponse,
        announce: Option<Publication>,
        paid: Paid,
    ) {
        let used = response.usage;
        let estimate = self.estimate(request, response, &used);
        let spending = self.spending.clone();
        let at = spending.clock().now();
        let bounds = self.db.event_bounds();
        let recorded = self
            .db
            .call(move |conn| {
                let catalogued = models::by_actual(conn, &model)?;
                let bound =
                    CallBound::of_context(catalogued.as_ref().and_then(|row| row.context_length));
                let price = catalogued.map_or_else(Price::default, |row| row.price());
                let (tokens, mut amended) = recorded_tokens(tokens_of(&used), estimate, bound);
                let (cost, cost_clamped) = recorded_cost(charged(used.cost, &price, &tokens));
                amended.clamped |= cost_clamped;
                let form = ModelCallForm {
                    run_id: call.run,
                    loop_id: call.loop_id,
                    turn: call.turn,
                    purpose: call.purpose,
                    model,
                    tokens,
                    cost,
                    at,
                    key_of: paid.person.clone(),
                };
                let project = usage::record_call(conn, &form)?;
                if let Some(person) = &paid.person {
                    key_used(conn, person, paid.provider, &call)?;
                }
                let warnings = spending.warnings(conn, call.run, at)?;
                for warning in &warnings {
                    let standing = serde_json::to_string(&warning.view()).unwrap_or_default();
                    webhooks::cap_warned(conn, project.0, call.run, &standing, now_ms())?;
                }
                if let Some(Publication {
                    project,
                    run,
                    frame,
                }) = announce
                {
                    run_events::append(conn, &bounds, project, run, &[frame])?;
                }
                Ok((form, project, warnings, amended))
            })
            .await;
        match recorded {
            Ok((form, (project_id, project), warnings, amended)) => {
                tracing::Span::current().record("llm.cost_micros", form.cost.0);
                note_amended(&call, &form, &used, amended);
                self.metrics
                    .record_spending(&form.model, &project, &form.tokens, form.cost);
                self.spending.warn(project_id, warnings);
            }
            Err(error) => {
                tracing::warn!(%error, run.id = %call.run, purpose = call.purpose.as_str(), "cannot record a model call's usage");
            }
        }
    }

    /// The server's estimate of the prompt and the completion, made only when the provider
    /// left one of them out.
    fn estimate(&self, request: &ChatRequest, response: &ChatResponse, used: &Usage) -> Estimate {
        let prompt = request
            .messages
            .iter()
            .map(|message| message.content.as_str());
        let completion =
            std::iter::once(response.content.as_str()).chain(response.reasoning_content.as_deref());
        Estimate {
            prompt: match used.prompt_tokens {
                0 => estimated(self.tokens, prompt),
                _ => 0,
            },
            completion: match used.completion_tokens {
                0 => estimated(self.tokens, completion),
                _ => 0,
            },
        }
    }
}

/// The server's estimate of these texts together.
fn estimated<'a>(tokens: TokenMath, texts: impl IntoIterator<Item = &'a str>) -> i64 {
    i64::try_from(tokens.estimate_packet(texts).get()).unwrap_or(i64::MAX)
}

/// Logs what the ledger recorded otherwise than the provider reported: an estimate at
/// `debug`, a count or cost past its bound at `warn`.
fn note_amended(call: &CallFor, form: &ModelCallForm, used: &Usage, amended: Amended) {
    if amended.clamped {
        tracing::warn!(
            run.id = %call.run,
            llm.model = %form.model,
            reported.prompt_tokens = used.prompt_tokens,
            reported.completion_tokens = used.completion_tokens,
            reported.total_tokens = used.total_tokens,
            reported.cost = used.cost,
            recorded.prompt_tokens = form.tokens.prompt_tokens,
            recorded.completion_tokens = form.tokens.completion_tokens,
            recorded.cost_micros = form.cost.0,
            "a provider reported more than one call can use: recorded at the bound"
        );
    }
    if amended.estimated {
        tracing::debug!(
            run.id = %call.run,
            llm.model = %form.model,
            recorded.prompt_tokens = form.tokens.prompt_tokens,
            recorded.completion_tokens = form.tokens.completion_tokens,
            "the provider left counts out: estimated from the texts"
        );
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
