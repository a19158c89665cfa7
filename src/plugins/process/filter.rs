//! A plugin process's filters: each a `filter/apply` request, registered with
//! `Registrar::filter_async`; a failure (or an answer that does not read) leaves the value
//! as it was. A filter is asked only about the runs and projects its plugin serves, and is
//! told where they are (the run's alias, the project's name and root). An `entry.recording`
//! filter may refuse a command, not rewrite it: one that answers another command refuses
//! it (with a log line), so a rewrite meant to stop a command never lets it run.

use std::sync::Arc;

use futures_util::future::BoxFuture;
use futures_util::FutureExt;
use serde_json::{json, Value};

use super::link::Link;
use super::protocol::{FilterAnswer, FilterRequest, Place, RunSettings, FILTER_APPLY};
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

/// `fields` with where the run or project is (`place`), when the reach knows it.
fn context(place: Option<Place>, fields: Value) -> Option<Value> {
    let Value::Object(mut context) = serde_json::to_value(place?).ok()? else {
        return None;
    };
    if let Value::Object(fields) = fields {
        context.extend(fields);
    }
    Some(Value::Object(context))
}

/// An `entry.recording` filter: it may refuse a command; an answer that rewrites it refuses
/// it too (a plugin process cannot rewrite a command).
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
            let fields = json!({"turn": recording.turn});
            let Some(context) = context(reach.run_place(recording.run), fields) else {
                return recordable;
            };
            let asked = asked_filter(&reach.link, "entry.recording", value.clone(), context);
            let Some(answer) = asked.await else {
                return recordable;
            };
            if let Some(refused) = answer.refuse {
                let status = EntryStatus::from_code(i32::from(refused.status))
                    .unwrap_or(EntryStatus::Forbidden);
                recordable.refusal = Some(Refusal::new(status, refused.message));
            } else if answer.value.is_some_and(|rewritten| rewritten != value) {
                let plugin = reach.link.name();
                tracing::warn!(
                    plugin,
                    tool = recordable.command.name(),
                    "a plugin's entry.recording filter rewrote a command, which a plugin process \
                     cannot do; the command is refused"
                );
                let message = format!(
                    "The plugin {plugin} refused this command: it answered a changed command, \
                     which a plugin cannot make."
                );
                recordable.refusal = Some(Refusal::new(EntryStatus::Forbidden, message));
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
            let Some(context) = llm_context(&reach, call) else {
                return messages;
            };
            let value = serde_json::to_value(&messages).unwrap_or(Value::Null);
            let answer = asked_filter(&reach.link, "llm.request", value, context).await;
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
            let Some(context) = llm_context(&reach, call) else {
                return reply;
            };
            let answer = asked_filter(&reach.link, "llm.response", json!(reply), context).await;
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
            let fields = json!({"method": asked.method});
            let Some(context) = context(reach.project_place(asked.project), fields) else {
                return request;
            };
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
            let fields = json!({"turn": measuring.turn, "measured": measuring.measured});
            let Some(context) = context(reach.run_place(measuring.run), fields) else {
                return limit;
            };
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
            let fields = json!({"turn": proposing.turn});
            let Some(context) = context(reach.run_place(proposing.run), fields) else {
                return offered;
            };
            let answer = asked_filter(&reach.link, "turn.proposing", value, context).await;
            answer
                .and_then(|answer| answer.value)
                .and_then(|value| serde_json::from_value(value).ok())
                .unwrap_or(offered)
        }
        .boxed()
    }
}

/// What an `llm.*` filter is told of the call, when its plugin serves the call's project.
fn llm_context(reach: &Reach, call: LlmCall) -> Option<Value> {
    if !reach.project(call.project) {
        return None;
    }
    let fields = json!({"turn": call.turn, "purpose": call.purpose.as_str()});
    context(reach.run_place(call.run), fields)
}
