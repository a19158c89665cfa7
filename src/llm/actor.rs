//! `LlmProvider`: one actor per provider. It bounds how many calls are in flight, holds all
//! of them while the provider asks for a back-off (`gate`), retries transient failures,
//! drops the in-flight HTTP request the moment a call is cancelled, checks the spend caps
//! once a call holds its slot and records each answered call in the run's usage before the
//! slot is given back (`ledger`, through [`admitted`] and [`metered`]), and counts its calls
//! for `/metrics`.

use std::future::Future;
use std::sync::Arc;
use std::time::Instant;

use actix::{Actor, Context, Handler, Message, ResponseFuture};
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use super::chat::{ChatRequest, ChatResponse};
use super::client::ProviderClient;
use super::discovery::discover_context;
use super::error::LlmError;
use super::gate::{ProviderGate, Slot};
use super::ledger::{CallFor, Ledger, Paid};
use super::retry::RetryPolicy;
use super::route::ProviderKind;
use super::stream::TextListener;
use crate::db::events::Publication;
use crate::metrics::ProviderMetrics;
use crate::secrets::ExposeSecret;

/// The actor serving one provider. Calls run as spawned futures, never on the actor itself,
/// so a slow provider never blocks the mailbox.
pub struct LlmProvider {
    provider: ProviderKind,
    client: ProviderClient,
    /// Its slots and back-off, shared by every call in flight, whichever run made it.
    gate: Arc<ProviderGate>,
    retry: RetryPolicy,
    metrics: Arc<ProviderMetrics>,
    ledger: Ledger,
}

impl LlmProvider {
    /// An actor for `provider` allowing `max_in_flight` concurrent calls (at least 1),
    /// counting them in `metrics` and recording the answered ones in `ledger`.
    pub(super) fn new(
        provider: ProviderKind,
        client: ProviderClient,
        max_in_flight: usize,
        metrics: Arc<ProviderMetrics>,
        ledger: Ledger,
    ) -> LlmProvider {
        let retry = client.settings().retry;
        LlmProvider {
            provider,
            client,
            gate: Arc::new(ProviderGate::new(max_in_flight)),
            retry,
            metrics,
            ledger,
        }
    }
}

impl Actor for LlmProvider {
    type Context = Context<Self>;
}

/// Complete a chat. `request.model` is the provider's own model name (prefix removed).
/// Cancelling `cancel` drops the in-flight request and answers `LlmError::Aborted`; an
/// answer is recorded once in the usage of the run `call` names, with `announce` (a
/// notification that the answer came, written to the event log in the same unit of work).
#[derive(Debug)]
pub struct Complete {
    pub request: ChatRequest,
    /// The catalogue's `actual` of the model asked (provider prefix included), as the
    /// ledger records it.
    pub actual: String,
    pub call: CallFor,
    pub announce: Option<Publication>,
    /// Told the reply's text as it streams in.
    pub listener: Option<Arc<dyn TextListener>>,
    pub cancel: CancellationToken,
    /// The caller's span, the parent of the call's.
    pub parent: tracing::Span,
}

impl std::fmt::Debug for dyn TextListener {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str("TextListener")
    }
}

impl Message for Complete {
    type Result = Result<ChatResponse, LlmError>;
}

/// Discover a model's context length (the provider's own model name).
#[derive(Debug)]
pub struct DiscoverContext {
    pub model: String,
    pub cancel: CancellationToken,
}

impl Message for DiscoverContext {
    type Result = Result<u32, LlmError>;
}

impl Handler<Complete> for LlmProvider {
    type Result = ResponseFuture<Result<ChatResponse, LlmError>>;

    fn handle(&mut self, message: Complete, _: &mut Context<Self>) -> Self::Result {
        let Complete {
            request,
            actual,
            call,
            announce,
            listener,
            cancel,
            parent,
        } = message;
        let provider = self.provider;
        let client = self.client.clone();
        let span = tracing::info_span!(
            parent: &parent,
            "llm.complete",
            llm.provider = provider.slug(),
            llm.model = %request.model,
            llm.purpose = call.purpose.as_str(),
            run.id = %call.run,
            duration_ms = tracing::field::Empty,
            llm.prompt_tokens = tracing::field::Empty,
            llm.completion_tokens = tracing::field::Empty,
            llm.cost_micros = tracing::field::Empty,
        );
        let metrics = self.metrics.clone();
        let request = Arc::new(request);
        let sent = Arc::clone(&request);
        let ledger = self.ledger.clone();
        let admitting = ledger.clone();
        let attempts = retrying(self.retry, self.gate.clone(), metrics.clone(), move || {
            let client = client.clone();
            let request = Arc::clone(&sent);
            let ledger = admitting.clone();
            let listener = listener.clone();
            async move {
                let listener = listener.as_deref();
                admitted(&ledger, &call, &client, provider, &request, listener).await
            }
        });
        let answered = async move {
            let started = Instant::now();
            let result = cancellable(&cancel, attempts).await;
            observe_completion(
                &metrics,
                started,
                result.as_ref().map(|((response, _), _)| response),
            );
            result
        };
        let recorded = Recorded {
            call,
            actual,
            announce,
            provider,
        };
        Box::pin(metered(ledger, recorded, request, answered).instrument(span))
    }
}

/// One attempt at a completion, made holding one of the provider's slots: the spend caps
/// are checked first, against what the calls answered before recorded (each records before
/// it gives its slot back), so a call that waited for a slot while a cap was reached never
/// reaches the provider, and what passes a cap is only what was in flight when it was
/// reached. A refused call is [`LlmError::CapReached`] (or [`LlmError::Ledger`] when the
/// spending cannot be read), which no policy retries.
async fn admitted(
    ledger: &Ledger,
    call: &CallFor,
    client: &ProviderClient,
    provider: ProviderKind,
    request: &ChatRequest,
    listener: Option<&dyn TextListener>,
) -> Result<(ChatResponse, Option<String>), LlmError> {
    let payer = ledger.admit(call, provider).await?;
    let key = payer.key();
    match client.complete(provider, request, listener, key).await {
        Ok(response) => Ok((response, payer.person())),
        Err(error) => Err(match key {
            Some(key) => error.without(key.expose_secret()),
            None => error,
        }),
    }
}

/// What a completion's answer is recorded as: the call it was, the model's `actual`, and
/// the notification to write with it.
struct Recorded {
    call: CallFor,
    actual: String,
    announce: Option<Publication>,
    provider: ProviderKind,
}

/// A completion's spending, in one place with [`admitted`]: what the call is for comes in
/// with it, and its answer's usage is recorded once (with its announcement), after the
/// answer and whatever happens to the caller then, before its `slot` is given back.
async fn metered(
    ledger: Ledger,
    recorded: Recorded,
    request: Arc<ChatRequest>,
    completion: impl Future<Output = Result<((ChatResponse, Option<String>), Slot), LlmError>>,
) -> Result<ChatResponse, LlmError> {
    let ((response, person), slot) = completion.await?;
    let Recorded {
        call,
        actual,
        announce,
        provider,
    } = recorded;
    let paid = Paid { provider, person };
    ledger
        .record(call, actual, &request, &response, announce, paid)
        .await;
    drop(slot);
    Ok(response)
}

/// Counts a finished completion for `/metrics` and notes it on the current span.
fn observe_completion(
    metrics: &ProviderMetrics,
    started: Instant,
    result: Result<&ChatResponse, &LlmError>,
) {
    let span = tracing::Span::current();
    span.record("duration_ms", signed(elapsed_ms(started)));
    match result {
        Ok(response) => {
            let usage = response.usage;
            metrics.record_completion(
                started.elapsed(),
                usage.prompt_tokens,
                usage.completion_tokens,
            );
            span.record("llm.prompt_tokens", signed(usage.prompt_tokens));
            span.record("llm.completion_tokens", signed(usage.completion_tokens));
            tracing::info!("completion finished");
        }
        Err(LlmError::Aborted) => tracing::debug!("completion cancelled"),
        Err(error @ (LlmError::CapReached(_) | LlmError::Ledger(_))) => {
            tracing::debug!(error = %error, "completion not made");
        }
        Err(error) => {
            metrics.record_error();
            tracing::warn!(error = %error, "completion failed");
        }
    }
}

impl Handler<DiscoverContext> for LlmProvider {
    type Result = ResponseFuture<Result<u32, LlmError>>;

    fn handle(&mut self, message: DiscoverContext, _: &mut Context<Self>) -> Self::Result {
        let DiscoverContext { model, cancel } = message;
        let provider = self.provider;
        let client = self.client.clone();
        let span = tracing::info_span!(
            "llm.discover_context",
            llm.provider = provider.slug(),
            llm.model = %model,
        );
        let attempts = retrying(
            self.retry,
            self.gate.clone(),
            self.metrics.clone(),
            move || {
                let client = client.clone();
                let model = model.clone();
                async move { discover_context(&client, provider, &model).await }
            },
        );
        Box::pin(
            async move {
                let result = cancellable(&cancel, attempts)
                    .await
                    .map(|(context_length, _slot)| context_length);
                match &result {
                    Ok(context_length) => tracing::info!(context_length, "context discovered"),
                    Err(error) => tracing::warn!(error = %error, "context discovery failed"),
                }
                result
            }
            .instrument(span),
        )
    }
}

/// Runs `work` unless `cancel` fires first; then `work` (and its HTTP request) is dropped.
async fn cancellable<T>(
    cancel: &CancellationToken,
    work: impl Future<Output = Result<T, LlmError>>,
) -> Result<T, LlmError> {
    tokio::select! {
        biased;
        () = cancel.cancelled() => Err(LlmError::Aborted),
        result = work => result,
    }
}

/// Runs `attempt` until it succeeds or `policy` gives up; the success comes with the slot
/// its attempt held, for the caller to give back. Each attempt passes the `gate` and holds
/// a slot; the waits in between do not. A refusal for load holds the gate for every call
/// before this attempt's slot is given back, so no call waiting for it slips through.
/// `metrics` counts the call while it waits at the gate, and then while its attempt holds a
/// slot.
async fn retrying<T, F, Fut>(
    policy: RetryPolicy,
    gate: Arc<ProviderGate>,
    metrics: Arc<ProviderMetrics>,
    attempt: F,
) -> Result<(T, Slot), LlmError>
where
    F: Fn() -> Fut,
    Fut: Future<Output = Result<T, LlmError>>,
{
    let mut failed_attempts = 0u32;
    loop {
        let error = {
            let waiting = metrics.waiting();
            let slot = gate.admit().await?;
            drop(waiting);
            let _in_flight = metrics.in_flight();
            let error = match attempt().await {
                Ok(value) => return Ok((value, slot)),
                Err(error) => error,
            };
            failed_attempts = failed_attempts.saturating_add(1);
            if let Some(hold) = policy.hold_after(failed_attempts, &error) {
                gate.hold_for(hold);
            }
            error
        };
        let Some(delay) = policy.delay_after(failed_attempts, &error) else {
            return Err(error);
        };
        tracing::warn!(
            attempt = failed_attempts,
            delay_ms = elapsed_ms_of(delay),
            error = %error,
            "retrying provider call"
        );
        tokio::time::sleep(delay).await;
    }
}

/// A count as a span records it, signed: a trace's attributes have no unsigned integers
/// (an unsigned one would be exported as text).
fn signed(count: u64) -> i64 {
    i64::try_from(count).unwrap_or(i64::MAX)
}

fn elapsed_ms(started: Instant) -> u64 {
    elapsed_ms_of(started.elapsed())
}

fn elapsed_ms_of(duration: std::time::Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_util::FutureExt;
    use std::cell::Cell;
    use std::time::Duration;
    use tokio::time::Instant;

    fn policy(max_attempts: u32) -> RetryPolicy {
        RetryPolicy {
            max_attempts,
            base_delay: Duration::from_millis(1),
            max_delay: Duration::from_millis(1),
        }
    }

    /// The provider's samples as `/metrics` shows them.
    fn rendered(metrics: &ProviderMetrics) -> String {
        crate::metrics::Metrics::default().render(&Default::default(), 0, &[("openai", metrics)])
    }

    #[tokio::test]
    async fn an_attempt_waits_for_a_free_permit() {
        let gate = Arc::new(ProviderGate::new(1));
        let metrics = Arc::new(ProviderMetrics::default());
        let attempts = Cell::new(0);
        let during_attempt = Cell::new(String::new());
        let held = gate.admit().await.unwrap();
        let mut call = Box::pin(retrying(policy(1), gate.clone(), metrics.clone(), || {
            attempts.set(attempts.get() + 1);
            during_attempt.set(rendered(&metrics));
            async { Ok::<_, LlmError>("done") }
        }));

        assert!((&mut call).now_or_never().is_none());
        assert_eq!(attempts.get(), 0);
        let waiting = rendered(&metrics);
        assert!(
            waiting.contains("rummy_llm_waiting{provider=\"openai\"} 1"),
            "{waiting}"
        );
        assert!(
            waiting.contains("rummy_llm_in_flight{provider=\"openai\"} 0"),
            "{waiting}"
        );
        drop(held);
        let (done, slot) = call.await.unwrap();
        assert_eq!(done, "done");
        assert_eq!(attempts.get(), 1);
        assert_eq!(
            gate.free_slots(),
            0,
            "the slot is the caller's to give back"
        );
        drop(slot);
        assert_eq!(gate.free_slots(), 1);
        let during = during_attempt.take();
        assert!(
            during.contains("rummy_llm_waiting{provider=\"openai\"} 0"),
            "{during}"
        );
        assert!(
            during.contains("rummy_llm_in_flight{provider=\"openai\"} 1"),
            "{during}"
        );
        let after = rendered(&metrics);
        assert!(
            after.contains("rummy_llm_in_flight{provider=\"openai\"} 0"),
            "{after}"
        );
    }

    #[tokio::test]
    async fn retries_until_success_or_the_policy_gives_up() {
        let attempts = Cell::new(0);
        let flaky = || {
            attempts.set(attempts.get() + 1);
            let attempt = attempts.get();
            async move {
                match attempt {
                    1 | 2 => Err(LlmError::Timeout {
                        provider: ProviderKind::Ollama,
                        timeout_ms: 1,
                    }),
                    _ => Ok(attempt),
                }
            }
        };
        let gate = Arc::new(ProviderGate::new(1));

        let metrics = Arc::new(ProviderMetrics::default());

        let gave_up = retrying(policy(2), gate.clone(), metrics.clone(), flaky).await;
        assert!(gave_up.is_err());
        assert_eq!(attempts.get(), 2);
        attempts.set(0);
        let succeeded = retrying(policy(3), gate, metrics, flaky).await;
        assert_eq!(succeeded.map(|(attempt, _)| attempt), Ok(3));
    }

    #[tokio::test]
    async fn a_rate_limit_holds_the_other_calls_until_its_retry_after_passed() {
        let retry_after = Duration::from_millis(300);
        let gate = Arc::new(ProviderGate::new(2));
        let metrics = Arc::new(ProviderMetrics::default());
        let patient = RetryPolicy {
            max_delay: Duration::from_secs(5),
            ..policy(2)
        };
        let refused_at = Cell::new(None);
        let refused = retrying(patient, gate.clone(), metrics.clone(), || {
            let first = refused_at.get().is_none();
            refused_at.set(refused_at.get().or(Some(Instant::now())));
            async move {
                match first {
                    true => Err(LlmError::RateLimited {
                        provider: ProviderKind::OpenAi,
                        retry_after: Some(retry_after),
                    }),
                    false => Ok(()),
                }
            }
        });
        let mut refused = Box::pin(refused);
        assert!((&mut refused).now_or_never().is_none(), "refused, waiting");
        let other = retrying(patient, gate.clone(), metrics, || async {
            Ok(Instant::now())
        });
        let (retried, other_attempt) = futures_util::join!(refused, other);
        assert_eq!(retried.map(|(retried, _)| retried), Ok(()));
        let refused_at = refused_at.get().unwrap();
        assert!(other_attempt.unwrap().0 >= refused_at + retry_after);
    }

    #[tokio::test]
    async fn cancellation_wins_over_pending_work() {
        let cancel = CancellationToken::new();
        cancel.cancel();
        let never = std::future::pending::<Result<(), LlmError>>();
        assert_eq!(cancellable(&cancel, never).await, Err(LlmError::Aborted));
    }
}
