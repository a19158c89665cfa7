//! One child: made with the entries its parent passes, its loop queued under the parent's
//! cancel token, and what it came to read back as a [`Report`].

use tokio_util::sync::CancellationToken;

use crate::agent::delegation::{ParentTurn, Report, Task};
use crate::agent::loop_config::LoopConfig;
use crate::agent::outcome::{Ending, LoopOutcome};
use crate::agent::AgentContext;
use crate::db::enums::{EntryStatus, LoopMode, LoopPriority, RunStatus};
use crate::db::ids::RunId;
use crate::db::models::entry::{EntryRow, EntryUpsertForm};
use crate::db::models::run::{LoopEnqueue, RunRow};
use crate::db::queries::{entries, runs};
use crate::db::DbError;
use crate::plugins::events::Event;
use crate::plugins::text::fill;

const NO_SUMMARY: &str = include_str!("../../plugins/text/delegate/no_summary.md");
const FAILED: &str = include_str!("../../plugins/text/delegate/failed.md");
const TOO_LARGE: &str = include_str!("../../plugins/text/delegate/too_large.md");
const PROPOSED: &str = include_str!("../../plugins/text/delegate/proposed.md");
const ABORTED: &str = include_str!("../../plugins/text/delegate/aborted.md");
const MISSING: &str = include_str!("../../plugins/text/delegate/missing.md");

/// Runs `task` as a child of `parent` to its end and reports it; never fails (whatever
/// goes wrong is the report's status and text).
pub(super) async fn run(
    agent: &AgentContext,
    parent: &ParentTurn<'_>,
    task: &Task,
    cancel: &CancellationToken,
) -> Report {
    match run_child(agent, parent, task, cancel).await {
        Ok(report) => report,
        Err(error) => {
            tracing::warn!(%error, "sub-agent not run");
            Report {
                status: EntryStatus::Failed,
                body: fill(FAILED, &[("run", "(none)"), ("error", &error.to_string())]),
                child: None,
            }
        }
    }
}

/// What making the child came to.
enum Made {
    /// The parent's row and the child run, made with the entries passed.
    Child(Box<(RunRow, RunRow)>),
    /// Paths the task passes that the parent does not have: no child was made.
    Missing(Vec<String>),
}

/// Makes the child, runs its loop to the end and judges what it left.
async fn run_child(
    agent: &AgentContext,
    parent: &ParentTurn<'_>,
    task: &Task,
    cancel: &CancellationToken,
) -> Result<Report, DbError> {
    let made = make_child(agent, parent.loop_row.run_id, task.context.clone()).await?;
    let (parent_row, child) = match made {
        Made::Child(made) => *made,
        Made::Missing(missing) => {
            return Ok(Report {
                status: EntryStatus::NotFound,
                body: fill(MISSING, &[("paths", &missing.join(", "))]),
                child: None,
            })
        }
    };
    agent.plugins.emit(Event::RunCreated {
        run: child.id,
        alias: &child.alias,
        project: child.project_id,
        forked_from: None,
    });
    let turns = agent.settings.agent.subagent_max_turns.max(1);
    let enqueue = LoopEnqueue {
        run_id: child.id,
        mode: LoopMode::Ask,
        model: parent.loop_row.model.clone().or(parent_row.model),
        prompt: task.text.clone(),
        priority: LoopPriority::Normal,
        config: child_config(parent.config, turns).to_json(),
        requested_by: parent.loop_row.requested_by.clone(),
        requested_on: parent.loop_row.requested_on,
    };
    let outcome = agent.runs.enqueue_under(agent, enqueue, cancel).await?;
    // An actor that stops before the loop ends (the server stopping) fails it.
    let outcome = outcome.await.unwrap_or(LoopOutcome::Ended(Ending::Failed));
    let end = child_end(agent, child, turns).await?;
    let (status, body) = end.judged(outcome);
    Ok(Report {
        status,
        body,
        child: Some(end.alias),
    })
}

/// Makes a delegated run of `parent_run` holding the parent's entries at `paths`, unless
/// the parent lacks one of them.
async fn make_child(
    agent: &AgentContext,
    parent_run: RunId,
    paths: Vec<String>,
) -> Result<Made, DbError> {
    agent
        .db
        .call(move |conn| {
            let parent = runs::get_run(conn, parent_run)?
                .ok_or_else(|| DbError::NotFound(format!("run {parent_run}")))?;
            let mut passed = Vec::new();
            let mut missing = Vec::new();
            for path in paths {
                match entries::get_entry(conn, parent_run, &path)? {
                    Some(row) => passed.push(row),
                    None => missing.push(path),
                }
            }
            if !missing.is_empty() {
                return Ok(Made::Missing(missing));
            }
            let child = runs::create_delegated_run(conn, &parent, runs::now_ms())?;
            for row in passed {
                entries::write_entry(conn, &passed_entry(child.id, row))?;
            }
            Ok(Made::Child(Box::new((parent, child))))
        })
        .await
}

/// What `child`, whose loop had `turn_limit` turns, left when its loop ended.
async fn child_end(
    agent: &AgentContext,
    child: RunRow,
    turn_limit: u32,
) -> Result<ChildEnd, DbError> {
    let child_id = child.id;
    let (summary, error, taken) = agent
        .db
        .read(move |conn| {
            let run = runs::get_run(conn, child_id)?;
            Ok((
                entries::latest_entry_of_scheme(conn, child_id, "summarize")?,
                entries::latest_entry_of_scheme(conn, child_id, "error")?,
                run.map_or(0, |run: RunRow| run.next_turn - 1),
            ))
        })
        .await?;
    Ok(ChildEnd {
        alias: child.alias,
        summary: summary.map(|row| row.body),
        error: error.map(|row| row.body),
        turns_taken: taken,
        turn_limit,
    })
}

/// What a child left when its loop ended.
struct ChildEnd {
    alias: String,
    /// Its newest `summarize://` entry's text.
    summary: Option<String>,
    /// Its newest `error://` entry's text.
    error: Option<String>,
    turns_taken: i32,
    turn_limit: u32,
}

impl ChildEnd {
    /// The status and text of the parent's entry for a child whose loop ended with
    /// `outcome`: only a completed loop with a summary succeeds.
    fn judged(&self, outcome: LoopOutcome) -> (EntryStatus, String) {
        let run = ("run", self.alias.as_str());
        match outcome {
            LoopOutcome::Ended(ending) if ending.status() == RunStatus::Completed => {
                match &self.summary {
                    Some(summary) => (EntryStatus::Ok, summary.clone()),
                    None => (
                        EntryStatus::Failed,
                        fill(
                            NO_SUMMARY,
                            &[
                                run,
                                ("turns", &self.turns_taken.to_string()),
                                ("limit", &self.turn_limit.to_string()),
                            ],
                        ),
                    ),
                }
            }
            LoopOutcome::Ended(Ending::Aborted) => (EntryStatus::Failed, fill(ABORTED, &[run])),
            LoopOutcome::Ended(Ending::CapReached) => {
                let error = self.error.as_deref().unwrap_or_default();
                (
                    EntryStatus::CapReached,
                    fill(FAILED, &[run, ("error", error)]),
                )
            }
            LoopOutcome::Ended(_) | LoopOutcome::Panicked { .. } => {
                let error = self.error.as_deref().unwrap_or_default();
                (EntryStatus::Failed, fill(FAILED, &[run, ("error", error)]))
            }
            LoopOutcome::Overflow { error } | LoopOutcome::RecoveryFailed { error, .. } => (
                EntryStatus::TooLarge,
                fill(TOO_LARGE, &[run, ("error", &error)]),
            ),
            LoopOutcome::Paused(paused) => (
                EntryStatus::CapReached,
                fill(FAILED, &[run, ("error", &paused.error)]),
            ),
            LoopOutcome::Proposed { .. } => (EntryStatus::Failed, fill(PROPOSED, &[run])),
        }
    }
}

/// The child's loop flags: it asks (no file changes), without the repository scan,
/// questions or proposals, within `turns`, one level deeper than its parent; the parent's
/// `noWeb` and temperature carry over.
fn child_config(parent: &LoopConfig, turns: u32) -> LoopConfig {
    LoopConfig {
        no_repo: true,
        no_interaction: true,
        no_web: parent.no_web,
        no_proposals: true,
        temperature: parent.temperature,
        panic_attempted: false,
        max_turns: Some(turns),
        delegation_depth: parent.delegation_depth + 1,
    }
}

/// A parent's entry as the child gets it: the same path, body and attributes, written anew
/// (so at full fidelity, whatever the parent's) before the child's first turn.
fn passed_entry(child: RunId, row: EntryRow) -> EntryUpsertForm {
    EntryUpsertForm {
        attributes: Some(row.attributes.into()),
        ..EntryUpsertForm::new(child, None, 0, row.path, row.body)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::enums::Fidelity;
    use crate::db::testing::{sample_run, TestDb};

    #[test]
    fn a_passed_entry_keeps_its_body_and_attributes_at_full_fidelity() {
        let mut db = TestDb::new();
        let conn = &mut db.conn;
        let parent = sample_run(conn);
        let child = runs::create_delegated_run(conn, &parent, 1).unwrap();
        let written = EntryUpsertForm {
            fidelity: Some(Fidelity::Archive),
            attributes: Some(serde_json::json!({"summary": "the colour"})),
            ..EntryUpsertForm::new(parent.id, None, 3, "known://sky", "green")
        };
        entries::write_entry(conn, &written).unwrap();
        let row = entries::get_entry(conn, parent.id, "known://sky")
            .unwrap()
            .unwrap();
        entries::write_entry(conn, &passed_entry(child.id, row)).unwrap();
        let passed = entries::get_entry(conn, child.id, "known://sky")
            .unwrap()
            .unwrap();
        assert_eq!(
            (passed.body.as_str(), passed.fidelity, passed.turn),
            ("green", Fidelity::Full, 0)
        );
        assert_eq!(
            passed.attributes.to_value()["summary"],
            serde_json::json!("the colour")
        );
    }

    fn end(summary: Option<&str>) -> ChildEnd {
        ChildEnd {
            alias: "fake_1".into(),
            summary: summary.map(str::to_owned),
            error: Some("the provider answered 500".into()),
            turns_taken: 2,
            turn_limit: 2,
        }
    }

    #[test]
    fn only_a_completed_child_with_a_summary_succeeds() {
        let completed = LoopOutcome::Ended(Ending::Done);
        assert_eq!(
            end(Some("found it")).judged(completed.clone()),
            (EntryStatus::Ok, "found it".into())
        );
        let (status, text) = end(None).judged(completed);
        assert_eq!(status, EntryStatus::Failed);
        assert!(text.contains("fake_1 stopped after 2 turns without a summary (its limit is 2"));
        let (status, text) = end(Some("x")).judged(LoopOutcome::Ended(Ending::Failed));
        assert_eq!(status, EntryStatus::Failed);
        assert!(
            text.ends_with("fake_1 failed: the provider answered 500"),
            "{text}"
        );
        let overflow = LoopOutcome::Overflow {
            error: "the prompt does not fit.".into(),
        };
        let (status, text) = end(Some("x")).judged(overflow);
        assert_eq!(status, EntryStatus::TooLarge);
        assert!(text.contains("the prompt does not fit."), "{text}");
        let proposed = LoopOutcome::Proposed {
            turn: 1,
            proposed: Vec::new(),
            summarized: true,
        };
        assert_eq!(end(Some("x")).judged(proposed).0, EntryStatus::Failed);
        let aborted = end(Some("x")).judged(LoopOutcome::Ended(Ending::Aborted));
        assert!(aborted.1.contains("aborted"), "{aborted:?}");
    }

    #[test]
    fn a_child_asks_one_level_deeper_without_scan_questions_or_proposals() {
        let parent = LoopConfig {
            no_web: true,
            temperature: Some(0.5),
            delegation_depth: 1,
            ..LoopConfig::default()
        };
        let child = child_config(&parent, 3);
        assert_eq!(
            child,
            LoopConfig {
                no_repo: true,
                no_interaction: true,
                no_web: true,
                no_proposals: true,
                temperature: Some(0.5),
                panic_attempted: false,
                max_turns: Some(3),
                delegation_depth: 2,
            }
        );
    }
}
