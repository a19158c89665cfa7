//! The record of every answered model call (`model_calls`): a run's turns, memory's sidecar
//! calls and a sub-agent's turns (under the sub-agent's run) alike. A caller says whom and
//! what a call is for ([`CallFor`]) with its request; the provider actor records the answer's
//! usage once, here, and no caller writes a record of its own. A call that failed, timed
//! out or was cancelled before its answer recorded nothing. A run's usage as clients see it
//! (`queries::usage::by_purpose`) counts its turns from their own rows, and its other calls
//! from here.

use crate::db::enums::CallPurpose;
use crate::db::ids::{LoopId, RunId};
use crate::db::models::run::ModelCallForm;
use crate::db::queries::usage;
use crate::db::DbHandle;

use super::chat::Usage;

/// Whom and what a model call is for, as the run's usage shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CallFor {
    pub run: RunId,
    /// The loop it was made in, when there is one.
    pub loop_id: Option<LoopId>,
    /// The turn it is (`Turn`), or the run's latest turn when it was made (0 before its
    /// first).
    pub turn: i32,
    /// `Turn`, `SessionNotes` or `Rerank` (a sub-agent's calls are its own run's turns).
    pub purpose: CallPurpose,
}

/// Where the provider actors record answered calls. Cheap to clone.
#[derive(Clone)]
pub struct Ledger {
    db: DbHandle,
}

impl Ledger {
    /// A ledger writing to the store behind `db`.
    pub fn new(db: DbHandle) -> Ledger {
        Ledger { db }
    }

    /// Records one answered call and what the provider reported it used. A failure to
    /// write is logged: the answer stands.
    pub(super) async fn record(&self, call: CallFor, used: Usage) {
        let form = form(call, used);
        let recorded = self
            .db
            .call(move |conn| usage::record_call(conn, &form))
            .await;
        if let Err(error) = recorded {
            tracing::warn!(%error, run.id = %call.run, purpose = call.purpose.as_str(), "cannot record a model call's usage");
        }
    }
}

/// The row of one answered call.
fn form(call: CallFor, used: Usage) -> ModelCallForm {
    let count = |tokens: u64| i64::try_from(tokens).unwrap_or(i64::MAX);
    ModelCallForm {
        run_id: call.run,
        loop_id: call.loop_id,
        turn: call.turn,
        purpose: call.purpose,
        prompt_tokens: count(used.prompt_tokens),
        cached_tokens: count(used.cached_tokens),
        completion_tokens: count(used.completion_tokens),
        reasoning_tokens: count(used.reasoning_tokens),
        total_tokens: count(used.total_tokens),
        cost: used.cost.max(0.0),
    }
}
