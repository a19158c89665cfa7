//! `<remember topic="…">fact</remember>`: the model writes a fact to its project's memory.
//! The result entry `remember://turn_N/<topic>` repeats the fact, so the write gate weighs
//! it like any other growth of the context: refused, the fact is not written either (the
//! command's savepoint is rolled back). A fact on a remembered topic replaces the older
//! one, which the history keeps — unless a person set that one: it stays, and the model
//! gets 409 with the person's fact (to follow, or to raise as an unknown or a question).
//! `<remember topic="…" transient>` keeps a fact that holds only while the work at hand
//! lasts; it is pruned once the project moved on (`RUMMY_MEMORY_TRANSIENT_RUNS`).

use std::borrow::Cow;

use serde_json::json;

use crate::context::view::EntryView;
use crate::db::enums::EntryStatus;
use crate::db::enums::LoopMode;
use crate::db::models::memory::MemoryFactForm;
use crate::db::queries::memory::{self, HistoryBounds, Written};
use crate::db::queries::runs;
use crate::db::DbError;
use crate::parser::{AttrValue, Command, TagSpec, TaggedText};
use crate::plugins::bundled::tools::{extra_attrs, extra_text, fail};
use crate::plugins::policy::ToolPolicy;
use crate::plugins::tool::{
    Availability, ClientCall, Handled, TargetKind, ToolError, ToolInfo, ToolScope, TypedTool,
};
use crate::plugins::writes::finish;

/// What the model is told when memory is off.
pub(super) const OFF: &str = include_str!("../plugins/text/memory/off.md");
/// What the model is told, before the person's fact, when it remembers another on its topic.
const PERSONS: &str = include_str!("../plugins/text/memory/persons.md");

pub(super) struct Remember {
    /// How much history a replaced fact's topic keeps.
    pub history: HistoryBounds,
}

/// A fact as the model wrote it.
#[derive(Debug, Clone)]
pub(super) struct Fact {
    topic: String,
    body: String,
    /// Marked `transient`: it holds only while the work at hand lasts.
    transient: bool,
}

impl ToolInfo for Remember {
    fn name(&self) -> &'static str {
        "remember"
    }

    /// A panic loop only frees room: it neither searches memory nor adds to it. A window
    /// too small for the optional tools' docs goes without.
    fn availability(&self, policy: &ToolPolicy) -> Availability {
        match policy.mode {
            LoopMode::Panic => Availability::Excluded,
            LoopMode::Ask | LoopMode::Act if !policy.optional_tools => Availability::Excluded,
            LoopMode::Ask | LoopMode::Act => Availability::Offered,
        }
    }

    fn tag(&self) -> TagSpec {
        TagSpec {
            main_field: "body",
            attributes: &["topic", "transient", "body"],
        }
    }

    fn doc(&self) -> &'static str {
        include_str!("../plugins/text/memory/remember.md")
    }

    fn full_view(&self, entry: &EntryView<'_>) -> String {
        let topic = entry.attribute("topic").unwrap_or_default();
        format!("# remember {topic}\n{}", entry.body)
    }

    fn summary_view(&self, entry: &EntryView<'_>) -> String {
        entry.attribute("topic").unwrap_or_default().to_owned()
    }

    fn command_from_call(&self, call: &ClientCall) -> Command {
        Command::Other {
            name: self.name().to_owned(),
            content: TaggedText {
                body: call.body.clone().unwrap_or_default(),
                attributes: [("topic".to_owned(), AttrValue::Text(call.path.clone()))]
                    .into_iter()
                    .chain(
                        extra_attrs(&call.attributes, &[])
                            .into_iter()
                            .filter(|(key, _)| key == "transient"),
                    )
                    .collect(),
            },
        }
    }

    fn target_kind(&self) -> TargetKind {
        TargetKind::Text
    }
}

/// Whether a `transient` attribute marks the fact transient: bare, or a text other than
/// `false`, `no` or `0`.
fn marks_transient(value: &AttrValue) -> bool {
    value.as_text().is_none_or(|text| {
        !matches!(
            text.trim().to_ascii_lowercase().as_str(),
            "false" | "no" | "0"
        )
    })
}

impl TypedTool for Remember {
    type Input = Fact;

    fn input<'c>(&self, command: &'c Command) -> Option<Cow<'c, Fact>> {
        match command {
            Command::Other { name, content } if name == self.name() => Some(Cow::Owned(Fact {
                // The parser heals a tag's first unknown attribute into `path`.
                topic: extra_text(&content.attributes, "topic")
                    .or_else(|| extra_text(&content.attributes, "path"))
                    .unwrap_or_default()
                    .to_owned(),
                body: content.body.clone(),
                transient: content
                    .attributes
                    .iter()
                    .any(|(key, value)| key == "transient" && marks_transient(value)),
            })),
            _ => None,
        }
    }

    fn target(&self, fact: &Fact) -> String {
        memory::normalize_topic(&fact.topic)
    }

    fn handle(
        &self,
        scope: &mut ToolScope<'_>,
        fact: &Fact,
        result_path: &str,
    ) -> Result<Handled, ToolError> {
        let run = runs::get_run(scope.conn, scope.run_id)?
            .ok_or_else(|| DbError::NotFound(format!("run {}", scope.run_id)))?;
        if !memory::is_enabled(scope.conn, run.project_id)? {
            return fail(scope, result_path, EntryStatus::Forbidden, OFF.trim());
        }
        if let Some(problem) = super::fact_problem(&fact.topic, &fact.body, scope.settings) {
            let status = if fact.body.trim().is_empty() || fact.topic.trim().is_empty() {
                EntryStatus::BadRequest
            } else {
                EntryStatus::TooLarge
            };
            return fail(scope, result_path, status, &problem);
        }
        let form = MemoryFactForm {
            project_id: Some(run.project_id),
            topic: fact.topic.clone(),
            body: fact.body.trim().to_owned(),
            run_id: Some(scope.run_id),
            person: None,
            by_person: false,
            transient: fact.transient,
        };
        let (stored, written) = memory::write_fact(scope.conn, &form, self.history)?;
        let written = match written {
            Written::Created => "created",
            Written::Replaced => "replaced",
            Written::Unchanged => "unchanged",
            Written::KeptPersons => {
                let text = format!("{}{}", PERSONS, stored.body);
                return fail(scope, result_path, EntryStatus::Conflict, &text);
            }
        };
        let attributes = json!({ "topic": stored.topic, "written": written });
        finish(
            scope,
            result_path,
            EntryStatus::Ok,
            &stored.body,
            Some(attributes),
        )
    }
}
