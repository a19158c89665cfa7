//! `<delegate path="…">sub-task</delegate>`: the result entry
//! `delegate://turn_N/<sub-task>` holds the child's summary (200) or why it failed
//! (attributes `run`, the child's alias, and `context`, the paths passed). The paths are
//! the `path` attribute because the parser heals any first unknown attribute into `path`. Offered to loops whose run may
//! still delegate (`ToolPolicy::subagents`), never in panic mode; the child itself runs in
//! the tool's gather half, before the reply's unit of work ([`crate::agent::delegation`]).

use std::borrow::Cow;

use serde_json::json;

use crate::agent::delegation::reports::Reports;
use crate::agent::delegation::task::{Task, NAME};
use crate::agent::delegation::{perform, ParentTurn};
use crate::agent::loop_config::LoopConfig;
use crate::agent::AgentContext;
use crate::context::view::EntryView;
use crate::db::enums::{EntryStatus, LoopMode};
use crate::parser::{Command, TagSpec, TaggedText};
use crate::plugins::gather::{Gather, Gathering};
use crate::plugins::policy::ToolPolicy;
use crate::plugins::tool::{
    Availability, ClientCall, Handled, TargetKind, ToolEffect, ToolError, ToolInfo, ToolScope,
    TypedTool,
};
use crate::plugins::writes::finish;

const DOC: &str = include_str!("../../plugins/text/tools/delegate.md");

/// Whether a loop under `policy` may delegate: its run is not too deep, it is no panic loop
/// (which only frees room), and its window has room for the optional tools.
fn offered(policy: &ToolPolicy) -> bool {
    policy.subagents && policy.optional_tools && policy.mode != LoopMode::Panic
}

/// The `<delegate>` tool: its gather half runs the children, its handler records their
/// [`Reports`].
pub(super) struct DelegateTool;

impl ToolInfo for DelegateTool {
    fn name(&self) -> &'static str {
        NAME
    }

    fn availability(&self, policy: &ToolPolicy) -> Availability {
        if offered(policy) {
            Availability::Offered
        } else {
            Availability::Excluded
        }
    }

    fn excluded_because(&self, policy: &ToolPolicy) -> Option<&'static str> {
        (!policy.subagents).then_some(
            "this run is a sub-agent as deep as sub-agents may nest (RUMMY_SUBAGENT_MAX_DEPTH)",
        )
    }

    fn effect(&self) -> ToolEffect {
        ToolEffect::Reads
    }

    fn tag(&self) -> TagSpec {
        TagSpec {
            main_field: "body",
            attributes: &["body", "path"],
        }
    }

    fn doc(&self) -> &'static str {
        DOC
    }

    fn full_view(&self, entry: &EntryView<'_>) -> String {
        let child = entry.attribute("run").unwrap_or_default();
        format!("# delegate {child}\n{}", entry.body)
    }

    fn summary_view(&self, entry: &EntryView<'_>) -> String {
        entry.attribute("run").unwrap_or_default().to_owned()
    }

    fn command_from_call(&self, call: &ClientCall) -> Command {
        Command::Other {
            name: NAME.to_owned(),
            content: TaggedText {
                body: call.path.clone(),
                attributes: Vec::new(),
            },
        }
    }

    fn target_kind(&self) -> TargetKind {
        TargetKind::Text
    }
}

impl TypedTool for DelegateTool {
    type Input = Task;

    fn input<'c>(&self, command: &'c Command) -> Option<Cow<'c, Task>> {
        Task::of(command).map(Cow::Owned)
    }

    fn target(&self, task: &Task) -> String {
        task.text.clone()
    }

    /// Runs the child of each task with a text, in order (a loop's replies only).
    fn gather<'a>(
        &'a self,
        at: &'a Gathering<'a>,
        inputs: Vec<Cow<'a, Task>>,
    ) -> Option<Gather<'a>> {
        let agent = at.agent.downcast_ref::<AgentContext>()?;
        let loop_row = at.loop_row?;
        let tasks: Vec<Task> = inputs
            .into_iter()
            .map(Cow::into_owned)
            .filter(|task| !task.text.is_empty())
            .collect();
        (!tasks.is_empty()).then(|| {
            Gather::of(async move {
                let config = LoopConfig::of(&loop_row.config);
                let parent = ParentTurn {
                    loop_row,
                    config: &config,
                };
                perform(agent, parent, tasks, at.cancel).await
            })
        })
    }

    fn handle(
        &self,
        scope: &mut ToolScope<'_>,
        task: &Task,
        result_path: &str,
    ) -> Result<Handled, ToolError> {
        if task.text.is_empty() {
            let message = "a <delegate> needs its sub-task as its body";
            return finish(
                scope,
                result_path,
                EntryStatus::BadRequest,
                message,
                Some(json!({ "error": message })),
            );
        }
        let report = scope
            .gathered::<Reports>(NAME)
            .and_then(|reports| reports.take(task));
        let (status, body, child) = match report {
            Some(report) => (report.status, report.body, report.child),
            None => (
                EntryStatus::Failed,
                "sub-agents run from a loop's replies only".to_owned(),
                None,
            ),
        };
        let mut attributes = json!({ "context": task.context.join(" ") });
        if let Some(child) = child {
            attributes["run"] = json!(child);
        }
        if status.is_failure() {
            attributes["error"] = json!(body);
        }
        finish(scope, result_path, status, &body, Some(attributes))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offered_while_the_run_may_delegate_and_never_in_panic_mode() {
        let tool = DelegateTool;
        assert_eq!(tool.availability(&ToolPolicy::act()), Availability::Offered);
        let deep = ToolPolicy {
            subagents: false,
            ..ToolPolicy::act()
        };
        assert_eq!(tool.availability(&deep), Availability::Excluded);
        assert!(tool.excluded_because(&deep).is_some());
        let panic = ToolPolicy {
            mode: LoopMode::Panic,
            ..ToolPolicy::act()
        };
        assert_eq!(tool.availability(&panic), Availability::Excluded);
    }
}
