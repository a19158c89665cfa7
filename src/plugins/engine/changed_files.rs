//! What an accepted proposal changed in the project's files, for `run/changes` and
//! `run/revert`: the files it names (`file` of an edit, `path` of a removal, `from` and `to`
//! of a move or a copy) read before its tool's acceptance and again after, and each that
//! changed recorded (`file_changes`) in the resolution's unit of work with the proposal,
//! its loop and turn, and who accepted it. Read from the disk where the server applies the
//! changes (`RUMMY_APPLY_EDITS=server`), else from the store's copy, which the acceptance
//! updates either way; a file that cannot be read (not text) is left out.

use std::path::Path;

use serde_json::Value;

use crate::db::ids::RunId;
use crate::db::models::entry::EntryRow;
use crate::db::paths::is_file;
use crate::db::queries::entries;
use crate::db::queries::file_changes::{self, FileChangeForm};
use crate::db::Conn;
use crate::plugins::bundled::tools::files;
use crate::plugins::tool::ToolError;

/// The attributes of a proposal that name a file it may change.
const NAMING: [&str; 4] = ["file", "path", "from", "to"];

/// The files a proposal names, with their content before its acceptance.
pub(crate) struct Before {
    files: Vec<(String, Option<String>)>,
}

impl Before {
    /// Reads the files `proposal` names, as they are now.
    pub(crate) fn read(
        conn: &mut Conn,
        run: RunId,
        proposal: &EntryRow,
        disk_root: Option<&Path>,
    ) -> Result<Before, ToolError> {
        let mut named: Vec<String> = NAMING
            .iter()
            .filter_map(|key| proposal.attributes.get(*key).and_then(Value::as_str))
            .filter(|path| !path.is_empty() && is_file(path))
            .map(str::to_owned)
            .collect();
        named.dedup();
        let mut files = Vec::with_capacity(named.len());
        for file in named {
            if let Some(content) = content(conn, run, &file, disk_root)? {
                files.push((file, content));
            }
        }
        Ok(Before { files })
    }

    /// Records each file that changed since [`Before::read`], accepted by `person`.
    pub(crate) fn record(
        self,
        conn: &mut Conn,
        run: RunId,
        proposal: &EntryRow,
        disk_root: Option<&Path>,
        person: Option<&str>,
    ) -> Result<(), ToolError> {
        for (file, before) in self.files {
            let Some(after) = content(conn, run, &file, disk_root)? else {
                continue;
            };
            if after == before {
                continue;
            }
            file_changes::record(
                conn,
                &FileChangeForm {
                    run_id: run,
                    loop_id: proposal.loop_id,
                    turn: proposal.turn,
                    proposal: &proposal.path,
                    file: &file,
                    before: before.as_deref(),
                    after: after.as_deref(),
                    person,
                },
            )?;
        }
        Ok(())
    }
}

/// The file's content (`Some(None)`: it does not exist); `None` when it cannot be read.
fn content(
    conn: &mut Conn,
    run: RunId,
    file: &str,
    disk_root: Option<&Path>,
) -> Result<Option<Option<String>>, ToolError> {
    match disk_root {
        Some(root) => Ok(files::read(root, file).ok()),
        None => Ok(Some(
            entries::get_entry(conn, run, file)?.map(|row| row.body),
        )),
    }
}
