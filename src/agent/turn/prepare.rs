//! A turn's packet before the LLM call: in one unit of work the turn numbered (on its first
//! preparation), the loop's prompt written, the plugins' preparations run (memory's
//! recall), the visible entries materialized into
//! `turn_context` and the run's row read; then the two messages assembled with `<progress>`
//! reporting the calibrated size of the very packet it is part of, so its figure and the
//! budget advisories are right from a run's first turn on.

use std::sync::Arc;

use serde_json::json;

use crate::agent::error::LoopError;
use crate::agent::outlines::outline_summarized_files;
use crate::agent::turn::input::TurnInput;
use crate::agent::turn::LatestWritten;
use crate::agent::AgentContext;
use crate::budget::{Calibrated, CalibratedMeasure, Calibration, EstimatedTokens};
use crate::context::materialize::{materialize_turn, Materialized, Snapshot, TurnTarget};
use crate::context::ContextRow;
use crate::context::{Packet, TokenMath};
use crate::db::enums::{Fidelity, LoopMode};
use crate::db::ids::{LoopId, ProjectId, RunId};
use crate::db::models::entry::{EntryUpsertForm, SnapshotRow};
use crate::db::models::run::{RunRow, TurnInsertForm, TurnRow};
use crate::db::queries::{entries, runs, turns};
use crate::db::{Conn, DbError};
use crate::llm::RunCaps;
use crate::plugins::assembly::{AssemblyInput, BudgetFigures};
use crate::plugins::policy::ToolPolicy;
use crate::plugins::preparation::PreparingTurn;
use crate::plugins::Plugins;

/// Most assemblies of one packet while its reported size settles (a figure one digit longer,
/// or an advisory it brings, changes the size it reports).
const MAX_ASSEMBLIES: usize = 4;

/// A prompt the turn writes before assembling.
pub(super) enum PromptWrite {
    /// The loop's prompt, written at `prompt://<turn>` (the loop's first turn).
    New(String),
    /// New text for the loop's existing prompt entry (a panic loop's continuation).
    Replace(String),
}

/// A packet ready to send, and what the turn needs to know of its run.
pub(super) struct PreparedPacket {
    pub turn: TurnRow,
    /// The two messages.
    pub packet: Packet,
    /// Their calibrated size.
    pub measure: CalibratedMeasure,
    /// The run's alias now (it may have been renamed while running).
    pub alias: String,
    /// The run's project, for notification routing.
    pub project: ProjectId,
    /// What the run's row says of its own caps.
    pub caps: RunCaps,
}

/// Outlines the source files at summary fidelity that need it, numbers the turn (when
/// `numbered` is `None`), writes the loop's prompt, materializes the visible entries and
/// assembles the packet.
pub(super) async fn prepare_packet(
    agent: &AgentContext,
    input: &TurnInput<'_>,
    numbered: Option<TurnRow>,
    prompt: Option<PromptWrite>,
    policy: ToolPolicy,
) -> Result<PreparedPacket, LoopError> {
    outline_summarized_files(agent, input.run_id).await?;
    let opening = TurnOpening {
        run_id: input.run_id,
        loop_id: input.loop_row.id,
        mode: input.loop_row.mode,
        by: input.loop_row.requested_by.clone(),
        numbered,
        prompt,
    };
    let plugins = Arc::clone(&agent.plugins);
    let tokens = TokenMath::new(agent.settings.tokens.divisor);
    let latest = Arc::clone(input.latest);
    let mut opened = agent
        .db
        .call(move |conn| opening.open(conn, &plugins, &latest, tokens))
        .await?;
    let turn = opened.row.sequence;
    let snapshot = std::mem::take(&mut opened.snapshot);
    input.latest.snapshot.note(turn, snapshot);
    input.latest.system.keep_if_noted_on(opened.previous);
    let (packet, measure) = assemble_packet(agent, input, &opened, policy).await?;
    Ok(PreparedPacket {
        turn: opened.row,
        packet,
        measure,
        caps: RunCaps::of(opened.run.caps.as_deref(), opened.run.delegated_by),
        alias: opened.run.alias,
        project: opened.run.project_id,
    })
}

/// What a turn's unit of work on the writer starts from.
struct TurnOpening {
    run_id: RunId,
    loop_id: LoopId,
    mode: LoopMode,
    /// Who asked for the loop (`None`: the operator), whose prompt it writes.
    by: Option<String>,
    /// The turn's row when an earlier preparation numbered it.
    numbered: Option<TurnRow>,
    prompt: Option<PromptWrite>,
}

/// A turn numbered, its prompt written and its context materialized.
struct OpenedTurn {
    row: TurnRow,
    /// The visible entries, in context order.
    rows: Vec<ContextRow>,
    run: RunRow,
    /// The size the previous turn's packet had: where the reported size starts.
    guess: i64,
    /// The run's latest turn before this one, this turn's first preparation (`None`: none,
    /// or the turn is prepared again).
    previous: Option<i32>,
    /// The rows as the snapshot keeps them, for the actor to note once stored.
    snapshot: Vec<SnapshotRow>,
}

impl TurnOpening {
    /// In one unit of work: the turn numbered, the prompt written, the plugins' preparations
    /// run and the visible entries materialized into `turn_context`.
    fn open(
        mut self,
        conn: &mut Conn,
        plugins: &Plugins,
        latest: &LatestWritten,
        tokens: TokenMath,
    ) -> Result<OpenedTurn, DbError> {
        let (run_id, loop_id) = (self.run_id, self.loop_id);
        let latest_turn = turns::latest_turn(conn, run_id)?;
        let guess = latest_turn
            .as_ref()
            .map_or(0, |previous| i64::from(previous.context_tokens));
        let previous = match self.numbered {
            Some(_) => None,
            None => latest_turn.map(|previous| previous.sequence),
        };
        let snapshot = match self.numbered {
            Some(_) => Snapshot::Again,
            None => Snapshot::First {
                latest: previous,
                held: &latest.snapshot,
            },
        };
        let row = match self.numbered.take() {
            Some(row) => row,
            None => {
                let sequence = runs::take_turn_number(conn, run_id)?;
                let form = TurnInsertForm {
                    run_id,
                    loop_id,
                    sequence,
                };
                turns::insert_turn(conn, &form)?
            }
        };
        let turn = row.sequence;
        let new_prompt = self.write_prompt(conn, turn)?;
        let run = runs::get_run(conn, run_id)?
            .ok_or_else(|| DbError::NotFound(format!("run {run_id}")))?;
        plugins.prepare(
            conn,
            &PreparingTurn {
                run: run_id,
                loop_id,
                project: run.project_id,
                mode: self.mode,
                turn,
                prompt: new_prompt.as_deref(),
            },
        );
        let target = TurnTarget {
            run_id,
            loop_id: Some(loop_id),
            turn,
        };
        let Materialized { rows, snapshot } =
            materialize_turn(conn, target, snapshot, plugins, tokens)?;
        Ok(OpenedTurn {
            row,
            rows,
            run,
            guess,
            previous,
            snapshot,
        })
    }

    /// Writes the turn's prompt, if it has one; the body of a new prompt is returned for the
    /// plugins' preparations.
    fn write_prompt(&mut self, conn: &mut Conn, turn: i32) -> Result<Option<String>, DbError> {
        let (run_id, loop_id) = (self.run_id, self.loop_id);
        let (path, body, new_prompt) = match self.prompt.take() {
            None => return Ok(None),
            Some(PromptWrite::New(body)) => {
                (Some(format!("prompt://{turn}")), body.clone(), Some(body))
            }
            Some(PromptWrite::Replace(body)) => (
                entries::loop_prompt_path(conn, run_id, loop_id)?,
                body,
                None,
            ),
        };
        if let Some(path) = path {
            entries::write_entry(
                conn,
                &EntryUpsertForm {
                    fidelity: Some(Fidelity::Full),
                    attributes: Some(prompt_attributes(self.mode, self.by.as_deref())),
                    ..EntryUpsertForm::new(run_id, Some(loop_id), turn, path, body)
                },
            )?;
        }
        Ok(new_prompt)
    }
}

/// A prompt entry's attributes: its loop's mode, and who wrote it (`by`, left out for the
/// operator).
pub(crate) fn prompt_attributes(mode: LoopMode, by: Option<&str>) -> serde_json::Value {
    match by {
        Some(person) => json!({"mode": mode.as_str(), "by": person}),
        None => json!({"mode": mode.as_str()}),
    }
}

/// Assembles the opened turn's packet so that the size it reports is its own calibrated size.
async fn assemble_packet(
    agent: &AgentContext,
    input: &TurnInput<'_>,
    opened: &OpenedTurn,
    policy: ToolPolicy,
) -> Result<(Packet, CalibratedMeasure), LoopError> {
    let tokens = TokenMath::new(agent.settings.tokens.divisor);
    let assemble = |used_tokens: i64| {
        agent.plugins.assembly().assemble(
            AssemblyInput {
                run: input.run_id,
                rows: &opened.rows,
                turn: opened.row.sequence,
                policy,
                tools: agent.plugins.as_ref(),
                persona: opened.run.persona.as_deref(),
                budget: Some(BudgetFigures {
                    context_size: input.context_size,
                    used_tokens,
                }),
            },
            tokens,
        )
    };
    let first = assemble(opened.guess);
    let measure = agent
        .budget
        .send(Calibrated {
            run: input.run_id,
            estimate: estimate_of(&first),
        })
        .await
        .map_err(|_| LoopError::Stopping("the budget actor"))?;
    Ok(self_reporting(
        (first, opened.guess),
        measure.calibration,
        assemble,
    ))
}

/// The assembled estimate of a packet.
pub(super) fn estimate_of(packet: &Packet) -> EstimatedTokens {
    EstimatedTokens::new(u64::try_from(packet.assembled_tokens).unwrap_or(0))
}

/// Re-assembles the packet until the size it reports is its own calibrated size, starting
/// from `first`, a packet and the size it reports (a guess: the previous turn's size, so
/// that most turns settle in two assemblies). The measure returned is always the true one
/// of the packet returned; when the size has not settled after [`MAX_ASSEMBLIES`] the
/// figure the model reads is a few tokens off.
fn self_reporting(
    first: (Packet, i64),
    calibration: Calibration,
    assemble: impl Fn(i64) -> Packet,
) -> (Packet, CalibratedMeasure) {
    let (mut packet, mut reported) = first;
    for _ in 1..MAX_ASSEMBLIES {
        let size = calibration.apply(estimate_of(&packet)).get();
        let size = i64::try_from(size).unwrap_or(i64::MAX);
        if size == reported {
            break;
        }
        reported = size;
        packet = assemble(size);
    }
    let measure = CalibratedMeasure {
        calibrated: calibration.apply(estimate_of(&packet)),
        calibration,
    };
    (packet, measure)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::budget::ActualTokens;

    /// A packet whose user message is the figure and `padding` characters (one token per
    /// four), plus an advisory of 100 characters once the figure passes `advisory_from`.
    fn packet(figure: i64, padding: usize, advisory_from: i64) -> Packet {
        let mut user = format!("Context: {figure} tokens.{}", "x".repeat(padding));
        if figure >= advisory_from {
            user.push_str(&"!".repeat(100));
        }
        let tokens = TokenMath::new(4);
        Packet {
            assembled_tokens: tokens.count(&user),
            system: String::new(),
            user,
            entry_tokens: 0,
            distribution: Vec::new(),
        }
    }

    fn reported(packet: &Packet) -> i64 {
        packet
            .user
            .trim_start_matches("Context: ")
            .split(' ')
            .next()
            .and_then(|figure| figure.parse().ok())
            .unwrap_or(-1)
    }

    #[test]
    fn the_packet_reports_its_own_calibrated_size() {
        let calibration =
            Calibration::from_turn(EstimatedTokens::new(100), ActualTokens::new(150)).unwrap();
        let assemble = |figure| packet(figure, 8_000, i64::MAX);
        let (settled, measure) = self_reporting((assemble(0), 0), calibration, assemble);
        assert_eq!(
            i64::try_from(measure.calibrated.get()).unwrap(),
            reported(&settled)
        );
        assert_eq!(measure.calibrated, calibration.apply(estimate_of(&settled)));
        assert!(reported(&settled) > 3_000, "{}", settled.user.len());
    }

    #[test]
    fn an_advisory_the_figure_brings_is_counted_too() {
        let assemble = |figure| packet(figure, 2_000, 400);
        let (settled, measure) = self_reporting((assemble(0), 0), Calibration::IDENTITY, assemble);
        assert!(settled.user.ends_with('!'), "the advisory is shown");
        assert_eq!(
            i64::try_from(measure.calibrated.get()).unwrap(),
            reported(&settled)
        );
    }

    #[test]
    fn a_good_guess_settles_in_fewer_assemblies_on_the_same_packet() {
        let count = std::cell::Cell::new(0);
        let assemble = |figure| {
            count.set(count.get() + 1);
            packet(figure, 8_000, i64::MAX)
        };
        let (from_zero, _) = self_reporting((assemble(0), 0), Calibration::IDENTITY, assemble);
        let from_zero_count = count.replace(0);
        let settled = reported(&from_zero);
        let (guessed, measure) = self_reporting(
            (assemble(settled), settled),
            Calibration::IDENTITY,
            assemble,
        );
        assert_eq!(guessed.user, from_zero.user, "the same packet");
        assert_eq!(
            i64::try_from(measure.calibrated.get()).unwrap(),
            reported(&guessed)
        );
        assert!(
            count.get() < from_zero_count,
            "{} < {from_zero_count}",
            count.get()
        );
    }

    #[test]
    fn a_figure_that_never_settles_still_measures_the_packet_sent() {
        let assemble = |figure: i64| packet(figure, usize::try_from(figure).unwrap_or(0), 0);
        let (sent, measure) = self_reporting((assemble(0), 0), Calibration::IDENTITY, assemble);
        assert_eq!(
            measure.calibrated,
            Calibration::IDENTITY.apply(estimate_of(&sent))
        );
    }
}
