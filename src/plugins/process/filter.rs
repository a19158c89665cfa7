//! A plugin process's filters: each a `filter/apply` request, registered with
//! `Registrar::filter_async`; a failure (or an answer that does not read) leaves the value
//! as it was. A filter is asked only about the runs and projects its plugin serves.

use std::sync::Arc;

use futures_util::future::BoxFuture;
use futures_util::FutureExt;
use serde_json::{json, Value};

use super::link::Link;
use super::protocol::{FilterAnswer, FilterRequest, RunSettings, FILTER_APPLY};
use super::reach::Reach;
use crate::db::enums::EntryStatus;
use crate::hub::notifications::ProposedEntry;
use crate::llm::ChatMessage;
use crate::plugins::filters::{
    LlmCall, Measuring, Proposing, Recordable, Recording, Refusal, RunAsked, RunRequest,
};

/// Asks the plugin's filter of `hook` for `value`; `None` when it fails or says nothing.
async fn asked_filter(
    link: &Link,
    hook: &str,
    value: Value,
    context: Value,
) -> Option<FilterAnswer> {
    let request = FilterRequest {
        hook,
        value,
        context,
    };
    let params = serde_json::to_value(request).ok()?;
    match link.call(FILTER_APPLY, params).await {
        Ok(answer) => serde_json::from_value(answer).ok(),
        Err(error) => {
            tracing::warn!(plugin = link.name(), hook, %error, "a plugin filter failed; the value goes on unchanged");
            None
        }
    }
}

/// An `entry.recording` filter: it may refuse a command (a rewrite is not taken).
pub(super) fn entry_recording(
    reach: Arc<Reach>,
) -> impl Fn(Recordable, Recording) -> BoxFuture<'static, Recordable> + Send + Sync {
    move |mut recordable, recording| {
        let reach = Arc::clone(&reach);
        async move {
            if recordable.refusal.is_some() || !reach.run(recording.run) {
                return recordable;
            }
            let value = recordable.command.to_json();
            let context = json!({"run": recording.run, "turn": recording.turn});
            let answer = asked_filter(&reach.link, "entry.recording", value, context).await;
            if let Some(refused) = answer.and_then(|answer| answer.refuse) {
                let status = EntryStatus::from_code(i32::from(refused.status))
                    .unwrap_or(EntryStatus::Forbidden);
                recordable.refusal = Some(Refusal::new(status, refused.message));
            }
            recordable
        }
        .boxed()
    }
}

/// An `llm.request` filter: the messages of a turn's request.
pub(super) fn llm_request(
    reach: Arc<Reach>,
) -> impl Fn(Vec<ChatMessage>, LlmCall) -> BoxFuture<'static, Vec<ChatMessage>> + Send + Sync {
    move |messages, call| {
        let reach = Arc::clone(&reach);
        async move {
            if !reach.project(call.project) {
                return messages;
            }
            let value = serde_json::to_value(&messages).unwrap_or(Value::Null);
            let answer = asked_filter(&reach.link, "llm.request", value, llm_context(call)).await;
            answer
                .and_then(|answer| answer.value)
                .and_then(|value| serde_json::from_value(value).ok())
                .unwrap_or(messages)
        }
        .boxed()
    }
}

/// An `llm.response` filter: the model's raw reply.
pub(super) fn llm_response(
    reach: Arc<Reach>,
) -> impl Fn(String, LlmCall) -> BoxFuture<'static, String> + Send + Sync {
    move |reply, call| {
        let reach = Arc::clone(&reach);
        async move {
            if !reach.project(call.project) {
                return reply;
            }
            let answer =
                asked_filter(&reach.link, "llm.response", json!(reply), llm_context(call)).await;
            match answer.and_then(|answer| answer.value) {
                Some(Value::String(filtered)) => filtered,
                _ => reply,
            }
        }
        .boxed()
    }
}

/// A `run.config` filter: it may rewrite any of the settings it is given, or refuse.
pub(super) fn run_config(
    reach: Arc<Reach>,
) -> impl Fn(RunRequest, RunAsked) -> BoxFuture<'static, RunRequest> + Send + Sync {
    move |mut request, asked| {
        let reach = Arc::clone(&reach);
        async move {
            if request.refusal.is_some() || !reach.project(asked.project) {
                return request;
            }
            let value = serde_json::to_value(RunSettings::of(&request)).unwrap_or(Value::Null);
            let context = json!({"project": asked.project});
            let Some(answer) = asked_filter(&reach.link, "run.config", value, context).await else {
                return request;
            };
            if let Some(refused) = answer.refuse {
                request.refusal = Some(refused.message);
                return request;
            }
            if let Some(settings) = answer
                .value
                .and_then(|value| serde_json::from_value::<RunSettings>(value).ok())
            {
                settings.apply_to(&mut request);
            }
            request
        }
        .boxed()
    }
}

/// A `budget.enforce` filter: the window a packet must fit (`null`: none known).
pub(super) fn budget_enforce(
    reach: Arc<Reach>,
) -> impl Fn(u64, Measuring) -> BoxFuture<'static, u64> + Send + Sync {
    move |limit, measuring| {
        let reach = Arc::clone(&reach);
        async move {
            if !reach.project(measuring.project) {
                return limit;
            }
            let value = (limit != u64::MAX).then_some(limit);
            let context = json!({
                "project": measuring.project,
                "run": measuring.run,
                "turn": measuring.turn,
                "measured": measuring.measured,
            });
            let answer = asked_filter(&reach.link, "budget.enforce", json!(value), context).await;
            answer
                .and_then(|answer| answer.value)
                .and_then(|value| value.as_u64())
                .unwrap_or(limit)
        }
        .boxed()
    }
}

/// A `turn.proposing` filter: the proposals offered to the clients.
pub(super) fn turn_proposing(
    reach: Arc<Reach>,
) -> impl Fn(Vec<ProposedEntry>, Proposing) -> BoxFuture<'static, Vec<ProposedEntry>> + Send + Sync
{
    move |offered, proposing| {
        let reach = Arc::clone(&reach);
        async move {
            if !reach.run(proposing.run) {
                return offered;
            }
            let value = serde_json::to_value(&offered).unwrap_or(Value::Null);
            let context = json!({
                "project": proposing.project,
                "run": proposing.run,
                "turn": proposing.turn,
            });
            let answer = asked_filter(&reach.link, "turn.proposing", value, context).await;
            answer
                .and_then(|answer| answer.value)
                .and_then(|value| serde_json::from_value(value).ok())
                .unwrap_or(offered)
        }
        .boxed()
    }
}

fn llm_context(call: LlmCall) -> Value {
    json!({
        "project": call.project,
        "run": call.run,
        "turn": call.turn,
        "purpose": call.purpose.as_str(),
    })
}
