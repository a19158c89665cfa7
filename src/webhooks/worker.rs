//! The delivery worker, one per instance: it claims the due deliveries of the store (the
//! claim is one instance's alone), makes each attempt — a POST of the signed payload, within
//! `RUMMY_WEBHOOK_TIMEOUT_MS`, following no redirect, through no proxy — records it, and
//! schedules the next after a failure ([`backoff`](super::backoff)) or gives up after
//! `RUMMY_WEBHOOK_ATTEMPTS`.
//!
//! **When it looks.** While the store has webhooks (or pending deliveries), every
//! `RUMMY_WEBHOOK_POLL_MS` (one read), and at once when a unit of work here wrote a run's end
//! ([`Webhooks::saw`]) or an admin here changed the webhooks. While it has none it reads
//! nothing: on SQLite, which one instance uses, only this instance's `webhooks/add` changes
//! that; on a shared PostgreSQL store, it asks again every heartbeat interval, for webhooks
//! another instance added. At start it releases the claims of instances no longer alive
//! (a delivery in flight when its instance stopped or died is attempted again: delivered at
//! least once, its id the same).

use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

use crate::config::WebhookSettings;
use crate::db::queries::runs::now_ms;
use crate::db::queries::webhooks::deliveries::{
    self, Attempt, Claimed, DELIVERED, GIVEN_UP, PENDING,
};
use crate::db::queries::webhooks::{self as hooks};
use crate::db::{DbError, DbHandle};

use super::payload::{ConsoleLinks, Payload};
use super::{backoff, signature, Format, Webhooks};

/// How long a claim outlives the attempt's timeout: time to record it.
const CLAIM_MARGIN_MS: u64 = 5000;

/// The delivery worker of this instance.
pub(crate) struct Worker {
    pub db: DbHandle,
    pub hooks: Webhooks,
    pub settings: WebhookSettings,
    /// This instance's id, which its claims carry.
    pub instance: String,
    /// The store is shared with other instances (PostgreSQL): look for their webhooks.
    pub shared: bool,
    /// How often a shared store is asked whether it has webhooks while none is known.
    pub beat: Duration,
    pub links: Option<ConsoleLinks>,
}

/// Why the worker cannot start.
#[derive(Debug, thiserror::Error)]
pub(crate) enum WorkerError {
    #[error("cannot build the webhooks' HTTP client: {0}")]
    Client(#[from] reqwest::Error),
}

impl Worker {
    /// Delivers until `stop`.
    pub(crate) async fn run(self, stop: CancellationToken) -> Result<(), WorkerError> {
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy()
            .timeout(Duration::from_millis(self.settings.timeout_ms))
            .user_agent(concat!("rummy/", env!("CARGO_PKG_VERSION")))
            .build()?;
        match self.start().await {
            Ok(any) => self.hooks.learnt(any),
            Err(error) => tracing::warn!(%error, "webhooks: cannot read the outbox at start"),
        }
        loop {
            let wait = if self.hooks.known() {
                if let Err(error) = self.round(&client, &stop).await {
                    tracing::warn!(%error, "webhooks: a round of deliveries failed");
                }
                Some(Duration::from_millis(self.settings.poll_ms))
            } else if self.shared {
                match self.db.read(hooks::any).await {
                    Ok(true) => {
                        self.hooks.learnt(true);
                        continue;
                    }
                    Ok(false) => {}
                    Err(error) => tracing::warn!(%error, "webhooks: cannot read the webhooks"),
                }
                Some(self.beat)
            } else {
                None
            };
            let pause = async {
                match wait {
                    Some(wait) => tokio::time::sleep(wait).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                () = stop.cancelled() => return Ok(()),
                () = self.hooks.woken() => {}
                () = pause => {}
            }
        }
    }

    /// Releases the claims of instances gone; whether there is anything to deliver.
    async fn start(&self) -> Result<bool, DbError> {
        self.db
            .call(|conn| deliveries::release_gone(conn, now_ms()))
            .await?;
        self.db.read(hooks::any).await
    }

    /// Claims and attempts the due deliveries, a batch of `concurrency` at a time, until
    /// none is due; learns whether the store still has anything to deliver.
    async fn round(
        &self,
        client: &reqwest::Client,
        stop: &CancellationToken,
    ) -> Result<(), DbError> {
        let (any, due) = self
            .db
            .read(|conn| {
                let now = now_ms();
                Ok((hooks::any(conn)?, deliveries::any_due(conn, now)?))
            })
            .await?;
        if !any {
            self.hooks.learnt(false);
            return Ok(());
        }
        if !due {
            return Ok(());
        }
        let batch = i64::from(self.settings.concurrency);
        loop {
            let instance = self.instance.clone();
            let claim_ms = i64::try_from(self.settings.timeout_ms.saturating_add(CLAIM_MARGIN_MS))
                .unwrap_or(i64::MAX);
            let claimed = self
                .db
                .call(move |conn| {
                    let now = now_ms();
                    deliveries::claim(conn, &instance, now, now.saturating_add(claim_ms), batch)
                })
                .await?;
            let full = i64::try_from(claimed.len()).unwrap_or(i64::MAX) >= batch;
            let attempts = claimed
                .into_iter()
                .map(|delivery| self.attempt(client, delivery));
            let attempts = tokio::select! {
                () = stop.cancelled() => return Ok(()),
                attempts = futures_util::future::join_all(attempts) => attempts,
            };
            let keep_from = now_ms().saturating_sub(
                i64::try_from(self.settings.keep_days.saturating_mul(86_400_000))
                    .unwrap_or(i64::MAX),
            );
            self.db
                .call(move |conn| {
                    for attempt in &attempts {
                        deliveries::record(conn, attempt, keep_from)?;
                    }
                    Ok(())
                })
                .await?;
            if !full {
                return Ok(());
            }
        }
    }

    /// One attempt of `delivery`: its result and what the delivery is after it.
    async fn attempt(&self, client: &reqwest::Client, delivery: Claimed) -> Attempt {
        let body =
            Payload::of(&delivery, self.links.as_ref()).body(Format::stored(&delivery.format));
        let at_ms = now_ms();
        let signed = signature::sign(&delivery.secret, at_ms.div_euclid(1000), &body);
        let started = Instant::now();
        let sent = client
            .post(&delivery.url)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .header(signature::HEADER, signed)
            .header("X-Rummy-Event", &delivery.event)
            .header("X-Rummy-Delivery", super::payload::delivery_id(delivery.id))
            .body(body)
            .send()
            .await;
        let duration_ms = i64::try_from(started.elapsed().as_millis()).unwrap_or(i64::MAX);
        let (status, error) = match sent {
            Ok(response) => (Some(i32::from(response.status().as_u16())), None),
            Err(error) => (None, Some(failure(&error))),
        };
        let attempt = delivery.attempts.saturating_add(1);
        let delivered = status.is_some_and(|status| (200..300).contains(&status));
        let (state, next_ms) = if delivered {
            (DELIVERED, at_ms)
        } else if u32::try_from(attempt).unwrap_or(u32::MAX) >= self.settings.attempts {
            (GIVEN_UP, at_ms)
        } else {
            let failed = u32::try_from(attempt).unwrap_or(u32::MAX);
            let wait = backoff::wait_ms(&self.settings, failed, backoff::draw());
            (
                PENDING,
                at_ms.saturating_add(i64::try_from(wait).unwrap_or(i64::MAX)),
            )
        };
        match (&status, &error) {
            (_, Some(error)) => {
                tracing::info!(delivery = delivery.id, attempt, %error, "webhook delivery failed")
            }
            (Some(status), None) if !delivered => tracing::info!(
                delivery = delivery.id,
                attempt,
                status,
                "webhook delivery refused"
            ),
            _ => tracing::debug!(delivery = delivery.id, attempt, "webhook delivered"),
        }
        Attempt {
            delivery: delivery.id,
            attempt,
            at_ms,
            duration_ms,
            status,
            error,
            state,
            next_ms,
        }
    }
}

/// Why a request had no answer, without its URL (which may itself be a credential, as a
/// chat tool's incoming-webhook URL is).
fn failure(error: &reqwest::Error) -> String {
    let kind = if error.is_timeout() {
        "timed out"
    } else if error.is_connect() {
        "cannot connect"
    } else {
        "request failed"
    };
    let mut cause = String::new();
    let mut source = std::error::Error::source(error);
    while let Some(inner) = source {
        cause = inner.to_string();
        source = inner.source();
    }
    match cause.is_empty() {
        true => kind.to_owned(),
        false => format!("{kind}: {cause}"),
    }
}
