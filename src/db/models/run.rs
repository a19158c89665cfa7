//! Rows and forms for runs, loops and turns: the skeleton under a project.

use diesel::prelude::*;

use crate::db::enums::{CallPurpose, LoopMode, LoopPriority, RunAction, RunStatus, TitleBy};
use crate::db::ids::{LoopId, ProjectId, RunId, TurnId};
use crate::db::json::{LoopOptions, LoopResult};
use crate::db::schema::{loops, run_actions, runs, turns};
use crate::usage::{Micros, Tokens, UtcTime};

/// A run: one conversation of a project, with its settings and counters.
#[derive(Debug, Clone, PartialEq, Queryable, Selectable, QueryableByName)]
#[diesel(table_name = runs, check_for_backend(diesel::sqlite::Sqlite, diesel::pg::Pg))]
pub struct RunRow {
    pub id: RunId,
    pub project_id: ProjectId,
    /// The run this one was forked from.
    pub parent_run_id: Option<RunId>,
    /// Model alias used by loops that bring none (resume, inject).
    pub model: Option<String>,
    pub status: RunStatus,
    /// Public, unique name.
    pub alias: String,
    /// Stored temperature (0–2).
    pub temperature: Option<f64>,
    /// Persona text appended to the system prompt.
    pub persona: Option<String>,
    /// Caps the model's context size (≥ 1024).
    pub context_limit: Option<i32>,
    /// The turn number the next turn will take.
    pub next_turn: i32,
    /// The sequence number the next loop will take.
    pub next_loop: i32,
    /// `YYYY-MM-DD HH:MM:SS` UTC.
    pub created_at: String,
    /// The person who created it (or forked it from its parent); `None`: the operator.
    pub created_by: Option<String>,
    /// The run whose sub-task this run carries out (see `agent::delegation`).
    pub delegated_by: Option<RunId>,
    /// What people read it as (`None`: no prompt reached it yet).
    pub title: Option<String>,
    /// Where the title came from.
    pub title_by: Option<TitleBy>,
    /// The caps its starter gave it (JSON, `CapLimits`); `None`: none of its own.
    pub caps: Option<String>,
}

/// What a caller gives to create a run; the alias is generated.
#[derive(Debug, Clone)]
pub(crate) struct RunCreateForm {
    pub project_id: ProjectId,
    /// Model alias; also the alias prefix.
    pub model: String,
    /// Temperature (0–2).
    pub temperature: Option<f64>,
    pub persona: Option<String>,
    /// Context cap (≥ 1024).
    pub context_limit: Option<i32>,
    /// The person creating it.
    pub created_by: Option<String>,
}

/// Insert form for [`RunRow`].
#[derive(Debug, Clone, Insertable)]
#[diesel(table_name = runs)]
pub(crate) struct RunInsertForm {
    pub project_id: ProjectId,
    pub parent_run_id: Option<RunId>,
    pub model: Option<String>,
    pub alias: String,
    pub temperature: Option<f64>,
    pub persona: Option<String>,
    pub context_limit: Option<i32>,
    pub next_turn: i32,
    pub created_by: Option<String>,
    pub delegated_by: Option<RunId>,
    /// A fork's: its parent's.
    pub title: Option<String>,
    pub title_by: Option<TitleBy>,
}

/// Update form for a run's settings; `None` keeps the stored value.
#[derive(Debug, Clone, Default, AsChangeset)]
#[diesel(table_name = runs)]
pub struct RunConfigUpdateForm {
    /// Temperature (0–2).
    pub temperature: Option<f64>,
    pub persona: Option<String>,
    /// Context cap (≥ 1024).
    pub context_limit: Option<i32>,
    /// Model alias.
    pub model: Option<String>,
}

/// One run as listed for a project.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct RunSummary {
    pub run: RunRow,
    /// Turns executed so far.
    pub turns: i64,
    /// When its latest notification was sent, ms since the epoch (`None`: none kept).
    pub last_event_ms: Option<i64>,
    /// Its first loop's prompt, cut short (`None`: no loop yet).
    pub asked: Option<String>,
    /// Body of the newest `summarize://` entry.
    pub summary: Option<String>,
    /// The alias of the run that delegated it.
    pub delegated_by: Option<String>,
}

/// The model calls made for a run with one purpose, and their usage summed.
#[derive(Debug, Clone, PartialEq, QueryableByName)]
pub struct PurposeUsage {
    #[diesel(sql_type = diesel::sql_types::Text)]
    pub purpose: CallPurpose,
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    pub calls: i64,
    #[diesel(embed)]
    pub tokens: Tokens,
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    pub cost_micros: i64,
}

impl PurposeUsage {
    /// What the calls cost.
    pub(crate) fn cost(&self) -> Micros {
        Micros(self.cost_micros)
    }
}

/// One answered model call made for a run, as recorded (`llm::Ledger`); the person and
/// project are the run's.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ModelCallForm {
    pub run_id: RunId,
    pub loop_id: Option<LoopId>,
    /// The turn it is (`Turn`, `Subagent`), or the run's latest turn when it was made.
    pub turn: i32,
    pub purpose: CallPurpose,
    /// The provider model id that answered (the catalogue's `actual`).
    pub model: String,
    pub tokens: Tokens,
    /// Fixed when recorded: the provider's reported cost, else the catalogue's price.
    pub cost: Micros,
    /// When it was answered, by the server's clock (`usage::Clock`).
    pub at: UtcTime,
    /// The person whose own provider key it carried; `None`: the server's key.
    pub key_of: Option<String>,
}

/// A loop: one `ask`/`act`/`panic` request and the turns it takes.
#[derive(Debug, Clone, PartialEq, Queryable, Selectable, QueryableByName)]
#[diesel(table_name = loops, check_for_backend(diesel::sqlite::Sqlite, diesel::pg::Pg))]
pub struct LoopRow {
    /// Row id; FIFO key.
    pub id: LoopId,
    pub run_id: RunId,
    /// Per-run sequence number.
    pub sequence: i32,
    pub mode: LoopMode,
    /// Model alias for this loop.
    pub model: Option<String>,
    /// The prompt; empty means resume without a new prompt entry.
    pub prompt: String,
    /// Claim priority.
    pub priority: LoopPriority,
    /// 100 pending, 102 running, then the outcome.
    pub status: RunStatus,
    /// Loop options (flags, temperature, panic bookkeeping).
    #[diesel(
        select_expression = (loops::id, loops::config),
        select_expression_type = (loops::id, loops::config)
    )]
    pub config: LoopOptions,
    /// The outcome.
    pub result: Option<LoopResult>,
    /// `YYYY-MM-DD HH:MM:SS` UTC.
    pub created_at: String,
    /// The person whose request queued it (a panic loop and its retry: the person of the
    /// loop that overflowed); `None`: the operator.
    pub requested_by: Option<String>,
    /// The connection whose request queued it (`Instance::connection_key`; a loop
    /// that continues another: that one's), whose own loops `run/cancel` stops for an operator.
    pub requested_on: Option<i64>,
}

/// What a caller gives to enqueue a loop; the sequence number is assigned.
#[derive(Debug, Clone)]
pub(crate) struct LoopEnqueue {
    pub run_id: RunId,
    pub mode: LoopMode,
    /// Model alias.
    pub model: Option<String>,
    /// The prompt ("" to resume).
    pub prompt: String,
    /// Claim priority.
    pub priority: LoopPriority,
    /// Loop options; stored as JSON text.
    pub config: serde_json::Value,
    /// The person whose request queues it.
    pub requested_by: Option<String>,
    /// The connection that request came on (`Instance::connection_key`).
    pub requested_on: Option<i64>,
}

/// Insert form for [`LoopRow`].
#[derive(Debug, Clone, Insertable)]
#[diesel(table_name = loops)]
pub(crate) struct LoopInsertForm {
    pub run_id: RunId,
    pub sequence: i32,
    pub mode: LoopMode,
    pub model: Option<String>,
    pub prompt: String,
    pub priority: LoopPriority,
    pub config: String,
    pub requested_by: Option<String>,
    pub requested_on: Option<i64>,
}

/// One LLM call, with its telemetry.
/// `prompt_tokens` … `total_tokens` and `cost` (US dollars) are the provider's usage report.
#[derive(Debug, Clone, PartialEq, Queryable, Selectable, QueryableByName)]
#[diesel(table_name = turns, check_for_backend(diesel::sqlite::Sqlite, diesel::pg::Pg))]
pub(crate) struct TurnRow {
    pub id: TurnId,
    pub run_id: RunId,
    pub loop_id: LoopId,
    /// Run-wide turn number N.
    pub sequence: i32,
    /// Actual prompt tokens (or the assembled estimate when the provider gave none).
    pub context_tokens: i32,
    /// Merged reasoning text.
    pub reasoning_content: Option<String>,
    pub prompt_tokens: i32,
    pub cached_tokens: i32,
    pub completion_tokens: i32,
    pub reasoning_tokens: i32,
    pub total_tokens: i32,
    pub cost: f64,
    /// `YYYY-MM-DD HH:MM:SS` UTC.
    pub created_at: String,
}

/// Insert form for [`TurnRow`].
#[derive(Debug, Clone, Insertable)]
#[diesel(table_name = turns)]
pub struct TurnInsertForm {
    pub run_id: RunId,
    pub loop_id: LoopId,
    /// Run-wide turn number N.
    pub sequence: i32,
}

/// Update form for a turn's telemetry, written after the LLM call.
/// `prompt_tokens` … `total_tokens` and `cost` (US dollars) are the provider's usage report.
#[derive(Debug, Clone, Default, PartialEq, AsChangeset)]
#[diesel(table_name = turns)]
pub struct TurnUsageForm {
    /// Actual prompt tokens (or the assembled estimate).
    pub context_tokens: i32,
    /// Merged reasoning text; `None` keeps it.
    pub reasoning_content: Option<String>,
    pub prompt_tokens: i32,
    pub cached_tokens: i32,
    pub completion_tokens: i32,
    pub reasoning_tokens: i32,
    pub total_tokens: i32,
    pub cost: f64,
}

/// Something a person did to a run besides queueing a loop: a resolution or an abort.
#[derive(Debug, Clone, PartialEq, Queryable, Selectable)]
#[diesel(table_name = run_actions, check_for_backend(diesel::sqlite::Sqlite, diesel::pg::Pg))]
pub(crate) struct RunActionRow {
    pub id: i64,
    pub run_id: RunId,
    /// The loop it concerned: the one whose proposal was resolved, or the one aborted.
    pub loop_id: Option<LoopId>,
    /// `None`: the operator.
    pub person: Option<String>,
    pub action: RunAction,
    /// The resolved proposal.
    pub path: Option<String>,
    /// `YYYY-MM-DD HH:MM:SS` UTC.
    pub created_at: String,
}

/// Insert form for [`RunActionRow`].
#[derive(Debug, Clone, Insertable)]
#[diesel(table_name = run_actions)]
pub struct RunActionForm {
    pub run_id: RunId,
    pub loop_id: Option<LoopId>,
    pub person: Option<String>,
    pub action: RunAction,
    pub path: Option<String>,
}
