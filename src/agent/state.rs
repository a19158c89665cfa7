//! What clients are told at the end of a turn: `run/state`, and `run/proposal` for each new
//! proposal.

use serde_json::{Map, Value};

use crate::agent::error::LoopError;
use crate::agent::turn::input::TurnInput;
use crate::agent::AgentContext;
use crate::context::Packet;
use crate::db::enums::{EntryStatus, RunStatus};
use crate::db::ids::{ProjectId, RunId};
use crate::db::queries::{entries, runs, turns};
use crate::db::DbError;
use crate::hub::notifications::{
    HistoryEntry, Notification, PendingProposal, ProposedEntry, RunProposal, RunState, Telemetry,
    UnknownEntry, UsageTotals,
};
use crate::llm::ChatResponse;

/// The run's alias now (it may have been renamed while running).
pub async fn alias_of(agent: &AgentContext, run: RunId) -> Result<String, LoopError> {
    let row = agent.db.call(move |conn| runs::get_run(conn, run)).await?;
    Ok(row
        .ok_or_else(|| DbError::NotFound(format!("run {run}")))?
        .alias)
}

/// The project a run belongs to, for notification routing.
pub async fn project_of(agent: &AgentContext, run: RunId) -> Result<ProjectId, LoopError> {
    let row = agent.db.call(move |conn| runs::get_run(conn, run)).await?;
    Ok(row
        .ok_or_else(|| DbError::NotFound(format!("run {run}")))?
        .project_id)
}

fn parse_attributes(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|_| Value::Object(Map::new()))
}

/// Publishes `run/proposal` for the proposals this turn made, then `run/state`.
#[allow(clippy::too_many_arguments)]
pub async fn publish_turn_state(
    agent: &AgentContext,
    run: RunId,
    project: ProjectId,
    alias: &str,
    turn: i32,
    input: &TurnInput<'_>,
    response: &ChatResponse,
    packet: &Packet,
) -> Result<(), LoopError> {
    let (log, unknowns, unresolved, usage, latest_summary, context_tokens) = agent
        .db
        .call(move |conn| {
            let summary = entries::entries_of_scheme(conn, run, "summarize")?
                .into_iter()
                .rev()
                .find(|row| row.status == EntryStatus::Ok)
                .map(|row| row.body);
            let context_tokens = turns::latest_turn(conn, run)?
                .map(|row| row.context_tokens)
                .unwrap_or(0);
            Ok((
                entries::run_log(conn, run)?,
                entries::entries_of_scheme(conn, run, "unknown")?,
                entries::unresolved(conn, run)?,
                turns::run_usage(conn, run)?,
                summary,
                context_tokens,
            ))
        })
        .await?;
    let fresh: Vec<ProposedEntry> = unresolved
        .iter()
        .filter(|row| row.turn == turn)
        .map(|row| ProposedEntry {
            path: row.path.clone(),
            kind: scheme_or_unknown(&row.path),
            body: row.body.clone(),
            attributes: parse_attributes(&row.attributes),
        })
        .collect();
    if !fresh.is_empty() {
        agent.hubs.publish(
            project,
            run,
            Notification::Proposal(RunProposal {
                run: alias.to_string(),
                proposed: fresh,
            }),
        );
    }
    let state = RunState {
        run: alias.to_string(),
        turn,
        status: if unresolved.is_empty() {
            RunStatus::Running
        } else {
            RunStatus::Proposed
        },
        summary: latest_summary.unwrap_or_default(),
        history: log
            .into_iter()
            .map(|row| HistoryEntry {
                tool: row.tool,
                target: row.target,
                status: row.status,
                path: row.path,
                body: row.body,
            })
            .collect(),
        unknowns: unknowns
            .into_iter()
            .map(|row| UnknownEntry {
                path: row.path,
                body: row.body,
            })
            .collect(),
        proposed: unresolved
            .iter()
            .map(|row| PendingProposal {
                path: row.path.clone(),
                kind: scheme_or_unknown(&row.path),
                attributes: parse_attributes(&row.attributes),
            })
            .collect(),
        telemetry: Telemetry {
            model_alias: input.model_alias.to_string(),
            model: if response.model.is_empty() {
                input.model_alias.to_string()
            } else {
                response.model.clone()
            },
            temperature: input.temperature,
            context_size: input.context_size,
            context_tokens,
            usage: UsageTotals::from(&usage),
            context_distribution: packet.distribution.clone(),
        },
    };
    agent
        .hubs
        .publish(project, run, Notification::State(Box::new(state)));
    Ok(())
}

fn scheme_or_unknown(path: &str) -> String {
    crate::db::paths::scheme_of(path)
        .unwrap_or("unknown")
        .to_string()
}
