//! `inject` (`run/inject`): a person's message for a run. Stages: *place* (one unit of work
//! on the writer: the message joins the loop this instance runs as its next turn's prompt,
//! or, the run idle and no proposal pending, a loop is queued to run it, with the mode and
//! flags of the run's latest loop), *announce* (every client told, `hub`) and, for a queued
//! loop, *proceed* (its outcome awaited).
//!
//! A message that joins a loop whose outcome is then decided without another turn is taken
//! in by a loop that unit of work queues (`agent::run_loop`), so a message is never lost to
//! the end of the loop it joined.

use crate::agent::loop_config::LoopConfig;
use crate::agent::outcome::ProposedRow;
use crate::agent::registry::RunRegistry;
use crate::agent::turn::prompt_attributes;
use crate::agent::verbs::announce::{acted, announce};
use crate::agent::verbs::{queue, Answer, VerbError};
use crate::agent::AgentContext;
use crate::db::enums::{LoopMode, LoopPriority};
use crate::db::ids::LoopId;
use crate::db::models::entry::{EntryUpsertForm, UnresolvedRow};
use crate::db::models::run::{LoopEnqueue, RunRow};
use crate::db::queries::run_events::EventBounds;
use crate::db::queries::{entries, loops, runs};
use crate::db::{Conn, DbError};
use crate::hub::notifications::{Act, RunActed};

/// Where the message went.
enum Placed {
    /// Into the running loop.
    Joined,
    /// Nowhere: proposals are pending.
    Blocked(Vec<UnresolvedRow>),
    /// Into this loop, queued.
    Queued(LoopId),
}

/// `person`'s `message` for `run`, sent on `connection` (`Instance::connection_key`).
pub(crate) async fn inject(
    agent: &AgentContext,
    run: RunRow,
    person: Option<String>,
    connection: Option<i64>,
    message: String,
) -> Result<Answer, VerbError> {
    let placing = Placing {
        registry: agent.runs.clone(),
        instance: agent.runs.instance().id().to_owned(),
        bounds: agent.db.event_bounds(),
        run: run.clone(),
        person,
        connection,
        message,
    };
    let placed = agent.db.call(move |conn| placing.place(conn)).await?;
    let alias = run.alias.clone();
    match placed {
        Placed::Joined => Ok(Answer::Injected { alias }),
        Placed::Blocked(proposed) => Ok(Answer::Blocked {
            alias,
            proposed: proposed.into_iter().map(ProposedRow::from).collect(),
        }),
        Placed::Queued(id) => queue::outcome(agent, run.id, id).await,
    }
}

/// What the place stage's unit of work needs.
struct Placing {
    registry: RunRegistry,
    /// This instance, which waits for a queued loop.
    instance: String,
    bounds: EventBounds,
    run: RunRow,
    person: Option<String>,
    connection: Option<i64>,
    message: String,
}

impl Placing {
    /// The place stage's unit of work; a message placed is told to every client.
    fn place(self, conn: &mut Conn) -> Result<Placed, DbError> {
        let run = &self.run;
        let running = self
            .registry
            .current(run.id)
            .filter(|current| !current.is_settled());
        let told = RunActed {
            message: Some(self.message.clone()),
            ..acted(run, Act::Inject, self.person.clone())
        };
        if let Some(current) = running {
            let turn = runs::get_run(conn, run.id)?.map_or(1, |row| row.next_turn);
            let mode = loops::get_loop(conn, current.id)?.map_or(LoopMode::Ask, |lp| lp.mode);
            entries::write_entry(
                conn,
                &EntryUpsertForm {
                    attributes: Some(prompt_attributes(mode, self.person.as_deref())),
                    ..EntryUpsertForm::new(
                        run.id,
                        Some(current.id),
                        turn,
                        format!("prompt://{turn}"),
                        self.message.clone(),
                    )
                },
            )?;
            current.join(turn);
            announce(conn, &self.bounds, run, told)?;
            return Ok(Placed::Joined);
        }
        let proposed = entries::unresolved(conn, run.id)?;
        if !proposed.is_empty() {
            return Ok(Placed::Blocked(proposed));
        }
        let requester = (self.person.clone(), self.connection);
        let enqueue = injected_loop(conn, run, requester, self.message.clone())?;
        let queued = queue::insert(conn, &enqueue, &self.instance)?;
        announce(conn, &self.bounds, run, told)?;
        Ok(Placed::Queued(queued))
    }
}

/// The loop that runs `message` on an idle run: it continues the latest loop with its mode
/// and flags; a panic loop (context recovery) is never continued as such, and a new prompt
/// may panic again. `requester`: the person and the connection that asked.
fn injected_loop(
    conn: &mut Conn,
    run: &RunRow,
    requester: (Option<String>, Option<i64>),
    message: String,
) -> Result<LoopEnqueue, DbError> {
    let (mode, config) = match loops::latest_loop(conn, run.id)? {
        Some(lp) if lp.mode != LoopMode::Panic => (
            lp.mode,
            LoopConfig {
                panic_attempted: false,
                ..LoopConfig::of(&lp.config)
            },
        ),
        _ => (LoopMode::Ask, LoopConfig::default()),
    };
    Ok(LoopEnqueue {
        run_id: run.id,
        mode,
        model: run.model.clone(),
        prompt: message,
        priority: LoopPriority::Normal,
        config: config.to_json(),
        requested_by: requester.0,
        requested_on: requester.1,
    })
}
