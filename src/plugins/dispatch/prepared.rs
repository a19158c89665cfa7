//! The work a reply's commands need, done beside the writer before the unit of work that
//! runs them: body searches (looked up by `hedsearch`), `<set>` edits (looked up by the
//! set tool), and the [`Answers`] from outside the store (the web's, looked up by `search`
//! and `get`; MCP servers', by their tools). Whatever is not prepared (a failure, a spent
//! budget, a body changed by an earlier command) the writer computes under its own small
//! budget.

use crate::db::Conn;

use crate::db::functions::{self, SearchVerdicts};
use crate::db::ids::RunId;
use crate::db::DbError;
use crate::hedberg::{EditBlock, SetRevision};
use crate::parser::Command;
use crate::plugins::answers::Answers;
use crate::plugins::tool::ToolError;
use crate::plugins::tools::select_in;
use crate::plugins::tools::set::prepared::PreparedEdits;

/// Searches and edits computed ahead of a unit of work.
#[derive(Debug, Default)]
pub struct PreparedWork {
    searches: SearchVerdicts,
    edits: PreparedEdits,
    answers: Answers,
}

impl PreparedWork {
    /// Whether `command` has work to prepare.
    pub fn needed_for(command: &Command) -> bool {
        command.body_search().is_some() || edit_of(command).is_some()
    }

    /// Evaluates the body searches and applies the edits of `commands` to the run's entries
    /// as they are now, on `conn` (a reader) under the thread's budget.
    pub fn compute(
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
            answers: Answers::default(),
        })
    }

    /// This work with `answers` from outside the store (in place of any of the same kind).
    pub fn answering<A: std::any::Any + Send>(self, answers: A) -> PreparedWork {
        PreparedWork {
            answers: self.answers.with(answers),
            ..self
        }
    }

    /// Runs `work` with this work answering the searches, edits and requests it covers.
    pub fn apply<T>(self, work: impl FnOnce() -> T) -> T {
        let PreparedWork {
            searches,
            edits,
            answers,
        } = self;
        functions::with_prepared(searches, || answers.apply(|| edits.apply(work)))
    }
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
