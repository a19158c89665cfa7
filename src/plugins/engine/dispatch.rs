//! Dispatch: record every command of one response, then run it (AGENT §2.6–2.7 with
//! this project's decisions).
//!
//! Lifecycle signals (`known`, `unknown`, `summarize`, `update`) are written first and never
//! cancelled. Actions run in response order; the first that leaves a proposal (202) or
//! fails (4xx/5xx) stops the rest, which are recorded as 409 (a further edit of a file
//! whose proposal is pending joins that proposal instead; see
//! [`Tool::amends`]). Each action's status is read
//! back at the normalised path its handler reports, so a stop really stops. Tools the loop
//! may not use are recorded as 403, invalid or escaping paths as 400, each with a message
//! the model sees. A `<summarize>` in a turn whose actions failed becomes an update.
//!
//! Everything runs on the DB writer thread over one connection inside one transaction
//! (a savepoint when the caller already opened one). Client tool calls (the RPC
//! tool-dispatch methods) go through the same chain with [`dispatch_call`]. The
//! `entry.recording` filters run before, off the writer ([`recordables`]): a filter may be
//! a plugin process, asked over a pipe; a command one refuses is recorded with its status.

mod gate;
mod messages;
mod outcome;
mod prepared;
mod record;
mod settle;

use std::path::PathBuf;

use crate::db::Conn;
use diesel::Connection;
use serde_json::json;

pub(crate) use outcome::{CallError, CallRecord, DispatchOutcome, TurnFlags};

use crate::budget::WriteGate;
use crate::db::enums::EntryStatus;
use crate::db::ids::{LoopId, RunId};
use crate::db::queries::entries::FreePaths;
use crate::db::queries::{entries, runs};
use crate::hedberg::SetRevision;
use crate::parser::Command;
use crate::plugins::bundled::tools::files::escape_reason;
use crate::plugins::engine::readonly::ReadonlyFiles;
use crate::plugins::events::{Event, Hook};
use crate::plugins::filters::{EntryRecording, Recordable, Recording};
use crate::plugins::gather::Gathered;
use crate::plugins::policy::ToolPolicy;
use crate::plugins::tool::{ClientCall, TargetKind, Tool, ToolError, ToolScope};
use crate::plugins::writes::write;
use crate::plugins::Plugins;
use gate::{gated, Refusal};
use messages::cancel;
pub(crate) use prepared::{gather, PreparedWork};
use record::{naked_set_as_known, Recorded};
use settle::{flags, settle_status};

/// The turn one response belongs to.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ResponseTurn {
    pub run_id: RunId,
    pub loop_id: Option<LoopId>,
    /// The run-wide turn number.
    pub turn: i32,
    /// Mode and flags of the loop.
    pub policy: ToolPolicy,
    /// The project's source root.
    pub project_root: PathBuf,
}

/// One client tool call on a run.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct CallInput {
    pub run_id: RunId,
    /// What the client may use.
    pub policy: ToolPolicy,
    /// The project's source root.
    pub project_root: PathBuf,
    /// The tool (method) name.
    pub tool: String,
    /// Its params.
    pub call: ClientCall,
}

/// Records and runs the commands of one model response, with every command's growth of
/// the context checked by `gate` (the budget guard): a refused command is rolled back and
/// fails with 413.
pub(crate) fn dispatch_gated(
    conn: &mut Conn,
    plugins: &Plugins,
    input: &ResponseTurn,
    commands: &[Recordable],
    gathered: &mut Gathered,
    gate: Option<&mut dyn WriteGate>,
) -> Result<DispatchOutcome, ToolError> {
    conn.transaction(|conn| {
        let readonly = ReadonlyFiles::of_run(conn, input.run_id)?;
        let mut scope = ToolScope {
            conn,
            run_id: input.run_id,
            loop_id: input.loop_id,
            turn: input.turn,
            policy: input.policy,
            project_root: &input.project_root,
            settings: plugins.settings(),
            disk_root: None,
            readonly: &readonly,
            gathered: &mut *gathered,
        };
        Dispatcher {
            plugins,
            gate,
            paths: FreePaths::default(),
        }
        .run(&mut scope, commands)
    })
}

/// Runs one client tool call, `command` (the call as the tool's command, after the
/// `entry.recording` filters), through the same chain, at the run's next turn number, its
/// growth of the context checked by `gate` as a model command's is (a refused call is
/// rolled back and recorded as 413). Invalid params (no path, a file path outside the
/// project, an unknown tool) are errors.
pub(crate) fn dispatch_call(
    conn: &mut Conn,
    plugins: &Plugins,
    input: &CallInput,
    command: Recordable,
    gathered: &mut Gathered,
    gate: Option<&mut dyn WriteGate>,
) -> Result<DispatchOutcome, ToolError> {
    let tool = plugins
        .get(&input.tool)
        .ok_or_else(|| ToolError::UnknownTool(input.tool.clone()))?;
    if input.call.path.trim().is_empty() {
        return Err(ToolError::InvalidParams("path is required".into()));
    }
    // A command line or a question (`sh`, `env`, `ask_user`) is free text, not a path.
    if tool.target_kind() == TargetKind::Path {
        let named = [Some(input.call.path.as_str()), input.call.to.as_deref()];
        if let Some(reason) = named
            .into_iter()
            .flatten()
            .find_map(|path| escape_reason(&input.project_root, path))
        {
            return Err(ToolError::InvalidParams(reason));
        }
    }
    conn.transaction(|conn| {
        let run = runs::get_run(conn, input.run_id)?
            .ok_or_else(|| ToolError::InvalidParams(format!("run {} not found", input.run_id)))?;
        let readonly = ReadonlyFiles::of_run(conn, input.run_id)?;
        let mut scope = ToolScope {
            conn,
            run_id: input.run_id,
            loop_id: None,
            turn: run.next_turn,
            policy: input.policy,
            project_root: &input.project_root,
            settings: plugins.settings(),
            disk_root: None,
            readonly: &readonly,
            gathered: &mut *gathered,
        };
        Dispatcher {
            plugins,
            gate,
            paths: FreePaths::default(),
        }
        .run(&mut scope, std::slice::from_ref(&command))
    })
}

/// `commands` after the `entry.recording` filters, off the writer: each filter may rewrite
/// a command or refuse it. Only the first `RUMMY_MAX_COMMANDS` are filtered (dispatch
/// refuses the rest unrun); a rewrite into a command no tool takes is dropped (the
/// filter's bug must not fail the reply).
pub(crate) async fn recordables(
    plugins: &Plugins,
    commands: Vec<Command>,
    recording: Recording,
) -> Vec<Recordable> {
    let mut recordables: Vec<Recordable> = commands.into_iter().map(Recordable::new).collect();
    if !plugins.has_filters::<EntryRecording>() {
        return recordables;
    }
    let limit = plugins.settings().max_commands.max(1);
    for recordable in recordables.iter_mut().take(limit) {
        let mut filtered = recordable.clone();
        plugins
            .filter::<EntryRecording>(&mut filtered, &recording)
            .await;
        if plugins.get(filtered.command.name()).is_none() {
            tracing::warn!(
                tool = filtered.command.name(),
                "an entry.recording filter named no tool; the command is recorded as written"
            );
            filtered.command = recordable.command.clone();
        }
        *recordable = filtered;
    }
    recordables
}

/// The first action of a reply that left a proposal or failed: the actions after it are
/// cancelled with 409, except an edit amending its proposal.
struct Stopper {
    tool: String,
    status: EntryStatus,
    /// Its result path.
    path: String,
}

impl Stopper {
    /// Whether an action ending with `status` stops the actions after it.
    fn stops(status: EntryStatus) -> bool {
        status == EntryStatus::Proposed || status.is_failure()
    }

    /// Whether `command` of `tool` amends this stopper's proposal, and so still runs.
    fn is_amended_by(&self, tool: &dyn Tool, command: &Command) -> bool {
        self.status == EntryStatus::Proposed && tool.amends(command, &self.path)
    }
}

struct Dispatcher<'p, 'g> {
    plugins: &'p Plugins,
    gate: Option<&'g mut dyn WriteGate>,
    paths: FreePaths,
}

impl<'p> Dispatcher<'p, '_> {
    fn run(
        &mut self,
        scope: &mut ToolScope<'_>,
        recordables: &[Recordable],
    ) -> Result<DispatchOutcome, ToolError> {
        let limit = scope.settings.max_commands.max(1);
        let (recordables, dropped) = recordables.split_at(recordables.len().min(limit));
        let commands: Vec<Command> = recordables
            .iter()
            .map(|recordable| naked_set_as_known(&recordable.command))
            .collect();
        let mut outcome = DispatchOutcome::default();
        let mut actions = Vec::new();
        for (index, (command, recordable)) in commands.iter().zip(recordables).enumerate() {
            let refusal = recordable.refusal.as_ref();
            if let Some(action) = self.record(scope, index, command, refusal, &mut outcome)? {
                actions.push(action);
            }
        }
        if let Some(first) = dropped.first() {
            let total = commands.len() + dropped.len();
            self.refuse_the_rest(scope, first.command.name(), total, &mut outcome)?;
        }
        let mut stopped_by: Option<Stopper> = None;
        for action in actions {
            let (name, path, status) = match action {
                Recorded::Refused { name, path } => {
                    let status = status_at(scope, &path)?;
                    (name, path, status)
                }
                Recorded::Ready {
                    index,
                    tool,
                    command,
                    path,
                } => match &stopped_by {
                    Some(stopper) if !stopper.is_amended_by(tool, command) => {
                        cancel(scope, &path, &stopper.tool, stopper.status)?;
                        let status = EntryStatus::Conflict;
                        note_call(&mut outcome, index, command, &path, status, true);
                        (tool.name().to_owned(), path, status)
                    }
                    _ => {
                        let (handled, status) = self.execute(scope, tool, command, path)?;
                        note_call(&mut outcome, index, command, &handled, status, true);
                        (tool.name().to_owned(), handled, status)
                    }
                },
            };
            if stopped_by.is_none() && Stopper::stops(status) {
                stopped_by = Some(Stopper {
                    tool: name.clone(),
                    status,
                    path: path.clone(),
                });
            }
            if status.is_failure() {
                collect_error(scope, &mut outcome, &name, &path, status)?;
            }
        }
        complete_calls(&mut outcome, &commands);
        self.entries_created(scope, &outcome)?;
        settle_status(scope, &commands, &mut outcome)?;
        outcome.flags = flags(&outcome.calls, self.plugins);
        outcome.proposals = entries::unresolved(scope.conn, scope.run_id)?
            .into_iter()
            .filter(|row| row.turn == scope.turn)
            .collect();
        Ok(outcome)
    }
}

impl Dispatcher<'_, '_> {
    /// `entry.created` for each command's result entry still there, when someone observes
    /// it (the entries are read only then).
    fn entries_created(
        &self,
        scope: &mut ToolScope<'_>,
        outcome: &DispatchOutcome,
    ) -> Result<(), ToolError> {
        if !self.plugins.observes(Hook::EntryCreated) {
            return Ok(());
        }
        for call in outcome.calls.iter().filter(|call| !call.path.is_empty()) {
            let Some(row) = entries::get_entry(scope.conn, scope.run_id, &call.path)? else {
                continue;
            };
            self.plugins.emit(Event::EntryCreated {
                run: scope.run_id,
                turn: scope.turn,
                entry: self.plugins.event_entry(row.id, &call.path, row.turn),
                status: call.status,
            });
        }
        Ok(())
    }

    /// Runs one action whose result entry is at `path`, behind the gate: a refused growth
    /// is a 413, work past its budget a 422. Returns where its outcome lives and its status.
    fn execute(
        &mut self,
        scope: &mut ToolScope<'_>,
        tool: &dyn Tool,
        command: &Command,
        path: String,
    ) -> Result<(String, EntryStatus), ToolError> {
        self.plugins.emit(Event::ToolBefore {
            run: scope.run_id,
            turn: scope.turn,
            tool: tool.name(),
            path: &path,
        });
        let run = |inner: &mut ToolScope<'_>| tool.handle(inner, command, &path).map(Some);
        let refused = match gated(self.gate.as_deref_mut(), scope, run) {
            Ok(handled) => Ok(handled),
            Err(Refusal::Gate(message)) => Err((EntryStatus::TooLarge, message)),
            Err(Refusal::Tool(ToolError::WorkLimit(limit))) => Err((
                EntryStatus::Unprocessable,
                ToolError::WorkLimit(limit).to_string(),
            )),
            Err(Refusal::Tool(error)) => return Err(error),
        };
        let handled = match refused {
            Ok(handled) => handled.map_or(path, |handled| handled.path),
            Err((status, message)) => {
                let attributes = Some(json!({ "error": message }));
                write(scope, &path, &message, status, attributes)?;
                path
            }
        };
        let status = status_at(scope, &handled)?;
        self.plugins.emit(Event::ToolAfter {
            run: scope.run_id,
            turn: scope.turn,
            tool: tool.name(),
            path: &handled,
            status,
        });
        Ok((handled, status))
    }

    /// One 429 entry, at the first command past the limit, for all those that did not run:
    /// one reply may not hold the writer for thousands of commands.
    fn refuse_the_rest(
        &mut self,
        scope: &mut ToolScope<'_>,
        tool: &str,
        total: usize,
        outcome: &mut DispatchOutcome,
    ) -> Result<(), ToolError> {
        let limit = scope.settings.max_commands;
        let message = format!(
            "This reply holds {total} commands; only the first {limit} ran. Send at most \
             {limit} commands in one reply."
        );
        let path = self.fresh_path(scope, tool, "")?;
        write(
            scope,
            &path,
            &message,
            EntryStatus::TooManyCommands,
            Some(json!({ "error": message })),
        )?;
        outcome.errors.push(CallError {
            tool: tool.to_owned(),
            path,
            status: EntryStatus::TooManyCommands,
            message,
        });
        Ok(())
    }
}

/// One call record per command, in response order: commands that wrote nothing (an
/// empty fact or status) get a 204 record without a path.
fn complete_calls(outcome: &mut DispatchOutcome, commands: &[Command]) {
    outcome.calls.sort_by_key(|call| call.index);
    for (index, command) in commands.iter().enumerate() {
        if outcome
            .calls
            .get(index)
            .is_none_or(|call| call.index != index)
        {
            let placeholder = CallRecord {
                index,
                tool: command.name().to_owned(),
                path: String::new(),
                status: EntryStatus::NoContent,
                is_action: false,
                is_write: false,
                fingerprint: outcome::fingerprint(command),
            };
            outcome.calls.insert(index, placeholder);
        }
    }
}

/// The status of the entry at `path` (200 when a handler removed it).
fn status_at(scope: &mut ToolScope<'_>, path: &str) -> Result<EntryStatus, ToolError> {
    Ok(entries::get_entry(scope.conn, scope.run_id, path)?
        .map_or(EntryStatus::Ok, |row| row.status))
}

fn note_call(
    outcome: &mut DispatchOutcome,
    index: usize,
    command: &Command,
    path: &str,
    status: EntryStatus,
    is_action: bool,
) {
    let is_write = match command {
        Command::Known(_) | Command::Unknown(_) => true,
        Command::Set(set) => matches!(set.operation, SetRevision::Write(_)),
        _ => false,
    };
    outcome.calls.push(CallRecord {
        index,
        tool: command.name().to_owned(),
        path: path.to_owned(),
        status,
        is_action,
        is_write,
        fingerprint: outcome::fingerprint(command),
    });
}

fn collect_error(
    scope: &mut ToolScope<'_>,
    outcome: &mut DispatchOutcome,
    tool: &str,
    path: &str,
    status: EntryStatus,
) -> Result<(), ToolError> {
    let entry = entries::get_entry(scope.conn, scope.run_id, path)?;
    let message = entry
        .map(|row| match row.attributes.text("error") {
            Some(error) => error.to_owned(),
            None => row.body,
        })
        .unwrap_or_default();
    outcome.errors.push(CallError {
        tool: tool.to_owned(),
        path: path.to_owned(),
        status,
        message,
    });
    Ok(())
}

#[cfg(test)]
mod tests;
