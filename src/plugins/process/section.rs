//! A plugin process's packet sections: the text `section/render` answered for a run's
//! next turn, asked by a reflection (off the writer) before each turn and kept per run,
//! which the section appends when the packet is assembled.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use futures_util::future::BoxFuture;
use futures_util::FutureExt;
use serde_json::Value;

use super::protocol::{SectionAnswer, SectionRequest, SECTION_RENDER};
use super::reach::{lock, Reach, KEPT_RUNS};
use crate::db::ids::RunId;
use crate::plugins::assembly::{AssemblyContext, AssemblyFilter};
use crate::plugins::reflection::{Moment, Reflecting, Reflection, ReflectionServices};
use crate::plugins::{Bucket, MessageBuilder};

/// The texts of a plugin's sections, by section and run.
type Texts = Arc<Mutex<HashMap<(usize, RunId), String>>>;

/// A packet section of a plugin process: the text its plugin last gave for the run.
pub(super) struct ProcessSection {
    pub texts: Texts,
    /// Its place among its plugin's sections.
    pub slot: usize,
    pub index: usize,
    pub priority: i32,
}

impl AssemblyFilter for ProcessSection {
    fn priority(&self) -> i32 {
        self.priority
    }

    fn apply(&self, context: &AssemblyContext<'_>, message: &mut MessageBuilder) {
        if !context.input.policy.plugin_processes.contains(self.index) {
            return;
        }
        let texts = lock(&self.texts);
        if let Some(text) = texts.get(&(self.slot, context.input.run)) {
            if !text.is_empty() {
                message.open_section(Bucket::System);
                message.push(Bucket::System, text);
            }
        }
    }
}

/// Asks the plugin for the text of each of its sections before a run's next turn.
pub(super) struct SectionRefresh {
    pub reach: Arc<Reach>,
    pub texts: Texts,
    /// The sections' names, by slot.
    pub names: Vec<String>,
}

impl SectionRefresh {
    pub(super) fn texts() -> Texts {
        Arc::default()
    }
}

impl Reflection for SectionRefresh {
    fn reflect<'a>(
        &'a self,
        _services: &'a ReflectionServices,
        at: &'a Reflecting,
    ) -> BoxFuture<'a, ()> {
        async move {
            if matches!(at.moment, Moment::BeforePanic | Moment::LoopEnded { .. }) {
                return;
            }
            let next_turn = at.turn + 1;
            let place = match self.reach.run_place(at.run) {
                Some(place) if self.reach.run(at.run) => place,
                _ => return,
            };
            for (slot, name) in self.names.iter().enumerate() {
                let request = SectionRequest {
                    section: name,
                    place: &place,
                    turn: next_turn,
                };
                let params = serde_json::to_value(request).unwrap_or(Value::Null);
                let text = match self.reach.link.call(SECTION_RENDER, params).await {
                    Ok(answer) => serde_json::from_value::<SectionAnswer>(answer)
                        .map(|answer| answer.text)
                        .unwrap_or_default(),
                    Err(error) => {
                        tracing::warn!(plugin = self.reach.link.name(), section = name.as_str(), %error, "a plugin section failed; it is left out");
                        String::new()
                    }
                };
                let mut texts = lock(&self.texts);
                if texts.len() >= KEPT_RUNS {
                    texts.clear();
                }
                texts.insert((slot, at.run), text);
            }
        }
        .boxed()
    }
}
