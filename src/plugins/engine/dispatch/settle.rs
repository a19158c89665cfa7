//! The turn's status signal and progress flags, decided after every command ran.

use crate::db::enums::EntryStatus;
use crate::db::queries::entries;
use crate::parser::Command;
use crate::plugins::engine::dispatch::{CallRecord, DispatchOutcome, TurnFlags};
use crate::plugins::tool::{ToolEffect, ToolError, ToolScope};
use crate::plugins::Plugins;

pub(super) fn flags(calls: &[CallRecord], plugins: &Plugins) -> TurnFlags {
    let any = |effect: ToolEffect| {
        calls.iter().any(|call| {
            plugins
                .get(&call.tool)
                .is_some_and(|tool| tool.effect() == effect)
        })
    };
    TurnFlags {
        has_act: any(ToolEffect::Changes),
        has_reads: any(ToolEffect::Reads),
        has_writes: calls.iter().any(|call| call.is_write),
    }
}

/// Decides the turn's status signal: update wins over summarize; a summarize in a turn
/// with failures is overridden (409) and becomes the update; neither asks for healing.
pub(super) fn settle_status(
    scope: &mut ToolScope<'_>,
    commands: &[Command],
    outcome: &mut DispatchOutcome,
) -> Result<(), ToolError> {
    let summary = commands.iter().find_map(|command| match command {
        Command::Summarize(text) => Some((command.name(), non_blank(text)?)),
        _ => None,
    });
    let update = commands.iter().find_map(|command| match command {
        Command::Update(text) => non_blank(text),
        _ => None,
    });
    match (summary, update) {
        (_, Some(update)) => outcome.update_text = Some(update),
        (Some((tool, summary)), None) if !outcome.errors.is_empty() => {
            let path = crate::db::paths::slug_path(tool, &summary);
            let body = format!(
                "{summary}\n(Not accepted: actions in this turn failed. YOU MUST fix them and \
                 use <update> until the task is really done.)"
            );
            if entries::get_entry(scope.conn, scope.run_id, &path)?.is_some() {
                entries::resolve_entry(
                    scope.conn,
                    scope.run_id,
                    &path,
                    EntryStatus::Conflict,
                    Some(&body),
                )?;
            }
            outcome.update_text = Some(summary);
        }
        (Some((_, summary)), None) => outcome.summary_text = Some(summary),
        (None, None) => outcome.needs_healing = true,
    }
    Ok(())
}

/// The trimmed text, unless it is blank.
fn non_blank(text: &str) -> Option<String> {
    Some(text.trim().to_owned()).filter(|text| !text.is_empty())
}
