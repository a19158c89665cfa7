//! Reflections: a plugin's work on a run around its turns, off the writer and outside the
//! turn, which may call a model (memory's session notes are written by a sidecar LLM call,
//! and its recall re-ranked by one). The loop awaits each reflection at four moments: before
//! the first turn of a loop with a new prompt, after a turn when the loop goes on, before a
//! panic loop compresses the context, and when a loop ends (after its outcome is stored and
//! sent to the client, before the run's next loop starts, so the reply never waits for it
//! and the next loop sees what it wrote). A
//! reflection decides for itself whether the moment needs work; one with nothing to do
//! must return at once, and one that fails logs and leaves things as they were: a
//! reflection never fails a loop.

use std::sync::Arc;

use futures_util::future::BoxFuture;

use crate::db::ids::{LoopId, ProjectId, RunId};
use crate::db::DbHandle;
use crate::llm::{CancellationToken, LlmProviders};
use crate::plugins::Plugins;

/// When a reflection is asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Moment {
    /// A loop with a new prompt (not a panic loop) is about to run its first turn: the
    /// project is scanned, the prompt is the loop row's and not yet an entry.
    LoopStarting,
    /// A turn ended and the loop goes on; `wrote`: the turn wrote files or knowledge.
    TurnEnded { wrote: bool },
    /// The context overflowed and a panic loop is about to compress it.
    BeforePanic,
    /// The loop ended (completed, proposed or failed; never an aborted one) and its outcome
    /// was handed over; `proposed`: it ended on proposals a person has yet to decide.
    LoopEnded { proposed: bool },
}

/// The run a reflection is asked about.
#[derive(Debug, Clone)]
pub struct Reflecting {
    pub run: RunId,
    pub loop_id: LoopId,
    pub project: ProjectId,
    /// The run-wide number of the run's latest turn (0 before its first).
    pub turn: i32,
    /// How many turns this loop has taken.
    pub loop_turns: i32,
    /// The run-wide number of this loop's latest turn that wrote files or knowledge (0 when
    /// none did).
    pub wrote_at: i32,
    /// The catalogue `actual` of the loop's model, for a call through [`LlmProviders`].
    pub model_actual: String,
    pub moment: Moment,
}

/// What a reflection works with: the store and the models.
#[derive(Clone)]
pub struct ReflectionServices {
    pub db: DbHandle,
    pub llm: LlmProviders,
    /// The plugins, whose `llm.request` and `llm.response` filters a model call passes.
    pub plugins: Plugins,
    /// The loop's; a reflection's model call drops when the loop is aborted.
    pub cancel: CancellationToken,
}

/// A plugin's work after turns.
pub trait Reflection: Send + Sync {
    /// Does what `at` needs, if anything.
    fn reflect<'a>(
        &'a self,
        services: &'a ReflectionServices,
        at: &'a Reflecting,
    ) -> BoxFuture<'a, ()>;
}

/// The reflections, in registration order.
#[derive(Default, Clone)]
pub struct Reflections {
    reflections: Vec<Arc<dyn Reflection>>,
}

impl Reflections {
    pub fn register(&mut self, reflection: Arc<dyn Reflection>) {
        self.reflections.push(reflection);
    }

    /// Whether none is registered (the loop then builds nothing to ask with).
    pub fn is_empty(&self) -> bool {
        self.reflections.is_empty()
    }

    /// Runs each in turn.
    pub async fn run(&self, services: &ReflectionServices, at: &Reflecting) {
        for reflection in &self.reflections {
            reflection.reflect(services, at).await;
        }
    }
}
