//! The second stage of a turn: the model called with the measured packet (the provider
//! records the call in the run's usage; its words go to the run's delta watchers as they
//! stream in, `live`), the clients told it is thinking and then
//! processing (written with the answer's record), the usage passed on for calibration, and
//! the reply parsed into commands (off the executor).

use std::sync::Arc;
use std::time::Instant;

use crate::agent::error::LoopError;
use crate::agent::AgentContext;
use crate::budget::RecordUsage;
use crate::db::enums::CallPurpose;
use crate::hub::notifications::{Notification, ProgressStatus, RunProgress};
use crate::llm::{
    CallFor, CancellationToken, ChatMessage, ChatRequest, ChatResponse, TextListener,
};
use crate::parser::ParseOutput;
use crate::plugins::events::Event;
use crate::plugins::filters::{LlmCall, LlmMessages, LlmResponse};

use super::measure::MeasuredTurn;
use super::TurnInput;

/// The model's reply: the response (its content the text the commands were parsed from)
/// and the commands.
pub(super) struct Reply {
    pub response: ChatResponse,
    pub parsed: ParseOutput,
    /// How long the call took.
    pub llm_ms: u64,
}

/// Calls the model with the turn's packet and parses its reply.
pub(super) async fn call_model(
    agent: &AgentContext,
    input: &TurnInput<'_>,
    measured: &MeasuredTurn,
    cancel: &CancellationToken,
) -> Result<Reply, LoopError> {
    let (run, project, turn) = (input.run_id, measured.project, measured.row.sequence);
    let progress = |status| {
        Notification::Progress(RunProgress {
            run: measured.alias.clone(),
            turn: i64::from(turn),
            status,
        })
    };
    crate::hub::publish(&agent.db, project, run, &progress(ProgressStatus::Thinking));
    agent.plugins.emit(Event::TurnStarted {
        run,
        loop_id: input.loop_row.id,
        turn,
        iteration: input.iteration,
    });
    let purpose = if input.config.delegation_depth > 0 {
        CallPurpose::Subagent
    } else {
        CallPurpose::Turn
    };
    let call = LlmCall {
        project,
        run,
        turn,
        purpose,
    };
    let packet = &measured.packet;
    let mut messages = vec![
        ChatMessage::system(packet.system.clone()),
        ChatMessage::user(packet.user.clone()),
    ];
    agent
        .plugins
        .filter::<LlmMessages>(&mut messages, &call)
        .await;
    let request = ChatRequest {
        messages,
        model: input.model_actual.to_string(),
        temperature: input.temperature,
        max_tokens: Some(agent.settings.agent.max_completion_tokens).filter(|limit| *limit > 0),
    };
    let llm_started = Instant::now();
    let this_turn = CallFor {
        run,
        loop_id: Some(input.loop_row.id),
        turn,
        purpose,
        caps: measured.caps,
    };
    // `processing` is written with the answer's record, and sent once that is committed.
    let processing = crate::hub::publication(project, run, &progress(ProgressStatus::Processing));
    let loop_number = i64::from(input.loop_row.sequence);
    let words = agent
        .live
        .turn(run, &measured.alias, loop_number, i64::from(turn));
    let mut response = agent
        .llm
        .complete_announcing(
            request,
            this_turn,
            processing,
            words.map(|words| Arc::new(words) as Arc<dyn TextListener>),
            cancel,
        )
        .await?;
    if let Some(refusal) = response
        .refusal
        .as_ref()
        .filter(|_| response.content.is_empty())
    {
        // The refusal's explanation is the model's answer, for the person to read.
        response.content = refusal.clone();
    }
    agent
        .plugins
        .filter::<LlmResponse>(&mut response.content, &call)
        .await;
    agent.budget.do_send(RecordUsage {
        run,
        estimate: measured.estimate,
        usage: response.usage,
    });
    let llm_ms = llm_started.elapsed().as_millis() as u64;
    agent.metrics.record_turn();
    let (content, parsed) = parse_off_the_executor(agent, response.content).await?;
    response.content = content;
    agent.plugins.emit(Event::TurnResponse {
        run,
        turn,
        system: &packet.system,
        user: &packet.user,
        content: &response.content,
    });
    Ok(Reply {
        response,
        parsed,
        llm_ms,
    })
}

/// Parses a reply on the blocking pool: a hostile reply (a megabyte of nested tags, tens of
/// thousands of attributes) costs the parser real time, which must not stall the event loop
/// that serves this thread's connections. The content goes there and comes back unchanged.
async fn parse_off_the_executor(
    agent: &AgentContext,
    content: String,
) -> Result<(String, ParseOutput), LoopError> {
    let plugins = Arc::clone(&agent.plugins);
    let parsing = actix_web::rt::task::spawn_blocking(move || {
        let parsed = crate::parser::parse(&content, &plugins.tags());
        (content, parsed)
    });
    match parsing.await {
        Ok(parsed) => Ok(parsed),
        Err(failure) if failure.is_panic() => std::panic::resume_unwind(failure.into_panic()),
        Err(_) => Err(LoopError::Stopping("the reply parser")),
    }
}
