//! The work a reply's commands need, done beside the writer before the unit of work that
//! runs them: body searches (looked up by `db::functions::body_search`), `<set>` edits
//! (looked up by the set tool), and what the tools' gather halves obtain from outside the
//! store ([`gather`]), handed to the handlers in their scope. Whatever is not prepared (a
//! failure, a spent budget, a body changed by an earlier command) the writer computes under
//! its own small budget.

use futures_util::future::join_all;

use crate::db::Conn;

use crate::db::functions::{self, SearchVerdicts};
use crate::db::ids::RunId;
use crate::db::DbError;
use crate::hedberg::{EditBlock, SetRevision};
use crate::parser::Command;
use crate::plugins::bundled::tools::select_in;
use crate::plugins::bundled::tools::set::prepared::PreparedEdits;
use crate::plugins::gather::{Gathered, Gathering};
use crate::plugins::tool::{Availability, Tool, ToolError};
use crate::plugins::Plugins;

/// Searches, edits and what the gather halves obtained, ahead of a unit of work.
#[derive(Debug, Default)]
pub(crate) struct PreparedWork {
    searches: SearchVerdicts,
    edits: PreparedEdits,
    gathered: Gathered,
}

impl PreparedWork {
    /// Whether `command` has work to prepare.
    pub(crate) fn needed_for(command: &Command) -> bool {
        command.body_search().is_some() || edit_of(command).is_some()
    }

    /// Evaluates the body searches and applies the edits of `commands` to the run's entries
    /// as they are now, on `conn` (a reader) under the thread's budget.
    pub(crate) fn compute(
        conn: &mut Conn,
        run_id: RunId,
        commands: &[Command],
    ) -> Result<PreparedWork, DbError> {
        let mut edits = PreparedEdits::default();
        let (outcome, searches) = functions::recording(|| {
            for (path, filter) in commands.iter().filter_map(Command::body_search) {
                selected(select_in(conn, run_id, path, Some(filter)))?;
            }
            for edit in commands.iter().filter_map(edit_of) {
                let Some(rows) = selected(select_in(conn, run_id, edit.path, edit.filter))? else {
                    return Ok(());
                };
                for row in rows {
                    if !edits.prepare(&row.path, &row.body, edit.blocks) {
                        return Ok(());
                    }
                }
            }
            Ok(())
        });
        outcome.map(|()| PreparedWork {
            searches,
            edits,
            gathered: Gathered::default(),
        })
    }

    /// This work with what the gather halves obtained (in place of any it had).
    pub(crate) fn with_gathered(self, gathered: Gathered) -> PreparedWork {
        PreparedWork { gathered, ..self }
    }

    /// Runs `work` with this work answering the searches and edits it covers; `work` hands
    /// what was gathered to the handlers' scope.
    pub(crate) fn apply<T>(self, work: impl FnOnce(&mut Gathered) -> T) -> T {
        let PreparedWork {
            searches,
            edits,
            mut gathered,
        } = self;
        functions::with_prepared(searches, || edits.apply(|| work(&mut gathered)))
    }
}

/// Runs the gather halves of the tools `commands` use, all at once: each tool offered under
/// `at.policy` is given its commands the policy allows, in reply order.
pub(crate) async fn gather(
    plugins: &Plugins,
    at: &Gathering<'_>,
    commands: &[Command],
) -> Gathered {
    let mut by_tool: Vec<(&dyn Tool, Vec<&Command>)> = Vec::new();
    for command in commands {
        let Some(tool) = plugins.get(command.name()) else {
            continue;
        };
        let allowed = tool.availability(at.policy) == Availability::Offered
            && tool.forbids(command, at.policy).is_none();
        if !allowed {
            continue;
        }
        match by_tool
            .iter_mut()
            .find(|(its, _)| its.name() == tool.name())
        {
            Some((_, its_commands)) => its_commands.push(command),
            None => by_tool.push((tool, vec![command])),
        }
    }
    let halves = by_tool.iter().filter_map(|(tool, its_commands)| {
        let half = tool.gather(at, its_commands)?;
        Some(async move { (tool.name(), half.run().await) })
    });
    join_all(halves)
        .await
        .into_iter()
        .fold(Gathered::default(), |gathered, (tool, obtained)| {
            gathered.with(tool, obtained)
        })
}

/// The rows, `None` when the budget ran out selecting them.
fn selected<T>(selection: Result<T, ToolError>) -> Result<Option<T>, DbError> {
    match selection {
        Ok(rows) => Ok(Some(rows)),
        Err(ToolError::WorkLimit(_)) => Ok(None),
        Err(ToolError::Db(error)) => Err(error),
        Err(other) => Err(DbError::Internal(other.to_string())),
    }
}

/// A `<set>` that edits entries: the blocks to apply to each entry it selects.
struct EntryEdit<'c> {
    /// Path pattern.
    path: &'c str,
    filter: Option<&'c str>,
    blocks: &'c [EditBlock],
}

/// The entry edit of `command`, if it is one.
fn edit_of(command: &Command) -> Option<EntryEdit<'_>> {
    let Command::Set(set) = command else {
        return None;
    };
    if set.preview {
        return None;
    }
    let path = set
        .path
        .as_deref()
        .map(str::trim)
        .filter(|path| !path.is_empty())?;
    let filter = set.filter.as_deref().filter(|filter| !filter.is_empty());
    let blocks = match &set.operation {
        SetRevision::Blocks(blocks) => blocks.as_slice(),
        SetRevision::Replace(block) => std::slice::from_ref(block),
        SetRevision::Write(_) => return None,
    };
    Some(EntryEdit {
        path,
        filter,
        blocks,
    })
}
