//! The *announce* stage the verbs share: what a verb did, and who did it, told to every
//! client of the run's project as `run/action`, numbered and written in the verb's own unit
//! of work, so that it is told exactly when what it tells of is stored, and never when that
//! unit fails.

use crate::db::models::run::RunRow;
use crate::db::queries::run_events::EventBounds;
use crate::db::{Conn, DbError};
use crate::hub;
use crate::hub::notifications::{Act, Notification, RunActed};

/// `act` of `by` on `run`, with nothing more to say yet.
pub(crate) fn acted(run: &RunRow, act: Act, by: Option<String>) -> RunActed {
    RunActed {
        run: run.alias.clone(),
        action: act,
        by,
        path: None,
        status: None,
        withdrawn: Vec::new(),
        cancelled: Vec::new(),
        message: None,
        rule: None,
    }
}

/// Tells `acted` of `run` in the unit of work `conn` runs.
pub(crate) fn announce(
    conn: &mut Conn,
    bounds: &EventBounds,
    run: &RunRow,
    acted: RunActed,
) -> Result<(), DbError> {
    hub::append(
        conn,
        bounds,
        run.project_id,
        run.id,
        &Notification::Action(acted),
    )
}
