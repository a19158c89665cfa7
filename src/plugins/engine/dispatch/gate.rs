//! The write gate: how much a command grows what the model sees, checked against a budget
//! (a [`WriteGate`]: the budget's `BudgetGuard`, or `PanicGate` in a panic loop). Each command runs in a savepoint;
//! when the gate refuses its growth, everything the command wrote is rolled back and the
//! caller records a 413 with the gate's message instead.

use diesel::prelude::*;

use crate::budget::{WriteGate, WriteIntent};
use crate::db::enums::{EntryStatus, Fidelity};
use crate::db::queries::context;
use crate::plugins::tool::{Handled, ToolError, ToolScope};

/// Why a gated command did not commit.
pub(super) enum Refusal {
    Tool(ToolError),
    /// The gate refused the command's growth; the message is for the model.
    Gate(String),
}

impl From<diesel::result::Error> for Refusal {
    fn from(error: diesel::result::Error) -> Self {
        Refusal::Tool(ToolError::from(error))
    }
}

impl From<ToolError> for Refusal {
    fn from(error: ToolError) -> Self {
        Refusal::Tool(error)
    }
}

/// Runs one command; with a gate, in a savepoint that is rolled back when the gate refuses
/// the command's growth ([`Refusal::Gate`]).
pub(super) fn gated(
    gate: Option<&mut (dyn WriteGate + '_)>,
    scope: &mut ToolScope<'_>,
    run: impl FnOnce(&mut ToolScope<'_>) -> Result<Option<Handled>, ToolError>,
) -> Result<Option<Handled>, Refusal> {
    let Some(gate) = gate else {
        return Ok(run(scope)?);
    };
    let before = context::visible_tokens(scope.conn, scope.run_id).map_err(ToolError::from)?;
    let (run_id, loop_id, turn, policy, root, settings, readonly) = (
        scope.run_id,
        scope.loop_id,
        scope.turn,
        scope.policy,
        scope.project_root,
        scope.settings,
        scope.readonly,
    );
    let gathered = &mut *scope.gathered;
    scope.conn.transaction::<_, Refusal, _>(|conn| {
        let mut inner = ToolScope {
            conn,
            run_id,
            loop_id,
            turn,
            policy,
            project_root: root,
            settings,
            disk_root: None,
            readonly,
            gathered,
        };
        let handled = run(&mut inner)?;
        let status = match &handled {
            Some(handled) => {
                crate::db::queries::entries::get_entry(inner.conn, run_id, &handled.path)
                    .map_err(ToolError::from)?
                    .map_or(EntryStatus::Ok, |row| row.status)
            }
            None => EntryStatus::Ok,
        };
        let after = context::visible_tokens(inner.conn, run_id).map_err(ToolError::from)?;
        let write = WriteIntent {
            tokens_delta: after - before,
            status,
            fidelity: Fidelity::Full,
            is_audit: false,
        };
        gate.admit(&write).map_err(Refusal::Gate)?;
        Ok(handled)
    })
}
