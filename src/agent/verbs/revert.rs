//! The `revert` verb (`run/revert`): a person asks that a file the run changed be put back
//! as it was before the run (or one of its loops) first changed it. Nothing is written to
//! the file here: the verb raises a proposal like the model's — an edit (`set`) back to that
//! content, or the removal (`rm`) of a file the run added — which every client is told of
//! (`run/proposal`, and `run/action revert` naming who asked), and which applies only once
//! accepted through `run/resolve`, under the same roles and the same application of edits
//! (`RUMMY_APPLY_EDITS`). Its resolution never resumes the model and leaves the run's
//! status as it was (`resolve::record`).
//!
//! Stages: *find* (on a reader: the run's recorded changes combined, `agent::changes`; the
//! content to go back to and the file's content after the run's last change of it) · *propose*
//! (one unit of work: the run must be idle — a run whose loop runs, waits on the model's
//! proposals or is paused is refused, not queued, so a revert never mixes with a turn in
//! flight —, no revert of that file pending; the proposal written, `run_actions` and both
//! notifications numbered with it).

use serde_json::{json, Map, Value};

use crate::agent::changes::combined;
use crate::agent::verbs::announce::{acted, announce};
use crate::agent::verbs::VerbError;
use crate::agent::AgentContext;
use crate::db::enums::{EntryStatus, RunAction, RunStatus};
use crate::db::ids::LoopId;
use crate::db::models::entry::EntryUpsertForm;
use crate::db::models::run::{RunActionForm, RunRow};
use crate::db::paths::normalize_path;
use crate::db::queries::{entries, file_changes, loops, run_actions, runs};
use crate::db::{Conn, DbError};
use crate::hedberg::unified_diff;
use crate::hub;
use crate::hub::notifications::{Act, Notification, ProposedEntry, RunActed, RunProposal};
use crate::plugins::bundled::tools::merge;

/// The attribute that marks a proposal as a person's revert: `{by, loop}`.
pub(crate) const MARK: &str = "revert";

/// What a person asked to revert.
#[derive(Debug, Clone)]
pub(crate) struct Reverting {
    /// The file, relative to the project root, as `run/changes` names it.
    pub file: String,
    /// The loop (by its number in the run) whose change to undo; `None`: the run's.
    pub sequence: Option<i32>,
}

/// The proposal a revert raised.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub(crate) struct Raised {
    pub run: String,
    /// The proposal's path, to resolve with `run/resolve`.
    pub path: String,
    /// `set` (the file put back) or `rm` (a file the run added removed).
    #[serde(rename = "type")]
    pub kind: String,
}

/// Whether a proposal's attributes mark it as a revert.
pub(crate) fn is_revert(attributes: &Map<String, Value>) -> bool {
    attributes.get(MARK).is_some_and(Value::is_object)
}

/// Raises the proposal that reverts `reverting` in `run`, asked by `person`.
pub(crate) async fn revert(
    agent: &AgentContext,
    run: RunRow,
    reverting: Reverting,
    person: Option<String>,
) -> Result<Raised, VerbError> {
    let bounds = agent.db.event_bounds();
    agent
        .db
        .call(move |conn| {
            let Some(change) = find(conn, &run, &reverting)? else {
                return Ok(Err(VerbError::NothingToRevert {
                    run: run.alias.clone(),
                    file: reverting.file.clone(),
                }));
            };
            propose(conn, &bounds, change, reverting.sequence, person)
        })
        .await?
}

/// A file's change to undo: its content to go back to, and its content now.
struct Change {
    run: RunRow,
    file: String,
    back_to: Option<String>,
    now: Option<String>,
}

/// *find*: the scope's combined change of the file, and the run's.
fn find(conn: &mut Conn, run: &RunRow, reverting: &Reverting) -> Result<Option<Change>, DbError> {
    let scope: Option<LoopId> = match reverting.sequence {
        Some(sequence) => match loops::by_sequence(conn, run.id, sequence)? {
            Some(lp) => Some(lp.id),
            None => return Ok(None),
        },
        None => None,
    };
    let rows = file_changes::of_run(conn, run.id)?;
    let Some(scoped) = combined(&rows, scope)
        .into_iter()
        .find(|file| file.file == reverting.file)
    else {
        return Ok(None);
    };
    // The file as the run's last change of it left it (a revert's own change included).
    let now = rows
        .iter()
        .rev()
        .find(|row| row.file == reverting.file)
        .and_then(|row| row.after.clone());
    Ok((scoped.before != now).then(|| Change {
        run: run.clone(),
        file: reverting.file.clone(),
        back_to: scoped.before,
        now,
    }))
}

/// *propose*: the proposal, in one unit of work with what it is told as.
fn propose(
    conn: &mut Conn,
    bounds: &crate::db::queries::run_events::EventBounds,
    change: Change,
    sequence: Option<i32>,
    person: Option<String>,
) -> Result<Result<Raised, VerbError>, DbError> {
    let Some(run) = runs::get_run(conn, change.run.id)? else {
        return Ok(Err(VerbError::RunGone(change.run.alias)));
    };
    if !IDLE.contains(&run.status) {
        return Ok(Err(VerbError::Busy {
            run: run.alias,
            status: run.status,
        }));
    }
    let mark = json!({ "by": person, "loop": sequence });
    let now = change.now.clone().unwrap_or_default();
    let (kind, body, attributes) = match &change.back_to {
        None => (
            "rm",
            change.file.clone(),
            json!({ "path": change.file, MARK: mark }),
        ),
        Some(back_to) => {
            let merge = match change.now {
                Some(ref now) if !now.is_empty() => merge::render(now, back_to),
                _ => None,
            }
            .unwrap_or_else(|| merge::whole(back_to));
            let attributes = json!({
                "file": change.file,
                "patch": unified_diff(&change.file, &now, back_to),
                "merge": merge,
                "warning": null,
                "error": null,
                MARK: mark,
            });
            ("set", now.clone(), attributes)
        }
    };
    let path = normalize_path(&format!("{kind}://revert/{}", change.file));
    if entries::get_entry(conn, run.id, &path)?
        .is_some_and(|row| row.status == EntryStatus::Proposed)
    {
        return Ok(Err(VerbError::RevertPending {
            run: run.alias,
            path,
        }));
    }
    entries::write_entry(
        conn,
        &EntryUpsertForm {
            status: EntryStatus::Proposed,
            attributes: Some(attributes.clone()),
            ..EntryUpsertForm::new(run.id, None, run.next_turn, path.clone(), body.clone())
        },
    )?;
    run_actions::record(
        conn,
        &RunActionForm {
            run_id: run.id,
            loop_id: None,
            person: person.clone(),
            action: RunAction::Revert,
            path: Some(path.clone()),
        },
    )?;
    let told = RunActed {
        path: Some(path.clone()),
        status: Some(EntryStatus::Proposed),
        ..acted(&run, Act::Revert, person)
    };
    announce(conn, bounds, &run, told)?;
    let proposal = Notification::Proposal(RunProposal {
        run: run.alias.clone(),
        proposed: vec![ProposedEntry {
            path: path.clone(),
            kind: kind.to_owned(),
            body,
            attributes,
            allowed: None,
        }],
    });
    hub::append(conn, bounds, run.project_id, run.id, &proposal)?;
    Ok(Ok(Raised {
        run: run.alias,
        path,
        kind: kind.to_owned(),
    }))
}

/// The statuses a revert is raised in: no loop runs, none waits on its proposals or a cap.
const IDLE: [RunStatus; 5] = [
    RunStatus::Queued,
    RunStatus::Completed,
    RunStatus::TooLarge,
    RunStatus::Aborted,
    RunStatus::Failed,
];
