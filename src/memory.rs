//! Memory across runs (the plugin `memory`): durable facts a project keeps (and a
//! server-wide layer every project shares), recalled into the packet when a prompt arrives,
//! searched and written by the model, listed and edited by clients. The facts, their
//! history and the per-project switch live in the store (`db::queries::memory`); what a
//! prompt recalled is the run's entry `memory://recall`, so clients see it and the budget
//! counts it like any other.
//!
//! - `prune.rs`: transient facts pruned once their project moved on
//!   (`RUMMY_MEMORY_TRANSIENT_RUNS`), before a prompt recalls;
//! - `recalled.rs`: what a prompt recalls, how recalled items read and which a budget
//!   keeps; `recall.rs`: the preparation that recalls on a loop's prompt, within
//!   `RUMMY_MEMORY_RECALL_TOKENS`; `rerank.rs`: the
//!   reflection that, before a loop's first turn, has a model order the candidates that
//!   score alike where that budget cuts (`RUMMY_MEMORY_RERANK_MODEL`);
//! - `section.rs`: `<memory>`, the section the recall renders in;
//! - `remember.rs`, `search.rs`: the model's tools `<remember>` and `<recall>`;
//! - `methods.rs`: the clients' `memory/*` methods;
//! - `notes.rs`, `session.rs`: a run's session notes (`memory://session`), kept by a
//!   sidecar call of the run's model after meaningful work, before a panic compresses the
//!   context and at a loop's end; `consolidate.rs`: the notes' lasting facts promoted to
//!   project memory when a loop ends and before a panic compresses the context; `session_method.rs`: `memory/session` and
//!   `memory/session/set`, the notes for clients to read and to write or erase;
//! - `sidecar.rs`: the one way memory asks a model beside the turns (the notes' refresh,
//!   the re-rank).
//!
//! A project whose memory is switched off recalls nothing, writes nothing and keeps no notes.

mod consolidate;
mod methods;
mod notes;
mod prune;
mod recall;
mod recalled;
mod remember;
mod rerank;
mod search;
mod section;
mod session;
mod session_method;
mod sidecar;

use std::sync::Arc;
use std::time::Duration;

use crate::config::MemorySettings;
use crate::context::TokenMath;
use crate::db::functions::estimate_tokens;
use crate::db::queries::memory::HistoryBounds;
use crate::plugins::assembly::Chain;
use crate::plugins::tool::ToolSettings;
use crate::plugins::{Plugin, Registrar};

pub(crate) use recall::RECALL_PATH;
pub(crate) use session::{stored_notes, SESSION_PATH};

/// The plugin.
pub(crate) struct Memory {
    settings: MemorySettings,
}

impl Memory {
    pub(crate) fn new(settings: MemorySettings) -> Memory {
        Memory { settings }
    }
}

impl Plugin for Memory {
    fn name(&self) -> &'static str {
        "memory"
    }

    fn register(self: Box<Self>, registrar: &mut Registrar<'_>) {
        let tools = registrar.settings();
        let tokens = TokenMath::new(tools.token_divisor);
        let recall_budget = i64::from(self.settings.recall_tokens);
        let orders = Arc::new(rerank::RecallOrders::default());
        let history = HistoryBounds {
            per_topic: usize::try_from(self.settings.history_per_topic.max(1))
                .unwrap_or(usize::MAX),
            items: usize::try_from(self.settings.history_items.max(1)).unwrap_or(usize::MAX),
        };
        registrar.preparation(prune::PruneTransient {
            runs: self.settings.transient_runs,
        });
        registrar.preparation(recall::RecallOnPrompt {
            budget: recall_budget,
            tokens,
            orders: Arc::clone(&orders),
        });
        if let Some(model) = self
            .settings
            .rerank_model
            .clone()
            .filter(|_| recall_budget > 0)
        {
            registrar.reflection(rerank::RecallRerank {
                model,
                ties: usize::try_from(self.settings.rerank_ties.max(2)).unwrap_or(usize::MAX),
                timeout: Duration::from_secs(u64::from(self.settings.rerank_timeout_secs)),
                budget: recall_budget,
                tokens,
                orders,
            });
        }
        if self.settings.session_tokens > 0 {
            registrar.reflection(session::SessionUpkeep {
                budget: i64::from(self.settings.session_tokens),
                every_turns: i32::try_from(self.settings.session_every_turns.max(1))
                    .unwrap_or(i32::MAX),
                timeout: Duration::from_secs(u64::from(self.settings.session_timeout_secs)),
                tokens,
                history,
            });
            registrar.preparation(session::NotesOffWithMemory);
            registrar.method(session_method::SessionSet {
                budget: i64::from(self.settings.session_tokens),
                tokens,
            });
        }
        registrar.section(Chain::User, section::MemorySection);
        registrar.tool(remember::Remember { history });
        registrar.tool(search::Recall);
        methods::register(registrar, tools, history);
        registrar.method(session_method::SessionMethod);
    }
}

/// Longest topic, in characters (the store's bound).
const MAX_TOPIC_CHARS: usize = 200;

/// Why a fact cannot be written (an empty or overlong topic, an empty body, a body over
/// `RUMMY_MAX_ENTRY_TOKENS`); `None` when it can. The topic is checked as it is stored.
fn fact_problem(topic: &str, body: &str, tools: ToolSettings) -> Option<String> {
    let topic = crate::db::queries::memory::normalize_topic(topic);
    if topic.is_empty() {
        return Some("a fact needs a topic".to_owned());
    }
    if topic.chars().count() > MAX_TOPIC_CHARS {
        return Some(format!("a topic has at most {MAX_TOPIC_CHARS} characters"));
    }
    if body.trim().is_empty() {
        return Some("a fact needs a body".to_owned());
    }
    let tokens = estimate_tokens(body, tools.token_divisor);
    (tokens > tools.max_entry_tokens).then(|| {
        format!(
            "a fact has at most {} tokens (this one has {tokens}); split it into facts of \
             their own topics",
            tools.max_entry_tokens
        )
    })
}
