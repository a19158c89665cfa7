//! Contextual sub-agents (the plugin `subagents`): `<delegate>` hands a bounded sub-task
//! to a child run, and the child's summary comes back to the parent as the command's
//! result entry.
//!
//! The child is a real run of the parent's project (`runs.delegated_by` names the parent;
//! `parent_run_id` stays a fork's), with its own loop, `run/state` and `run/progress`: its
//! store starts with only the entries the parent passes (`path`), copied at full
//! fidelity, and its loop asks (no file changes), without the repository scan, questions or
//! proposals, under its own turn limit (`RUMMY_SUBAGENT_MAX_TURNS`); it may delegate in
//! turn only while it is less deep than `RUMMY_SUBAGENT_MAX_DEPTH`.
//!
//! A tool handler runs on the writer and never waits, so, as for MCP calls, the children of
//! a reply run before its unit of work, in the tool's gather half ([`perform`]), one after
//! the other, each through the [`RunRegistry`](crate::agent::RunRegistry) like any loop,
//! and their [`Reports`] go to that unit, where the handler records each. The child's loop is cancelled with the parent's
//! (aborting the parent aborts it). It runs under the parent's place among the bounds on
//! active loops: the parent's loop waits for it and runs nothing meanwhile, so the place is
//! lent, never taken twice, and a parent never waits for a place its own child holds.

mod child;
mod reports;
mod task;
mod tool;

use tokio_util::sync::CancellationToken;

use crate::agent::loop_config::LoopConfig;
use crate::agent::AgentContext;
use crate::db::models::run::LoopRow;
use crate::plugins::plugin::{Plugin, Registrar};
use reports::{Report, Reports};
use task::Task;
use tool::DelegateTool;

/// What one parent loop's reply hands its children.
struct ParentTurn<'a> {
    /// The parent's loop.
    pub loop_row: &'a LoopRow,
    /// Its flags (the child's are derived from them).
    pub config: &'a LoopConfig,
}

/// Runs the child of each of `tasks` (one reply of `parent`'s), in order, and reports what
/// each came to; an abort (`cancel`, which cancels the children too) stops them.
async fn perform(
    agent: &AgentContext,
    parent: ParentTurn<'_>,
    tasks: Vec<Task>,
    cancel: &CancellationToken,
) -> Reports {
    let mut reports = Reports::default();
    for task in tasks {
        let report = child::run(agent, &parent, &task, cancel).await;
        if cancel.is_cancelled() {
            break;
        }
        reports.put(task, report);
    }
    reports
}

/// The sub-agents as a plugin (`subagents`: disabling it offers no `<delegate>`).
pub(crate) struct Subagents;

impl Plugin for Subagents {
    fn name(&self) -> &'static str {
        "subagents"
    }

    fn register(self: Box<Self>, registrar: &mut Registrar<'_>) {
        registrar.tool(DelegateTool);
    }
}
