//! Messages for runs, loops and turns.

use super::epoch_ms;
use crate::db::enums::RunStatus;
use crate::db::ids::{LoopId, ProjectId, RunId, TurnId};
use crate::db::models::run::{
    LoopEnqueue, LoopRow, RunConfigUpdateForm, RunCreate, RunRow, RunSummary, RunUsage,
    TurnInsertForm, TurnRow, TurnUsageForm,
};
use crate::db::queries::{loops, runs, turns};

db_messages! {
    /// Creates an idle run named `<model>_<epoch ms>` (suffixed on collision; never a
    /// conflict).
    CreateRun { create: RunCreate } -> RunRow =
        |conn, message| runs::create_run(conn, &message.create, epoch_ms());
    /// The run with this id.
    GetRun { id: RunId } -> Option<RunRow> = |conn, message| runs::get_run(conn, message.id);
    /// The run with this alias.
    FindRun { alias: String } -> Option<RunRow> =
        |conn, message| runs::find_run(conn, &message.alias);
    /// The project's most recently created run.
    LatestRun { project_id: ProjectId } -> Option<RunRow> =
        |conn, message| runs::latest_run(conn, message.project_id);
    /// The project's runs, newest first, with turn counts and latest summaries (`getRuns`).
    ListRuns { project_id: ProjectId, limit: Option<i64>, offset: Option<i64> } -> Vec<RunSummary> =
        |conn, message| runs::list_runs(conn, message.project_id, message.limit, message.offset);
    /// Renames a run: `Invalid` unless `[a-zA-Z0-9_]+`, `Conflict` when taken.
    RenameRun { id: RunId, name: String } -> RunRow =
        |conn, message| runs::rename_run(conn, message.id, &message.name);
    /// Changes the given run settings (`run/config`, `persona/set`).
    UpdateRunConfig { id: RunId, form: RunConfigUpdateForm } -> RunRow =
        |conn, message| runs::update_run_config(conn, message.id, &message.form);
    /// Moves a run through the state machine; an illegal move is `Invalid`.
    SetRunStatus { id: RunId, status: RunStatus } -> RunRow =
        |conn, message| runs::set_run_status(conn, message.id, message.status);
    /// Takes the run's next turn number.
    TakeTurnNumber { run_id: RunId } -> i32 =
        |conn, message| runs::take_turn_number(conn, message.run_id);
    /// Forks a run: same settings, a copy of its store, continued turn numbering.
    ForkRun { parent_id: RunId } -> RunRow =
        |conn, message| runs::fork_run(conn, message.parent_id, epoch_ms());
    /// At start-up: running loops back to pending, running runs to 499; returns the runs
    /// with pending loops.
    RecoverAfterRestart {} -> Vec<RunId> = |conn, message| runs::recover_after_restart(conn);

    /// Appends a pending loop to a run's queue.
    EnqueueLoop { enqueue: LoopEnqueue } -> LoopRow =
        |conn, message| loops::enqueue_loop(conn, &message.enqueue);
    /// Claims the run's next loop (priority, then FIFO); `None` when idle or one is running.
    ClaimNextLoop { run_id: RunId } -> Option<LoopRow> =
        |conn, message| loops::claim_next_loop(conn, message.run_id);
    /// Records a loop's outcome.
    FinishLoop { id: LoopId, status: RunStatus, result: Option<serde_json::Value> } -> LoopRow =
        |conn, message| loops::finish_loop(conn, message.id, message.status, message.result.as_ref());
    /// The loop with this id.
    GetLoop { id: LoopId } -> Option<LoopRow> = |conn, message| loops::get_loop(conn, message.id);
    /// The run's running loop.
    ActiveLoop { run_id: RunId } -> Option<LoopRow> =
        |conn, message| loops::active_loop(conn, message.run_id);
    /// The run's newest loop.
    LatestLoop { run_id: RunId } -> Option<LoopRow> =
        |conn, message| loops::latest_loop(conn, message.run_id);
    /// The run's pending loops in claim order.
    PendingLoops { run_id: RunId } -> Vec<LoopRow> =
        |conn, message| loops::pending_loops(conn, message.run_id);

    /// Records the start of a turn.
    InsertTurn { form: TurnInsertForm } -> TurnRow =
        |conn, message| turns::insert_turn(conn, &message.form);
    /// Writes a turn's usage after the LLM call.
    UpdateTurnUsage { id: TurnId, usage: TurnUsageForm } -> TurnRow =
        |conn, message| turns::update_turn_usage(conn, message.id, &message.usage);
    /// The run's newest turn.
    LatestTurn { run_id: RunId } -> Option<TurnRow> =
        |conn, message| turns::latest_turn(conn, message.run_id);
    /// Usage summed over the run's turns (`getRun` telemetry).
    GetRunUsage { run_id: RunId } -> RunUsage =
        |conn, message| turns::run_usage(conn, message.run_id);
}
