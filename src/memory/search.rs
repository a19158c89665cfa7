//! `<recall>words</recall>`: the model searches its project's memory (its facts, the
//! server-wide ones, then replaced ones, best first); the result entry lists the first ten.

use std::borrow::Cow;

use serde_json::json;

use crate::context::view::EntryView;
use crate::db::enums::EntryStatus;
use crate::db::enums::LoopMode;
use crate::db::queries::{memory, runs};
use crate::db::DbError;
use crate::parser::{Command, TagSpec, TaggedText};
use crate::plugins::bundled::tools::fail;
use crate::plugins::policy::ToolPolicy;
use crate::plugins::tool::{
    Availability, ClientCall, Handled, TargetKind, ToolEffect, ToolError, ToolInfo, ToolScope,
    TypedTool,
};
use crate::plugins::writes::finish;

use super::recalled::{candidates, line};
use super::remember::OFF;

pub(super) struct Recall;

/// Most items one `<recall>` lists.
const LISTED: usize = 10;

impl ToolInfo for Recall {
    fn name(&self) -> &'static str {
        "recall"
    }

    fn effect(&self) -> ToolEffect {
        ToolEffect::Reads
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
        TagSpec::BODY
    }

    fn doc(&self) -> &'static str {
        include_str!("../plugins/text/memory/recall.md")
    }

    fn full_view(&self, entry: &EntryView<'_>) -> String {
        let query = entry.attribute("query").unwrap_or_default();
        format!("# recall {query}\n{}", entry.body)
    }

    fn summary_view(&self, entry: &EntryView<'_>) -> String {
        entry.attribute("query").unwrap_or_default().to_owned()
    }

    fn command_from_call(&self, call: &ClientCall) -> Command {
        Command::Other {
            name: self.name().to_owned(),
            content: TaggedText {
                body: call.path.clone(),
                attributes: Vec::new(),
            },
        }
    }

    fn target_kind(&self) -> TargetKind {
        TargetKind::Text
    }
}

impl TypedTool for Recall {
    type Input = String;

    fn input<'c>(&self, command: &'c Command) -> Option<Cow<'c, String>> {
        match command {
            Command::Other { name, content } if name == self.name() => {
                Some(Cow::Borrowed(&content.body))
            }
            _ => None,
        }
    }

    fn target(&self, query: &String) -> String {
        query.trim().to_owned()
    }

    fn handle(
        &self,
        scope: &mut ToolScope<'_>,
        query: &String,
        result_path: &str,
    ) -> Result<Handled, ToolError> {
        let run = runs::get_run(scope.conn, scope.run_id)?
            .ok_or_else(|| DbError::NotFound(format!("run {}", scope.run_id)))?;
        if !memory::is_enabled(scope.conn, run.project_id)? {
            return fail(scope, result_path, EntryStatus::Forbidden, OFF.trim());
        }
        if memory::query_words(query).is_empty() {
            let message = "give words of at least three letters (or two Chinese, Japanese or Korean characters) to look for";
            return fail(scope, result_path, EntryStatus::BadRequest, message);
        }
        let mut items = candidates(scope.conn, run.project_id, query)?;
        items.truncate(LISTED);
        let body = match items.is_empty() {
            true => "Nothing remembered matches.".to_owned(),
            false => items.iter().map(line).collect::<Vec<_>>().join("\n"),
        };
        let attributes = json!({ "query": query.trim(), "items": items.len() });
        finish(scope, result_path, EntryStatus::Ok, &body, Some(attributes))
    }
}
