//! A loop's reflections (`plugins::reflection`): what the loop tells the plugins that work
//! on a run after its turns, and when. Nothing is built when no plugin reflects.

use tracing::Instrument;

use crate::agent::AgentContext;
use crate::db::enums::LoopMode;
use crate::db::ids::ProjectId;
use crate::db::models::run::LoopRow;
use crate::llm::CancellationToken;
use crate::plugins::reflection::{Moment, Reflecting, ReflectionServices};
use crate::plugins::Plugins;

/// One loop's reflections, once its model is known.
pub(crate) struct Reflector {
    services: ReflectionServices,
    at: Reflecting,
}

impl Reflector {
    /// `None` when no plugin reflects, or for a panic loop (it only compresses; the retry
    /// that follows it reflects).
    /// `latest_turn`: the run's latest turn before the loop.
    pub(crate) fn new(
        agent: &AgentContext,
        lp: &LoopRow,
        project: ProjectId,
        model_actual: &str,
        latest_turn: i32,
        cancel: &CancellationToken,
    ) -> Option<Reflector> {
        if !agent.plugins.reflects() || lp.mode == LoopMode::Panic {
            return None;
        }
        Some(Reflector {
            services: ReflectionServices {
                db: agent.db.clone(),
                llm: agent.llm.clone(),
                plugins: Plugins::clone(&agent.plugins),
                cancel: cancel.clone(),
            },
            at: Reflecting {
                run: lp.run_id,
                loop_id: lp.id,
                project,
                turn: latest_turn,
                loop_turns: 0,
                wrote_at: 0,
                model_actual: model_actual.to_owned(),
                moment: Moment::LoopEnded { proposed: false },
            },
        })
    }

    /// The loop's turn `turn` ended; `wrote`: it wrote files or knowledge.
    pub(crate) fn turn_ended(&mut self, turn: i32, wrote: bool) {
        self.at.turn = turn;
        self.at.loop_turns += 1;
        if wrote {
            self.at.wrote_at = turn;
        }
    }

    /// Runs the reflections of `moment`.
    pub(crate) async fn reflect(&mut self, agent: &AgentContext, moment: Moment) {
        self.at.moment = moment;
        agent.plugins.reflect(&self.services, &self.at).await;
    }

    /// Runs the reflections of the loop's end, after its outcome was stored and handed
    /// over (the run's next loop waits for them: see `run_actor`); `proposed`: the loop
    /// ended on proposals.
    pub(crate) async fn loop_ended(mut self, agent: &AgentContext, proposed: bool) {
        let span =
            tracing::info_span!("loop end", run.id = %self.at.run, loop.id = %self.at.loop_id);
        self.reflect(agent, Moment::LoopEnded { proposed })
            .instrument(span)
            .await;
    }
}
