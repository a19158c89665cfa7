//! The apply stage: one unit of work on the DB thread that writes the turn's audit copies,
//! records and runs the reply's commands (with what was gathered for them), heals the status
//! when the model gave neither summarize nor update, and reads the state the clients are
//! told (appending it to the event log, `agent::state::Telling`).

use std::sync::Arc;

use serde_json::json;

use crate::agent::error::LoopError;
use crate::agent::state::{Telling, Told};
use crate::agent::turn::audit::TurnAudit;
use crate::agent::turn::{TurnInput, TurnReport};
use crate::agent::AgentContext;
use crate::budget::WriteGate;
use crate::db::models::entry::EntryUpsertForm;
use crate::db::paths::slug_path;
use crate::db::queries::entries;
use crate::db::{Conn, DbError};
use crate::parser::healer::{heal_status, HealedStatus, ToolCall};
use crate::parser::Command;
use crate::plugins::engine::dispatch::{
    dispatch_gated, DispatchOutcome, PreparedWork, ResponseTurn,
};
use crate::plugins::filters::Recordable;
use crate::plugins::policy::ToolPolicy;
use crate::plugins::tool::ToolError;
use crate::plugins::Plugins;

/// A reply's commands with the work prepared for them beside the writer (body searches,
/// edits, what their tools gathered), and the turn's audit copies.
pub(super) struct Prepared {
    /// After the `entry.recording` filters.
    pub commands: Vec<Recordable>,
    pub work: PreparedWork,
    pub audit: TurnAudit,
}

/// In one unit of work on the DB thread: writes the audit copies, records and runs the
/// response's commands, heals the status when the model gave neither summarize nor update,
/// and reads (and appends to the event log) what `telling` tells the clients.
#[allow(clippy::too_many_arguments)]
pub(super) async fn apply(
    agent: &AgentContext,
    input: &TurnInput<'_>,
    turn: i32,
    policy: ToolPolicy,
    content: &str,
    prepared: Prepared,
    mut gate: Box<dyn WriteGate>,
    telling: Telling,
) -> Result<(TurnReport, Told), LoopError> {
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
    let written: Vec<&Command> = commands
        .iter()
        .map(|recordable| &recordable.command)
        .collect();
    let healed = healed_status(&plugins, content, &written);
    let calls: Vec<ToolCall> = written.into_iter().map(tool_call).collect();
    let (run_id, loop_id) = (input.run_id, input.loop_row.id);
    // A dispatch that fails rolled back its own savepoint; its refusal keeps the audit
    // copies, the store's failure rolls them back too.
    let (outcome, told) = agent
        .db
        .call_refusable(move |conn| {
            audit.write(conn, run_id, loop_id)?;
            let mut outcome = work.apply(|gathered| {
                dispatch_gated(
                    conn,
                    &plugins,
                    &dispatch_input,
                    &commands,
                    gathered,
                    Some(gate.as_mut()),
                )
            })?;
            if outcome.needs_healing {
                write_healed(conn, &dispatch_input, healed, &mut outcome)?;
            }
            let told = telling.read(conn)?;
            Ok::<_, ToolError>((outcome, told))
        })
        .await?;
    Ok((TurnReport::of(turn, outcome, calls), told))
}

/// The status the reply stands for when it gave neither summarize nor update.
fn healed_status(plugins: &Plugins, content: &str, commands: &[&Command]) -> HealedStatus {
    let names: Vec<&str> = commands.iter().map(|command| command.name()).collect();
    let investigates = |name: &str| {
        plugins
            .get(name)
            .is_some_and(|tool| tool.effect().investigates())
    };
    heal_status(content, names, investigates)
}

/// Writes the healed status as the turn's summary or update entry, and into `outcome`.
fn write_healed(
    conn: &mut Conn,
    input: &ResponseTurn,
    healed: HealedStatus,
    outcome: &mut DispatchOutcome,
) -> Result<(), DbError> {
    let (scheme, text) = match &healed {
        HealedStatus::Summary(text) => ("summarize", text.clone()),
        HealedStatus::Update(text) => ("update", text.clone()),
    };
    let path = entries::free_path(conn, input.run_id, &slug_path(scheme, &text))?;
    entries::write_entry(
        conn,
        &EntryUpsertForm {
            attributes: Some(json!({"healed": true})),
            ..EntryUpsertForm::new(input.run_id, input.loop_id, input.turn, path, text.clone())
        },
    )?;
    match healed {
        HealedStatus::Summary(_) => outcome.summary_text = Some(text),
        HealedStatus::Update(_) => outcome.update_text = Some(text),
    }
    Ok(())
}

impl TurnReport {
    /// What the loop learns of turn `turn` from its dispatch's `outcome`; `calls` are the
    /// reply's commands, one per call the outcome records.
    fn of(turn: i32, outcome: DispatchOutcome, calls: Vec<ToolCall>) -> TurnReport {
        let mut report = TurnReport {
            turn,
            status_healed: outcome.needs_healing,
            summary: outcome.summary_text,
            update: outcome.update_text,
            has_writes: outcome.flags.has_writes,
            has_reads: outcome.flags.has_reads,
            proposed: outcome.proposals,
            ..TurnReport::default()
        };
        for (call, record) in calls.into_iter().zip(&outcome.calls) {
            if record.is_action {
                report.action_calls.push(call.clone());
            }
            if record.is_write {
                report.write_calls.push(call);
            }
        }
        report
    }
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
