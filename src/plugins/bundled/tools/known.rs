//! `known`: file a fact under a path with summary keywords. A lifecycle signal: written
//! while the response is recorded, never cancelled. A path without a scheme goes under
//! `known://`; a fact over the size limit is refused with 413 and a note on splitting it.

use std::borrow::Cow;

use serde_json::{Map, Value};

use crate::context::view::EntryView;
use crate::db::enums::{Category, EntryStatus, Fidelity};
use crate::db::functions::estimate_tokens;
use crate::db::models::entry::EntryUpsertForm;
use crate::db::paths::is_file;
use crate::db::paths::slug_path;
use crate::db::queries::entries;
use crate::parser::{Command, KnownCommand, TagSpec};
use crate::plugins::bundled::tools::{extra_attrs, fail, headed, summary_attribute};
use crate::plugins::tool::{
    ClientCall, Handled, SchemeSpec, ToolError, ToolInfo, ToolKind, ToolScope, TypedTool,
};
use crate::plugins::writes::upsert;

pub(crate) struct Known;

/// Longest model-given path kept; a longer one is reasoning that bled into the attribute,
/// and the fact is filed under a slug instead.
const PATH_MAX_CHARS: usize = 256;

/// Characters of the body shown at summary fidelity when no summary keywords exist.
const SUMMARY_PREFIX_CHARS: usize = 80;

impl ToolInfo for Known {
    fn name(&self) -> &'static str {
        "known"
    }

    fn scheme(&self) -> SchemeSpec {
        SchemeSpec::visible(Category::Data)
    }

    fn kind(&self) -> ToolKind {
        ToolKind::Lifecycle
    }

    fn tag(&self) -> TagSpec {
        TagSpec {
            main_field: "body",
            attributes: &["path", "summary", "body"],
        }
    }

    fn doc(&self) -> &'static str {
        include_str!("../../text/tools/known.md")
    }

    fn full_view(&self, entry: &EntryView<'_>) -> String {
        headed("known", entry.path, entry.body)
    }

    fn summary_view(&self, entry: &EntryView<'_>) -> String {
        match entry.attribute("summary") {
            Some(summary) if !summary.is_empty() => String::new(),
            _ => entry.body.chars().take(SUMMARY_PREFIX_CHARS).collect(),
        }
    }

    fn command_from_call(&self, call: &ClientCall) -> Command {
        Command::Known(KnownCommand {
            path: Some(call.path.clone()).filter(|path| !path.is_empty()),
            body: call.body.clone().unwrap_or_default(),
            attributes: extra_attrs(&call.attributes, &["path", "body"]),
        })
    }
}

impl TypedTool for Known {
    type Input = KnownCommand;

    fn input<'c>(&self, command: &'c Command) -> Option<Cow<'c, KnownCommand>> {
        match command {
            Command::Known(known) => Some(Cow::Borrowed(known)),
            _ => None,
        }
    }

    fn record(
        &self,
        scope: &mut ToolScope<'_>,
        known: &KnownCommand,
    ) -> Result<Option<Handled>, ToolError> {
        if known.body.trim().is_empty() {
            return Ok(None);
        }
        let summary = summary_attribute(&known.attributes);
        let path = known_path(known, summary.as_deref());
        let tokens = estimate_tokens(&known.body, scope.settings.token_divisor);
        let limit = scope.settings.max_entry_tokens;
        if tokens > limit {
            let note_path = entries::free_path(scope.conn, scope.run_id, &path)?;
            let note = too_large(&path, tokens, limit);
            return fail(scope, &note_path, EntryStatus::TooLarge, &note).map(Some);
        }
        let mut attributes = Map::new();
        for (name, value) in &known.attributes {
            attributes.insert(name.clone(), value.to_json());
        }
        if let Some(summary) = summary {
            attributes.insert("summary".into(), Value::String(summary));
        }
        attributes.insert("error".into(), Value::Null);
        let fact = EntryUpsertForm {
            fidelity: Some(Fidelity::Full),
            attributes: Some(Value::Object(attributes)),
            ..upsert(scope, &path, &known.body, EntryStatus::Ok)
        };
        let row = entries::upsert_entry(scope.conn, &fact)?;
        Ok(Some(Handled::at(row.path)))
    }
}

/// The model's path (a bare one under `known://`), else a slug of the summary or body.
fn known_path(known: &KnownCommand, summary: Option<&str>) -> String {
    let given = known.path.as_deref().map(str::trim);
    match given.filter(|path| !path.is_empty() && path.chars().count() <= PATH_MAX_CHARS) {
        Some(path) if is_file(path) => format!("known://{}", path.trim_start_matches('/')),
        Some(path) => path.to_owned(),
        None => slug_path("known", summary.unwrap_or(&known.body)),
    }
}

fn too_large(path: &str, tokens: i32, limit: i32) -> String {
    format!(
        "Not saved: this fact for {path} is {tokens} tokens, over the {limit}-token limit \
         for one entry. YOU MUST split it into several <known> entries of at most {limit} \
         tokens each under one topic path, e.g. <known path=\"{path}/part_1\" \
         summary=\"keywords\">first part</known> and <known path=\"{path}/part_2\" \
         summary=\"keywords\">second part</known>."
    )
}

#[cfg(test)]
mod tests {
    use crate::db::enums::EntryStatus;
    use serde_json::json;

    use crate::db::enums::Fidelity;
    use crate::plugins::bundled::tools::testing::TestRun;

    #[test]
    fn summary_survives_later_writes_and_fidelity_changes() {
        let mut run = TestRun::new();
        run.respond("<known path=\"known://db\" summary=\"db,postgres\">Postgres 15</known>");
        run.respond("<known path=\"known://db\">Postgres 16</known>");
        run.respond("<set path=\"known://db\" fidelity=\"summary\"/>");
        let entry = run.entry("known://db").unwrap();
        assert_eq!(
            (entry.body.as_str(), entry.fidelity),
            ("Postgres 16", Fidelity::Summary)
        );
        assert_eq!(run.attribute("known://db", "summary"), json!("db,postgres"));
        assert_eq!(run.projected("known://db"), "db,postgres");
    }

    #[test]
    fn slug_paths_and_empty_facts() {
        let mut run = TestRun::new();
        run.respond("<known summary=\"deploy target\">eu-west</known>");
        assert!(run.entry("known://deploy%20target").is_some());
        let outcome = run.respond("<known path=\"known://x\">   </known>");
        assert_eq!(outcome.calls[0].status, EntryStatus::NoContent);
        assert!(run.entry("known://x").is_none());
    }

    #[test]
    fn oversized_facts_are_refused_with_a_splitting_note() {
        let mut run = TestRun::new();
        run.put("known://big", "old");
        let outcome = run.respond(&format!(
            "<known path=\"known://big\">{}</known><summarize>done</summarize>",
            "word ".repeat(60)
        ));
        assert_eq!(run.entry("known://big").unwrap().body, "old");
        let note = run.entry("known://big_2").unwrap();
        assert_eq!(note.status, EntryStatus::TooLarge);
        assert!(note.body.contains("YOU MUST split it"));
        assert_eq!(outcome.errors[0].status, EntryStatus::TooLarge);
        assert_eq!(
            outcome.summary_text, None,
            "a refused fact means the task is not done"
        );
    }
}
