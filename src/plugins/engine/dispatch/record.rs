//! Phase 1 of dispatch: every command is recorded in response order. Lifecycle signals are
//! written now; actions get their result entry (or a 403/400 refusal) and wait for phase 2.

use serde_json::{json, Value};

use super::gate::{gated, Refusal};
use super::messages::{excluded_message, invalid_target};
use super::{collect_error, note_call, status_at, DispatchOutcome, Dispatcher};
use crate::db::enums::EntryStatus;
use crate::db::paths::result_path;
use crate::hedberg::SetRevision;
use crate::parser::{Command, KnownCommand};
use crate::plugins::bundled::tools::files::escape_reason;
use crate::plugins::filters::Refusal as FilterRefusal;
use crate::plugins::tool::{
    Availability, Handled, TargetKind, Tool, ToolEffect, ToolError, ToolKind, ToolScope,
};
use crate::plugins::writes::write;
use crate::plugins::Plugins;

/// Most characters of a target kept in a result path; percent-encoding may grow them
/// twelvefold and paths are limited to 2048 bytes.
const PATH_TARGET_MAX_CHARS: usize = 120;

/// An action after recording: ready to run, or already refused.
pub(super) enum Recorded<'a> {
    Ready {
        index: usize,
        tool: &'a dyn Tool,
        command: &'a Command,
        path: String,
    },
    Refused {
        name: String,
        path: String,
    },
}

impl<'p> Dispatcher<'p, '_> {
    /// `<tool>://turn_N/<target>`, suffixed when taken.
    /// The target is cut to [`PATH_TARGET_MAX_CHARS`] (the whole is in the attributes).
    pub(super) fn fresh_path(
        &mut self,
        scope: &mut ToolScope<'_>,
        tool: &str,
        target: &str,
    ) -> Result<String, ToolError> {
        let target: String = target.chars().take(PATH_TARGET_MAX_CHARS).collect();
        let path = result_path(tool, scope.turn, &target);
        Ok(self.paths.free_path(scope.conn, scope.run_id, &path)?)
    }

    /// Phase 1 for one command: lifecycle signals are written; actions get their result
    /// entry (or their 403/400, or the status an `entry.recording` filter's `refusal`
    /// gives) and wait for phase 2.
    pub(super) fn record<'a>(
        &mut self,
        scope: &mut ToolScope<'_>,
        index: usize,
        command: &'a Command,
        refusal: Option<&FilterRefusal>,
        outcome: &mut DispatchOutcome,
    ) -> Result<Option<Recorded<'a>>, ToolError>
    where
        'p: 'a,
    {
        let name = command.name().to_owned();
        let plugins: &'p Plugins = self.plugins;
        // The parser recognises the registered tools' tags only.
        let tool = plugins
            .get(&name)
            .ok_or_else(|| ToolError::UnknownTool(name.clone()))?;
        let is_action = tool.kind() == ToolKind::Action;
        let refusal = match tool.availability(&scope.policy) {
            Availability::Excluded => Some((
                EntryStatus::Forbidden,
                excluded_message(tool, &scope.policy),
            )),
            _ => tool
                .forbids(command, &scope.policy)
                .map(|message| (EntryStatus::Forbidden, message))
                .or_else(|| refusal.map(|refusal| (refusal.status(), refusal.message.clone()))),
        };
        if let Some((status, message)) = refusal {
            let path = self.fresh_path(scope, &name, &tool.target(command))?;
            return refused(
                scope,
                outcome,
                index,
                command,
                path,
                (status, &message),
                is_action,
            );
        }
        match tool.kind() {
            ToolKind::Lifecycle => {
                self.record_lifecycle(scope, index, tool, command, outcome)?;
                Ok(None)
            }
            ToolKind::Reasoning => {
                let path = self.fresh_path(scope, &name, "")?;
                write(scope, &path, &free_text(command), EntryStatus::Ok, None)?;
                note_call(outcome, index, command, &path, EntryStatus::Ok, false);
                Ok(None)
            }
            ToolKind::Action => self.record_action(scope, index, tool, command, outcome),
        }
    }

    /// Writes a lifecycle signal's entry behind the gate (a status signal never waits on
    /// it); a refused growth is a 413 entry.
    fn record_lifecycle(
        &mut self,
        scope: &mut ToolScope<'_>,
        index: usize,
        tool: &dyn Tool,
        command: &Command,
        outcome: &mut DispatchOutcome,
    ) -> Result<(), ToolError> {
        let run = |inner: &mut ToolScope<'_>| tool.record(inner, command);
        // Status signals end or continue the loop: they are never refused for budget, or a
        // loop near its ceiling could not finish.
        let gate = if tool.effect() == ToolEffect::Signals {
            None
        } else {
            self.gate.as_deref_mut()
        };
        let recorded = match gated(gate, scope, run) {
            Ok(handled) => handled,
            Err(Refusal::Tool(error)) => return Err(error),
            Err(Refusal::Gate(message)) => {
                let path = self.fresh_path(scope, tool.name(), "")?;
                let attributes = Some(json!({ "error": message }));
                write(scope, &path, &message, EntryStatus::TooLarge, attributes)?;
                Some(Handled::at(path))
            }
        };
        if let Some(handled) = recorded {
            let status = status_at(scope, &handled.path)?;
            note_call(outcome, index, command, &handled.path, status, false);
            if status.is_failure() {
                collect_error(scope, outcome, tool.name(), &handled.path, status)?;
            }
        }
        Ok(())
    }

    /// Gives an action its result entry, to run in phase 2; an invalid or escaping path
    /// target is refused with 400.
    fn record_action<'a>(
        &mut self,
        scope: &mut ToolScope<'_>,
        index: usize,
        tool: &'a dyn Tool,
        command: &'a Command,
        outcome: &mut DispatchOutcome,
    ) -> Result<Option<Recorded<'a>>, ToolError> {
        let name = tool.name();
        let target = tool.target(command);
        let names_a_path = tool.target_kind() == TargetKind::Path;
        if let Some(message) = invalid_target(&target).filter(|_| names_a_path) {
            let path = self.fresh_path(scope, name, "invalid")?;
            let refusal = (EntryStatus::BadRequest, message.as_str());
            return refused(scope, outcome, index, command, path, refusal, true);
        }
        let path = self.fresh_path(scope, name, &target)?;
        let escape = escape_reason(scope.project_root, target.trim());
        if let Some(reason) = escape.filter(|_| names_a_path) {
            let refusal = (EntryStatus::BadRequest, reason.as_str());
            return refused(scope, outcome, index, command, path, refusal, true);
        }
        let attributes = Some(recorded_attributes(command));
        write(scope, &path, "", EntryStatus::Ok, attributes)?;
        Ok(Some(Recorded::Ready {
            index,
            tool,
            command,
            path,
        }))
    }
}

/// Writes a refusal the model sees and, for an action, queues it as already failed.
fn refused<'a>(
    scope: &mut ToolScope<'_>,
    outcome: &mut DispatchOutcome,
    index: usize,
    command: &Command,
    path: String,
    (status, message): (EntryStatus, &str),
    is_action: bool,
) -> Result<Option<Recorded<'a>>, ToolError> {
    write(
        scope,
        &path,
        message,
        status,
        Some(json!({ "error": message })),
    )?;
    note_call(outcome, index, command, &path, status, is_action);
    let name = command.name().to_owned();
    if is_action {
        return Ok(Some(Recorded::Refused { name, path }));
    }
    collect_error(scope, outcome, &name, &path, status)?;
    Ok(None)
}

/// A `<set>` without a path is a fact.
pub(super) fn naked_set_as_known(command: &Command) -> Command {
    match command {
        Command::Set(set) if set.path.is_none() => match &set.operation {
            SetRevision::Write(body) => Command::Known(KnownCommand {
                path: None,
                body: body.clone(),
                attributes: set.attributes.clone(),
            }),
            _ => command.clone(),
        },
        _ => command.clone(),
    }
}

/// The body of a reasoning tag (`think`, `thought`, `mcp`), recorded as written.
fn free_text(command: &Command) -> String {
    match command {
        Command::Think(content) | Command::Other { content, .. } => content.body.clone(),
        _ => String::new(),
    }
}

/// The parsed fields of a command as its result entry's attributes.
fn recorded_attributes(command: &Command) -> Value {
    let mut json = command.to_json();
    if let Value::Object(fields) = &mut json {
        fields.remove("name");
    }
    json
}
