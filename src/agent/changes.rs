//! What a run changed in its project's files, as `run/changes` tells it and `run/revert`
//! undoes it: the recorded changes (`file_changes`, one per file an accepted proposal
//! changed) combined per file — from its content before the first change in scope to its
//! content after the last, never a concatenation of the steps — with the line counts and a
//! unified diff of that whole change. The scope is the run, or one of its loops.

use serde::Serialize;
use similar::{ChangeTag, TextDiff};

use crate::db::ids::LoopId;
use crate::db::queries::file_changes::FileChangeRow;
use crate::hedberg::unified_diff;

/// How a file stands after the changes in scope.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum FileStatus {
    /// It did not exist before them.
    Added,
    Modified,
    /// It exists no more.
    Deleted,
}

/// One file's combined change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Combined {
    pub file: String,
    /// Its content before the first change in scope and after the last (`None`: absent).
    pub before: Option<String>,
    pub after: Option<String>,
    /// The turns of its changes, in order, and who accepted each (`None`: the operator).
    pub turns: Vec<i32>,
    pub by: Vec<Option<String>>,
}

impl Combined {
    /// How the file stands, `None` when the changes in scope leave it as it was.
    pub(crate) fn status(&self) -> Option<FileStatus> {
        match (&self.before, &self.after) {
            (before, after) if before == after => None,
            (None, _) => Some(FileStatus::Added),
            (_, None) => Some(FileStatus::Deleted),
            _ => Some(FileStatus::Modified),
        }
    }
}

/// The changes of `rows` (the run's, oldest first) in `scope` (a loop, or the whole run),
/// one per file in the order each was first changed; files they leave as they were are
/// left out.
pub(crate) fn combined(rows: &[FileChangeRow], scope: Option<LoopId>) -> Vec<Combined> {
    let mut files: Vec<Combined> = Vec::new();
    for row in rows
        .iter()
        .filter(|row| scope.is_none() || row.loop_id == scope)
    {
        match files.iter_mut().find(|file| file.file == row.file) {
            Some(file) => {
                file.after.clone_from(&row.after);
                file.turns.push(row.turn);
                file.by.push(row.person.clone());
            }
            None => files.push(Combined {
                file: row.file.clone(),
                before: row.before.clone(),
                after: row.after.clone(),
                turns: vec![row.turn],
                by: vec![row.person.clone()],
            }),
        }
    }
    files.retain(|file| file.status().is_some());
    files
}

/// One file of `run/changes`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct ChangedFile {
    pub path: String,
    pub status: FileStatus,
    /// Lines added and removed by the whole change.
    pub added: usize,
    pub removed: usize,
    /// The unified diff from its content before to after (`--- path`, `+++ path`, hunks).
    pub diff: String,
    /// The turns of its changes, and who accepted each (`null`: the operator).
    pub turns: Vec<i32>,
    pub by: Vec<Option<String>>,
}

impl ChangedFile {
    /// What `run/changes` says of `combined`, `None` when it changes nothing.
    pub(crate) fn of(combined: Combined) -> Option<ChangedFile> {
        let status = combined.status()?;
        let before = combined.before.as_deref().unwrap_or_default();
        let after = combined.after.as_deref().unwrap_or_default();
        let (added, removed) = counted(before, after);
        Some(ChangedFile {
            diff: unified_diff(&combined.file, before, after),
            path: combined.file,
            status,
            added,
            removed,
            turns: combined.turns,
            by: combined.by,
        })
    }
}

/// The lines added and removed from `before` to `after`.
fn counted(before: &str, after: &str) -> (usize, usize) {
    let diff = TextDiff::from_lines(before, after);
    diff.iter_all_changes()
        .fold((0, 0), |(added, removed), change| match change.tag() {
            ChangeTag::Insert => (added + 1, removed),
            ChangeTag::Delete => (added, removed + 1),
            ChangeTag::Equal => (added, removed),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(
        loop_id: i64,
        turn: i32,
        file: &str,
        before: Option<&str>,
        after: Option<&str>,
    ) -> FileChangeRow {
        FileChangeRow {
            id: 0,
            loop_id: Some(LoopId(loop_id)),
            turn,
            proposal: format!("set://{file}"),
            file: file.into(),
            before: before.map(Into::into),
            after: after.map(Into::into),
            person: Some("bo".into()),
            created_at: String::new(),
        }
    }

    #[test]
    fn a_file_changed_twice_is_one_change_from_its_first_content_to_its_last() {
        let rows = [
            row(1, 1, "a.txt", Some("one\n"), Some("two\n")),
            row(1, 2, "b.txt", None, Some("new\n")),
            row(2, 3, "a.txt", Some("two\n"), Some("three\nfour\n")),
            row(2, 4, "c.txt", Some("gone\n"), None),
            row(2, 5, "d.txt", Some("x\n"), Some("y\n")),
            row(2, 6, "d.txt", Some("y\n"), Some("x\n")),
        ];
        let overall = combined(&rows, None);
        let seen: Vec<_> = overall
            .iter()
            .map(|file| (file.file.as_str(), file.status(), file.turns.clone()))
            .collect();
        assert_eq!(
            seen,
            [
                ("a.txt", Some(FileStatus::Modified), vec![1, 3]),
                ("b.txt", Some(FileStatus::Added), vec![2]),
                ("c.txt", Some(FileStatus::Deleted), vec![4]),
            ]
        );
        let a = ChangedFile::of(overall[0].clone()).unwrap();
        assert_eq!((a.added, a.removed), (2, 1));
        assert!(a.diff.contains("-one\n+three\n+four\n"), "{}", a.diff);
        let second = combined(&rows, Some(LoopId(2)));
        assert_eq!(second[0].before.as_deref(), Some("two\n"));
        assert_eq!(second.len(), 2, "d.txt went back as it was");
    }
}
