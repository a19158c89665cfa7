//! One turn, in stages: measure (`measure`: the packet assembled from the store, written
//! prompt and all, against the window), call (`call`: the model, its reply parsed), gather
//! (what the commands need from outside the store: MCP calls, sub-agents, the web), apply
//! (one unit of work: the audit copies, the commands recorded and run, the status healed)
//! and publish (the clients told the run's state).

use std::sync::Arc;
use std::time::Instant;

use serde_json::json;
use tracing::Instrument;

use crate::agent::delegation::{self, ParentTurn};
use crate::agent::error::LoopError;
use crate::agent::state;
use crate::agent::AgentContext;
use crate::budget::{
    BudgetGuard, CalibratedTokens, Calibration, Overflow, PanicFailure, PanicGate, WriteGate,
};
use crate::context::Packet;
use crate::db::enums::Fidelity;
use crate::db::ids::{LoopId, RunId};
use crate::db::models::entry::{EntryUpsertForm, UnresolvedRow};
use crate::db::models::run::{TurnRow, TurnUsageForm};
use crate::db::paths::slug_path;
use crate::db::queries::{entries, turns};
use crate::db::Conn;
use crate::db::DbError;
use crate::hedberg::WorkLimit;
use crate::llm::{CancellationToken, ChatResponse};
use crate::parser::healer::{heal_status, HealedStatus, ToolCall, TurnSignals};
use crate::parser::Command;
use crate::plugins::dispatch::PreparedWork;
use crate::plugins::dispatch::{dispatch_gated, ResponseTurn};
use crate::plugins::events::Event;
use crate::plugins::policy::ToolPolicy;
use crate::plugins::tool::ToolError;
use call::{call_model, Reply};
use measure::{measure, Measured, MeasuredTurn};
use state::{StoredState, TurnFacts};

mod call;
pub mod input;
mod measure;
mod prepare;

pub use input::{PanicState, TurnInput};

/// What the loop needs to decide whether to go on.
#[derive(Debug, Default)]
pub struct TurnReport {
    /// The run-wide turn number.
    pub turn: i32,
    /// Proposals pending after this turn.
    pub proposed: Vec<UnresolvedRow>,
    /// Actions of this turn, for cycle detection.
    pub action_calls: Vec<ToolCall>,
    /// Writes of this turn, for cycle detection.
    pub write_calls: Vec<ToolCall>,
    /// Summary text (explicit or healed).
    pub summary: Option<String>,
    /// Update text (explicit or healed).
    pub update: Option<String>,
    /// The status was healed from plain text.
    pub status_healed: bool,
    /// The turn wrote something.
    pub has_writes: bool,
    /// The turn read something.
    pub has_reads: bool,
    /// The model refused (the provider said so): the loop ends.
    pub refused: bool,
}

impl TurnReport {
    /// The progress check's view of this turn.
    pub fn signals(&self) -> TurnSignals<'_> {
        TurnSignals {
            summary: self.summary.as_deref(),
            update: self.update.as_deref(),
            status_healed: self.status_healed,
            has_writes: self.has_writes,
            has_reads: self.has_reads,
        }
    }
}

/// How a turn ended.
#[derive(Debug)]
pub enum TurnEnd {
    /// The packet does not fit the window; the LLM was not called.
    Overflow {
        overflow: Overflow,
        /// The calibrated size of the loop's prompt.
        incoming_prompt: CalibratedTokens,
        /// The prompt entry this turn wrote, to archive while a panic loop frees room.
        prompt_path: Option<String>,
        /// The calibration of the measure.
        calibration: Calibration,
    },
    /// A panic loop reached its target; the LLM was not called.
    Freed,
    /// A panic loop gave up.
    GaveUp(PanicFailure),
    /// The model answered and its commands ran.
    Completed(TurnReport),
}

pub async fn execute_turn(
    agent: &AgentContext,
    input: TurnInput<'_>,
    cancel: &CancellationToken,
) -> Result<TurnEnd, LoopError> {
    let span = tracing::info_span!("turn", turn.seq = tracing::field::Empty);
    execute_numbered_turn(agent, input, cancel)
        .instrument(span)
        .await
}

async fn execute_numbered_turn(
    agent: &AgentContext,
    mut input: TurnInput<'_>,
    cancel: &CancellationToken,
) -> Result<TurnEnd, LoopError> {
    let started = Instant::now();
    let measured = match measure(agent, &mut input).await? {
        Measured::Fits(measured) => measured,
        Measured::Ends(end) => return Ok(end),
    };
    let preparation_ms = started.elapsed().as_millis() as u64;
    let Reply {
        response,
        parsed,
        llm_ms,
    } = call_model(agent, &input, &measured, cancel).await?;
    let MeasuredTurn {
        row,
        packet,
        measure,
        window,
        policy,
        alias,
        project,
        ..
    } = measured;
    let turn = row.sequence;
    let audit = TurnAudit::of(&row, &packet, &response, &parsed.unparsed);
    let dispatch_started = Instant::now();
    let gate: Box<dyn WriteGate> = if input.panic.is_some() {
        Box::new(PanicGate)
    } else {
        Box::new(BudgetGuard::in_window(window, measure))
    };
    let work = gather(agent, &input, &policy, &parsed.commands, cancel).await?;
    let prepared = Prepared {
        commands: parsed.commands,
        work,
        audit,
    };
    let (mut report, stored) = dispatch(
        agent,
        &input,
        turn,
        policy,
        &response.content,
        prepared,
        gate,
    )
    .await?;
    let dispatch_ms = dispatch_started.elapsed().as_millis() as u64;
    report.refused = response.refusal.is_some();
    let facts = TurnFacts {
        run: input.run_id,
        project,
        alias: &alias,
        turn,
    };
    state::publish_turn_state(agent, facts, stored, &input, &response, &packet);
    agent.plugins.emit(Event::TurnCompleted {
        run: input.run_id,
        turn,
        proposed: report.proposed.len(),
    });
    tracing::info!(
        preparation_ms,
        llm_ms,
        dispatch_ms,
        prompt_tokens = response.usage.prompt_tokens,
        completion_tokens = response.usage.completion_tokens,
        "turn done"
    );
    Ok(TurnEnd::Completed(report))
}

/// What the reply's commands need from outside the store, obtained before the unit of work
/// that records them: the MCP calls made at once, the sub-agents' reports, the searches and
/// web pages, and the body searches and edits. An abort drops them and ends the turn.
async fn gather(
    agent: &AgentContext,
    input: &TurnInput<'_>,
    policy: &ToolPolicy,
    commands: &[Command],
    cancel: &CancellationToken,
) -> Result<PreparedWork, LoopError> {
    let mcp_outcomes = agent
        .mcp
        .perform(policy, input.run_id, commands, cancel)
        .await;
    let parent = ParentTurn {
        loop_row: input.loop_row,
        config: input.config,
        policy,
    };
    let reports = delegation::perform(agent, parent, commands, cancel).await;
    // An aborted run drops the searches (their budget is cancelled with them) and the web
    // requests, and ends.
    let work = tokio::select! {
        work = agent.prepare_work(input.run_id, commands, policy) => work,
        () = cancel.cancelled() => {
            return Err(LoopError::Tool(ToolError::WorkLimit(WorkLimit::Cancelled)));
        }
    };
    Ok(work.answering(mcp_outcomes).answering(reports))
}

/// A reply's commands, their body searches and edits already computed beside the writer, and
/// the turn's audit copies.
struct Prepared {
    commands: Vec<Command>,
    work: PreparedWork,
    audit: TurnAudit,
}

/// In one unit of work on the DB thread: writes the audit copies, records and runs the
/// response's commands, heals the status when the model gave neither summarize nor update,
/// and reads the state the clients are told.
async fn dispatch(
    agent: &AgentContext,
    input: &TurnInput<'_>,
    turn: i32,
    policy: ToolPolicy,
    content: &str,
    prepared: Prepared,
    mut gate: Box<dyn WriteGate>,
) -> Result<(TurnReport, StoredState), LoopError> {
    let Prepared {
        commands,
        work,
        audit,
    } = prepared;
    let plugins = Arc::clone(&agent.plugins);
    let dispatch_input = ResponseTurn {
        run_id: input.run_id,
        loop_id: Some(input.loop_row.id),
        turn,
        policy,
        project_root: input.project_root.to_path_buf(),
    };
    let healed = {
        let names: Vec<&str> = commands.iter().map(Command::name).collect();
        let investigates = |name: &str| {
            plugins
                .get(name)
                .is_some_and(|tool| tool.effect().investigates())
        };
        heal_status(content, names, investigates)
    };
    let calls: Vec<(ToolCall, String)> = commands
        .iter()
        .map(|command| (tool_call(command), command.name().to_string()))
        .collect();
    let run_id = input.run_id;
    let loop_id = input.loop_row.id;
    let (outcome, stored) = agent
        .db
        .call(move |conn| {
            audit.write(conn, run_id, loop_id)?;
            let dispatched = work.apply(|| {
                dispatch_gated(
                    conn,
                    &plugins,
                    &dispatch_input,
                    &commands,
                    Some(gate.as_mut()),
                )
            });
            // A failed dispatch rolled back its own savepoint; the audit copies stay.
            let mut outcome = match dispatched {
                Ok(outcome) => outcome,
                Err(error) => return Ok(Err(error)),
            };
            if outcome.needs_healing {
                let (scheme, text) = match &healed {
                    HealedStatus::Summary(text) => ("summarize", text.clone()),
                    HealedStatus::Update(text) => ("update", text.clone()),
                };
                let path = entries::free_path(conn, run_id, &slug_path(scheme, &text))?;
                entries::write_entry(
                    conn,
                    &EntryUpsertForm {
                        attributes: Some(json!({"healed": true})),
                        ..EntryUpsertForm::new(run_id, Some(loop_id), turn, path, text.clone())
                    },
                )?;
                match healed {
                    HealedStatus::Summary(_) => outcome.summary_text = Some(text),
                    HealedStatus::Update(_) => outcome.update_text = Some(text),
                }
            }
            let stored = StoredState::read(conn, run_id)?;
            Ok(Ok((outcome, stored)))
        })
        .await?
        .map_err(|error| match error {
            ToolError::Db(error) => LoopError::Db(error),
            other => LoopError::Tool(other),
        })?;
    let mut report = TurnReport {
        turn,
        status_healed: outcome.needs_healing,
        summary: outcome.summary_text.clone(),
        update: outcome.update_text.clone(),
        has_writes: outcome.flags.has_writes,
        has_reads: outcome.flags.has_reads,
        proposed: outcome.proposals,
        ..TurnReport::default()
    };
    for ((call, _name), record) in calls.into_iter().zip(&outcome.calls) {
        if record.is_action {
            report.action_calls.push(call.clone());
        }
        if record.is_write {
            report.write_calls.push(call);
        }
    }
    Ok((report, stored))
}

/// The repetition check's view of one command: its scheme and its fields.
fn tool_call(command: &Command) -> ToolCall {
    let fields = match command.to_json() {
        serde_json::Value::Object(fields) => fields,
        _ => serde_json::Map::new(),
    };
    ToolCall {
        scheme: command.name().to_string(),
        path: fields
            .get("path")
            .and_then(serde_json::Value::as_str)
            .map(str::to_string),
        attributes: fields,
    }
}

/// What the model saw and said (`system://N`, `user://N`, `assistant://N`, `model://N`,
/// `reasoning://N`, `content://N`), kept at archive fidelity, and the turn's usage.
struct TurnAudit {
    turn: TurnRow,
    copies: Vec<(String, String)>,
    usage: TurnUsageForm,
}

impl TurnAudit {
    fn of(turn: &TurnRow, packet: &Packet, response: &ChatResponse, unparsed: &str) -> TurnAudit {
        let n = turn.sequence;
        let mut copies = vec![
            (format!("system://{n}"), packet.system.clone()),
            (format!("user://{n}"), packet.user.clone()),
            (format!("assistant://{n}"), response.content.clone()),
            (
                format!("model://{n}"),
                json!({"model": response.model, "usage": response.usage, "finish_reason": response.finish_reason})
                    .to_string(),
            ),
        ];
        if let Some(reasoning) = response
            .reasoning_content
            .as_ref()
            .filter(|text| !text.is_empty())
        {
            copies.push((format!("reasoning://{n}"), reasoning.clone()));
        }
        if !unparsed.trim().is_empty() {
            copies.push((format!("content://{n}"), unparsed.trim().to_string()));
        }
        let usage = &response.usage;
        let to_i32 = |value: u64| i32::try_from(value).unwrap_or(i32::MAX);
        let usage = TurnUsageForm {
            context_tokens: to_i32(if usage.prompt_tokens > 0 {
                usage.prompt_tokens
            } else {
                u64::try_from(packet.assembled_tokens).unwrap_or(0)
            }),
            reasoning_content: response.reasoning_content.clone(),
            prompt_tokens: to_i32(usage.prompt_tokens),
            cached_tokens: to_i32(usage.cached_tokens),
            completion_tokens: to_i32(usage.completion_tokens),
            reasoning_tokens: to_i32(usage.reasoning_tokens),
            total_tokens: to_i32(usage.total_tokens),
            cost: usage.cost,
        };
        TurnAudit {
            turn: turn.clone(),
            copies,
            usage,
        }
    }

    fn write(self, conn: &mut Conn, run: RunId, loop_id: LoopId) -> Result<(), DbError> {
        let turn = self.turn.sequence;
        for (path, body) in self.copies {
            entries::write_entry(
                conn,
                &EntryUpsertForm {
                    fidelity: Some(Fidelity::Archive),
                    ..EntryUpsertForm::new(run, Some(loop_id), turn, path, body)
                },
            )?;
        }
        turns::update_turn_usage(conn, self.turn.id, &self.usage)?;
        Ok(())
    }
}
