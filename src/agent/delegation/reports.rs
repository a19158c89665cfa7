//! The reports of the children a reply's `<delegate>`s ran before its unit of work (the
//! tool's gather half), taken by the handler.

use crate::agent::delegation::task::Task;
use crate::db::enums::EntryStatus;
use crate::plugins::gather::Keyed;

/// What a child came to, as the parent's result entry says it.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Report {
    /// 200 with the child's summary; a failure status with why.
    pub status: EntryStatus,
    pub body: String,
    /// The child run's alias (none when no child was made).
    pub child: Option<String>,
}

/// The reports of one reply's children, by task.
pub(super) type Reports = Keyed<Task, Report>;
