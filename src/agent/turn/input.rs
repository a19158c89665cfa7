//! What one turn is given by its loop.

use crate::agent::loop_config::LoopConfig;
use std::sync::Arc;

use crate::agent::state::carried::CarriedSlot;
use crate::agent::turn::LatestWritten;
use crate::budget::PanicTracker;
use crate::db::ids::RunId;
use crate::db::models::run::{LoopRow, TurnRow};

/// What a turn needs to know about its loop.
pub(crate) struct TurnInput<'a> {
    pub run_id: RunId,
    pub loop_row: &'a LoopRow,
    /// 1-based iteration within the loop.
    pub iteration: u32,
    /// The loop's flags.
    pub config: &'a LoopConfig,
    /// Model alias, for telemetry.
    pub model_alias: &'a str,
    /// Provider model id.
    pub model_actual: &'a str,
    /// Effective context size in tokens.
    pub context_size: i64,
    /// The temperature requests are sent with (`None`: the provider's default).
    pub temperature: Option<f64>,
    /// The project's root on this machine.
    pub project_root: &'a std::path::Path,
    /// The project's name (which MCP servers it uses).
    pub project_name: &'a str,
    /// The state of a panic loop (`None` in other loops).
    pub panic: Option<&'a mut PanicState>,
    /// The turn a loop paused at a spend cap takes up again, numbered (and its prompt
    /// written) before the call the cap refused; `None` for every other turn.
    pub paused_turn: Option<TurnRow>,
    /// What the run's actor knows of the run's latest `system://` copy and snapshot.
    pub latest: &'a Arc<LatestWritten>,
    /// The run's state as the loop's previous turn told it.
    pub carried: &'a CarriedSlot,
}

/// A panic loop's judge and the prompt text it currently shows the model.
pub(crate) struct PanicState {
    /// Judges each turn against the target.
    pub tracker: PanicTracker,
    /// The panic prompt as the model sees it now (the first, then each continuation).
    pub prompt: String,
}

impl PanicState {
    /// The state at the start of a panic loop.
    pub(crate) fn new(tracker: PanicTracker, prompt: String) -> PanicState {
        PanicState { tracker, prompt }
    }
}
