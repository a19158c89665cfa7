//! What takes a paused loop up again: [`resume_run`] for one run (`run/resume`, and an
//! `ask`/`act` that gives its run new caps), and each instance's [`watch`], which looks at
//! every paused loop of the store when it starts, when it is poked ([`Resumer::poke`]: a
//! loop paused here, the users file reloaded, a dead instance released) and when the
//! soonest period of a paused loop's cap ends — one timer, armed at that boundary, no
//! polling. A loop whose caps no longer stand (none of its run's, its person's, its
//! project's or the server's, as this instance counts them now) is unpaused and this
//! instance's actor of its run claims it.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use super::{row_of, unpause};
use crate::agent::AgentContext;
use crate::db::ids::RunId;
use crate::db::queries::paused_loops::{self, PausedRow};
use crate::db::{Conn, DbError};
use crate::llm::{spender, Spending};
use crate::usage::{Standing, UtcTime};

/// Pokes this instance's [`watch`]. Cheap to clone.
#[derive(Clone, Default)]
pub(crate) struct Resumer {
    poked: Arc<Notify>,
}

impl Resumer {
    /// Something may have freed a paused loop or paused one (a loop paused here, the users
    /// file reloaded, an instance released): the watch looks at every paused loop again and
    /// re-arms its timer. A poke while it is busy is kept for its next wait.
    pub(crate) fn poke(&self) {
        self.poked.notify_one();
    }
}

/// What [`resume_run`] did.
#[derive(Debug)]
pub(crate) enum Resumed {
    /// The loop is taken up again.
    TakenUp,
    /// This cap still stands: the loop stays paused.
    Still(Box<Standing>),
    /// The run has no paused loop.
    NotPaused,
}

/// Takes `run`'s paused loop up again (for `by`) unless one of its caps still stands.
pub(crate) async fn resume_run(
    agent: &AgentContext,
    run: RunId,
    by: Option<String>,
) -> Result<Resumed, DbError> {
    let spending = agent.llm.spending().clone();
    let now = spending.clock().now();
    let looked = agent
        .db
        .read(move |conn| {
            let Some(row) = paused_loops::of_run(conn, run)? else {
                return Ok(None);
            };
            Ok(Some(standing(conn, &spending, &row, now)?))
        })
        .await?;
    match looked {
        None => Ok(Resumed::NotPaused),
        Some(Some(cap)) => Ok(Resumed::Still(Box::new(cap))),
        Some(None) => match take_up(agent, run, by).await? {
            true => Ok(Resumed::TakenUp),
            false => Ok(Resumed::NotPaused),
        },
    }
}

/// Looks at every paused loop at `watch`'s moments, until `stop`, re-arming the timer at
/// the soonest end of a paused loop's cap period (as the spending clock tells time).
pub(crate) async fn watch(agent: AgentContext, stop: CancellationToken) {
    let clock = agent.llm.spending().clock().clone();
    let floor = agent.runs.instance().beat_interval();
    loop {
        if let Err(error) = resume_free(&agent).await {
            tracing::warn!(%error, "cannot look at the loops paused at a spend cap");
        }
        let next = agent
            .db
            .read(paused_loops::next_reset)
            .await
            .unwrap_or_else(|error| {
                tracing::warn!(%error, "cannot read when a paused loop's cap resets");
                None
            });
        let wait = next.map(|at| match u64::try_from(at - clock.now().0) {
            Ok(seconds) if seconds > 0 => Duration::from_secs(seconds),
            _ => floor,
        });
        let timer = async {
            match wait {
                Some(wait) => tokio::time::sleep(wait).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            () = stop.cancelled() => return,
            () = agent.paused.poked.notified() => {}
            () = clock.changed() => {}
            () = timer => {}
        }
    }
}

/// Takes up every paused loop none of whose caps stands now; a loop still paused by a cap
/// of another period than the one it notes is noted again (so the timer follows it).
async fn resume_free(agent: &AgentContext) -> Result<(), DbError> {
    if agent.runs.is_stopping() {
        return Ok(());
    }
    let spending = agent.llm.spending().clone();
    let now = spending.clock().now();
    let looked = agent
        .db
        .read(move |conn| {
            let mut looked = Vec::new();
            for row in paused_loops::all(conn)? {
                let cap = standing(conn, &spending, &row, now)?;
                looked.push((row, cap));
            }
            Ok(looked)
        })
        .await?;
    for (row, cap) in looked {
        match cap {
            None => {
                take_up(agent, row.run_id, None).await?;
            }
            Some(cap) if cap.resets.0 != row.resets_at => {
                let restated = row_of(row.run_id, row.loop_id, &cap);
                agent
                    .db
                    .call(move |conn| paused_loops::restate(conn, &restated))
                    .await?;
            }
            Some(_) => {}
        }
    }
    Ok(())
}

/// The first cap of the paused loop `row`'s run reached at `now`, if any.
fn standing(
    conn: &mut Conn,
    spending: &Spending,
    row: &PausedRow,
    now: UtcTime,
) -> Result<Option<Standing>, DbError> {
    let spender = spender(conn, row.run_id)?;
    spending.reached(conn, &spender, now)
}

/// Unpauses `run` (for `by`) and has this instance's actor of the run claim its loop; false
/// when another unit of work unpaused or aborted it first.
async fn take_up(agent: &AgentContext, run: RunId, by: Option<String>) -> Result<bool, DbError> {
    let bounds = agent.db.event_bounds();
    let unpaused = agent
        .db
        .call(move |conn| unpause(conn, &bounds, run, by))
        .await?;
    if unpaused {
        tracing::info!(run.id = %run, "a loop paused at a spend cap is taken up again");
        agent.runs.wake(agent, run).await;
    }
    Ok(unpaused)
}
