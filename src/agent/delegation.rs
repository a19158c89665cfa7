//! Contextual sub-agents (the plugin `subagents`): `<delegate>` hands a bounded sub-task
//! to a child run, and the child's summary comes back to the parent as the command's
//! result entry.
//!
//! The child is a real run of the parent's project (`runs.delegated_by` names the parent;
//! `parent_run_id` stays a fork's), with its own loop, `run/state` and `run/progress`: its
//! store starts with only the entries the parent passes (`context`), copied at full
//! fidelity, and its loop asks (no file changes), without the repository scan, questions or
//! proposals, under its own turn limit (`RUMMY_SUBAGENT_MAX_TURNS`); it may delegate in
//! turn only while it is less deep than `RUMMY_SUBAGENT_MAX_DEPTH`.
//!
//! A tool handler runs on the writer and never waits, so, as for MCP calls, the children of
//! a reply run before its unit of work ([`Delegations::perform`], from `turn.rs`), one after
//! the other, each through the [`RunRegistry`](crate::agent::RunRegistry) like any loop, and
//! their outcomes wait in `outcomes` for the handler to record them. The child's loop is
//! cancelled with the parent's (aborting the parent aborts it). It runs under the parent's
//! place among the bounds on active loops: the parent's loop waits for it and runs nothing
//! meanwhile, so the place is lent, never taken twice, and a parent never waits for a place
//! its own child holds.

mod child;
mod outcomes;
mod tool;

use std::sync::Arc;

use tokio_util::sync::CancellationToken;

use crate::agent::loop_config::LoopConfig;
use crate::agent::AgentContext;
use crate::db::models::run::LoopRow;
use crate::parser::Command;
use crate::plugins::plugin::{Plugin, Registrar};
use crate::plugins::policy::ToolPolicy;
pub use outcomes::{Delegated, Report};
use outcomes::{Outcomes, TaskKey};
use tool::{offered, DelegateTool, Task};

/// The sub-agents' shared state: the outcomes of the children that ran, until their
/// handlers take them. Cheap to clone.
#[derive(Clone, Default)]
pub struct Delegations {
    outcomes: Arc<Outcomes>,
}

/// What one parent loop's reply hands its children.
pub struct ParentTurn<'a> {
    /// The parent's loop.
    pub loop_row: &'a LoopRow,
    /// Its flags (the child's are derived from them).
    pub config: &'a LoopConfig,
    /// The parent's turn.
    pub turn: i32,
    pub policy: &'a ToolPolicy,
}

impl Delegations {
    /// The plugin that offers `<delegate>`.
    pub fn plugin(&self) -> SubagentsPlugin {
        SubagentsPlugin(self.clone())
    }

    /// Runs the child of each `<delegate>` of `commands` (one reply of `parent`), in order;
    /// an abort (`cancel`, which cancels the children too) stops them.
    pub async fn perform(
        &self,
        agent: &AgentContext,
        parent: ParentTurn<'_>,
        commands: &[Command],
        cancel: &CancellationToken,
    ) -> Delegated {
        let mut delegated = Delegated::new(Arc::clone(&self.outcomes));
        if !offered(parent.policy) {
            return delegated;
        }
        for task in commands.iter().filter_map(Task::of) {
            if task.text.is_empty() {
                continue;
            }
            let report = child::run(agent, &parent, &task, cancel).await;
            if cancel.is_cancelled() {
                break;
            }
            let key = TaskKey {
                run: parent.loop_row.run_id,
                turn: parent.turn,
                task,
            };
            delegated.put(key, report);
        }
        delegated
    }
}

/// The sub-agents as a plugin (`subagents`: disabling it offers no `<delegate>`).
pub struct SubagentsPlugin(Delegations);

impl Plugin for SubagentsPlugin {
    fn name(&self) -> &'static str {
        "subagents"
    }

    fn register(self: Box<Self>, registrar: &mut Registrar<'_>) {
        registrar.tool(DelegateTool::new(Arc::clone(&self.0.outcomes)));
    }
}
