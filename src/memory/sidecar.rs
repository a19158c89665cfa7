//! The sidecar call, memory's one way to ask a model beside a run's turns (never in one):
//! the session notes' refresh and the recall's re-rank each make one completion of a
//! catalogue model through `LlmProviders`, with instructions and an input of their own,
//! bounded by a timeout and dropped with the loop's cancel token. Its answer is text the
//! caller validates (`json_object` finds the JSON in it); its tokens are in no packet, but
//! in the run's usage: the provider records each answered call with its purpose
//! (`llm::CallFor`), so `run/state` and `getRun` show what it cost (a call that failed or
//! timed out reported nothing and is not). Its request and reply pass the plugins'
//! `llm.request` and `llm.response` filters, as a turn's do (`purpose` tells them apart).

use std::time::Duration;

use crate::db::enums::CallPurpose;
use crate::llm::{CallFor, ChatMessage, ChatRequest, LlmError, RunCaps};
use crate::plugins::filters::{LlmCall, LlmMessages, LlmResponse};
use crate::plugins::reflection::{Reflecting, ReflectionServices};

/// One sidecar question.
pub(super) struct SidecarCall<'a> {
    /// What it is for, as the run's usage shows it.
    pub purpose: CallPurpose,
    /// The catalogue `actual` of the model asked.
    pub model_actual: String,
    /// The system message: what the model is to do and how to answer.
    pub instructions: &'a str,
    /// The user message: what it works on.
    pub input: String,
    /// Cap on the answer, in tokens.
    pub answer_tokens: u32,
    pub timeout: Duration,
}

/// Why a sidecar call has no answer.
#[derive(Debug, thiserror::Error)]
pub(super) enum SidecarError {
    #[error("the sidecar call failed: {0}")]
    Failed(#[from] LlmError),
    #[error("the sidecar did not answer within {} s", .0.as_secs())]
    TimedOut(Duration),
}

/// Asks the model, at temperature 0, for the run `at` is about; its answer's text.
pub(super) async fn ask(
    services: &ReflectionServices,
    at: &Reflecting,
    call: SidecarCall<'_>,
) -> Result<String, SidecarError> {
    let purpose = CallFor {
        run: at.run,
        loop_id: Some(at.loop_id),
        turn: at.turn,
        purpose: call.purpose,
        caps: RunCaps::Unread,
    };
    let filtered = LlmCall {
        project: at.project,
        run: at.run,
        turn: at.turn,
        purpose: call.purpose,
    };
    let mut messages = vec![
        ChatMessage::system(call.instructions),
        ChatMessage::user(call.input),
    ];
    let plugins = &services.plugins;
    plugins
        .filter::<LlmMessages>(&mut messages, &filtered)
        .await;
    let request = ChatRequest {
        messages,
        model: call.model_actual,
        temperature: Some(0.0),
        max_tokens: Some(call.answer_tokens),
    };
    let answer = tokio::time::timeout(
        call.timeout,
        services.llm.complete(request, purpose, &services.cancel),
    )
    .await
    .map_err(|_| SidecarError::TimedOut(call.timeout))??;
    let mut content = answer.content;
    plugins.filter::<LlmResponse>(&mut content, &filtered).await;
    Ok(content)
}

/// The outermost JSON object of an answer (a fenced block or text around it is ignored), if
/// it has braces at all.
pub(super) fn json_object(answer: &str) -> Option<&str> {
    let start = answer.find('{')?;
    let end = answer.rfind('}')?;
    answer.get(start..=end)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_object_is_found_between_the_first_and_last_brace() {
        assert_eq!(
            json_object("Sure:\n```json\n{\"a\": {\"b\": 1}}\n```"),
            Some("{\"a\": {\"b\": 1}}")
        );
        assert_eq!(json_object("no json"), None);
        assert_eq!(json_object("} backwards {"), None);
    }
}
