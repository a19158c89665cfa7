//! The bundled tool plugins and what their handlers share: writing result entries,
//! selecting entries by path or pattern, listings, views, and fidelity names.
//!
//! Each tool has one file, except pairs that differ only in name and a rule or two: `cp`
//! and `mv` are one [`transfer::Transfer`], `env` and `sh` one
//! [`command_proposal::CommandProposal`], `summarize` and `update` one
//! [`status_signal::StatusSignal`], and `think` with the legacy `thought` and `mcp`, one
//! [`kept::Kept`].
//! A tool is one file: its name, tag, docs, views, scheme and flags, its input and what it
//! does; bundling it is one more line in `bundled` (a tool outside the crate is
//! registered the same way, with [`Plugins::with`]).

pub(crate) mod ask_user;
pub(crate) mod command_proposal;
pub(crate) mod files;
pub(crate) mod get;
pub(crate) mod kept;
pub(crate) mod known;
pub(crate) mod merge;
mod outcome;
pub(crate) mod rm;
pub(crate) mod search;
pub(crate) mod set;
pub(crate) mod status_signal;
#[cfg(test)]
pub(crate) mod testing;
pub(crate) mod transfer;
pub(crate) mod unknown;

use crate::db::Conn;
use serde_json::{Map, Value};

use crate::context::view::EntryView;
use crate::db::enums::{EntryStatus, Fidelity};
use crate::db::ids::RunId;
use crate::db::models::entry::{EntryRow, Selector};
use crate::db::paths::normalize_path;
use crate::db::queries::entries;
use crate::db::DbError;
use crate::hedberg::{Pattern, PatternKind};
use crate::parser::{AttrValue, ExtraAttrs};
use crate::plugins::tool::{ToolError, ToolScope};
use crate::plugins::Plugins;

pub(crate) use outcome::{fail, not_found, preview, propose_separately, propose_text, report};

/// `plugins` with every bundled tool, in display order: gather → reason → act →
/// communicate, then the unlisted `think`, `thought` and `mcp`.
pub(crate) fn bundled(plugins: Plugins) -> Plugins {
    plugins
        .with(get::Get)
        .with(set::Set)
        .with(known::Known)
        .with(unknown::Unknown)
        .with(command_proposal::CommandProposal::ENV)
        .with(command_proposal::CommandProposal::SH)
        .with(rm::Rm)
        .with(transfer::Transfer::CP)
        .with(transfer::Transfer::MV)
        .with(search::Search)
        .with(status_signal::StatusSignal::SUMMARIZE)
        .with(status_signal::StatusSignal::UPDATE)
        .with(ask_user::AskUser)
        .with(kept::Kept::THINK)
        .with(kept::Kept::THOUGHT)
        .with(kept::Kept::MCP)
}

/// Longest `summary` attribute kept, in characters.
pub(crate) const SUMMARY_MAX_CHARS: usize = 80;

/// The fidelity a model wrote, or the message telling it the four when it misspelled one.
pub(crate) fn parse_fidelity(text: &str) -> Result<Fidelity, String> {
    Fidelity::parse(text.trim().to_ascii_lowercase().as_str()).ok_or_else(|| {
        format!("Unknown fidelity \"{text}\". Use one of: full, summary, index, archive.")
    })
}

/// Whether `path` (with an optional body filter) selects by pattern rather than by path.
pub(crate) fn is_pattern(path: &str, filter: Option<&str>) -> bool {
    filter.is_some_and(|filter| !filter.is_empty())
        || Pattern::compile(path).map_or(true, |pattern| pattern.kind() != PatternKind::Literal)
}

/// The entries `path` names: one entry by its normalised path, or every match of a
/// pattern (and body filter), ordered by path. Pattern work past the unit's budget is
/// [`ToolError::WorkLimit`] (the matches would be incomplete).
pub(crate) fn select(
    scope: &mut ToolScope<'_>,
    path: &str,
    filter: Option<&str>,
) -> Result<Vec<EntryRow>, ToolError> {
    select_in(scope.conn, scope.run_id, path, filter)
}

/// [`select`] over any connection (a reader preparing work beside the writer).
pub(crate) fn select_in(
    conn: &mut Conn,
    run_id: RunId,
    path: &str,
    filter: Option<&str>,
) -> Result<Vec<EntryRow>, ToolError> {
    let filter = filter.filter(|filter| !filter.is_empty());
    if !is_pattern(path, filter) {
        return Ok(entries::get_entry(conn, run_id, path)?
            .into_iter()
            .collect());
    }
    let path = match Pattern::compile(path).map(|pattern| pattern.kind()) {
        Ok(PatternKind::Literal) => normalize_path(path),
        _ => path.to_owned(),
    };
    let selector = Selector::Pattern {
        path,
        body: filter.map(str::to_owned),
    };
    match entries::list_entries(conn, run_id, &selector, None, None) {
        Err(DbError::WorkLimit(limit)) => Err(ToolError::WorkLimit(limit)),
        other => Ok(other?),
    }
}

/// [`select`] without pending proposals and without the command's own result entry: what
/// an action may change.
pub(crate) fn select_settled(
    scope: &mut ToolScope<'_>,
    path: &str,
    filter: Option<&str>,
    result_path: &str,
) -> Result<Vec<EntryRow>, ToolError> {
    Ok(select(scope, path, filter)?
        .into_iter()
        .filter(|row| row.path != result_path && row.status != EntryStatus::Proposed)
        .collect())
}

/// The rows' paths, comma separated.
pub(crate) fn paths_of(rows: &[EntryRow]) -> String {
    let paths: Vec<&str> = rows.iter().map(|row| row.path.as_str()).collect();
    paths.join(", ")
}

/// `<header>: <n> matched (<tokens> tokens)` and one `<path> (<tokens>)` line per row.
pub(crate) fn listing(header: &str, rows: &[EntryRow]) -> String {
    let total: i64 = rows.iter().map(|row| i64::from(row.tokens_full)).sum();
    let mut text = format!("{header}: {} matched ({total} tokens)", rows.len());
    for row in rows {
        text.push_str(&format!("\n{} ({})", row.path, row.tokens_full));
    }
    text
}

/// `path="<p>"[ body="<filter>"]`, the header of a listing.
pub(crate) fn pattern_header(tool: &str, path: &str, filter: Option<&str>) -> String {
    match filter.filter(|filter| !filter.is_empty()) {
        Some(filter) => format!("{tool} path=\"{path}\" body=\"{filter}\""),
        None => format!("{tool} path=\"{path}\""),
    }
}

/// `# <tool> <subject>` then the body on the next line when there is one.
pub(crate) fn headed(tool: &str, subject: &str, body: &str) -> String {
    let head = if subject.is_empty() {
        format!("# {tool}")
    } else {
        format!("# {tool} {subject}")
    };
    if body.is_empty() {
        head
    } else {
        format!("{head}\n{body}")
    }
}

/// `# <tool> <attribute>` and the body, unless the body is still that attribute's text (a
/// proposal not yet answered).
pub(crate) fn echoed(tool: &str, entry: &EntryView<'_>, attribute: &str) -> String {
    let subject = entry.attribute(attribute).unwrap_or_default();
    let body = if entry.body == subject {
        ""
    } else {
        entry.body
    };
    headed(tool, subject, body)
}

/// A string attribute of a view's entry, else `fallback`.
pub(crate) fn attribute_or<'a>(entry: &'a EntryView<'_>, name: &str, fallback: &'a str) -> &'a str {
    entry
        .attribute(name)
        .filter(|text| !text.is_empty())
        .unwrap_or(fallback)
}

/// The text of an extra attribute, when it has one.
pub(crate) fn extra_text<'a>(attributes: &'a ExtraAttrs, name: &str) -> Option<&'a str> {
    attributes
        .iter()
        .find(|(key, _)| key == name)
        .and_then(|(_, value)| value.as_text())
        .filter(|text| !text.is_empty())
}

/// A summary attribute cut to [`SUMMARY_MAX_CHARS`].
pub(crate) fn summary_attribute(attributes: &ExtraAttrs) -> Option<String> {
    extra_text(attributes, "summary").map(|text| text.chars().take(SUMMARY_MAX_CHARS).collect())
}

/// Client attributes as parser attributes (strings as text, `true` as a flag).
pub(crate) fn extra_attrs(attributes: &Map<String, Value>, skip: &[&str]) -> ExtraAttrs {
    attributes
        .iter()
        .filter(|(key, _)| !skip.contains(&key.as_str()))
        .filter_map(|(key, value)| {
            let value = match value {
                Value::String(text) => AttrValue::Text(text.clone()),
                Value::Bool(true) => AttrValue::Flag,
                Value::Number(number) => AttrValue::Text(number.to_string()),
                _ => return None,
            };
            Some((key.clone(), value))
        })
        .collect()
}

/// `Some(text)` unless it is empty.
pub(crate) fn non_empty(text: Option<&str>) -> Option<&str> {
    text.filter(|text| !text.trim().is_empty())
}

/// Why the loop's mode forbids changing project files (ask and panic mode), if it does.
pub(crate) fn file_changes_forbidden(
    tool: &str,
    policy: &crate::plugins::policy::ToolPolicy,
) -> Option<String> {
    use crate::db::enums::LoopMode;
    match policy.mode {
        LoopMode::Act => None,
        LoopMode::Ask => Some(format!(
            "<{tool}> on project files is not allowed in ask mode: files MUST NOT change. \
             Work on known:// entries instead."
        )),
        LoopMode::Panic => Some(format!(
            "<{tool}> on project files is not allowed while freeing context. Lower the \
             fidelity of entries with <set path=\"...\" fidelity=\"index\"/> instead."
        )),
    }
}

#[cfg(test)]
mod view_tests {
    use crate::db::enums::Fidelity;
    use crate::plugins::bundled::tools::testing::TestRun;
    use crate::plugins::engine::resolve::Resolution;

    fn at_summary(run: &mut TestRun, path: &str) -> String {
        run.respond(&format!("<set path=\"{path}\" fidelity=\"summary\"/>"));
        assert_eq!(run.entry(path).unwrap().fidelity, Fidelity::Summary);
        run.projected(path)
    }

    #[test]
    fn status_signals_show_their_text_at_every_visible_fidelity() {
        let mut run = TestRun::new();
        run.respond("<update>Reading auth</update><summarize>Done here</summarize>");
        assert_eq!(
            run.projected("update://Reading%20auth"),
            "# update\nReading auth"
        );
        assert_eq!(
            at_summary(&mut run, "summarize://Done%20here"),
            "# summarize\nDone here"
        );
    }

    #[test]
    fn command_results_summarize_to_their_command_or_question() {
        let mut run = TestRun::new();
        run.respond("<sh>make test</sh>");
        run.resolve("sh://turn_1/make%20test", Resolution::Accept, Some("ok"))
            .unwrap();
        assert_eq!(
            run.projected("sh://turn_1/make%20test"),
            "# sh make test\nok"
        );
        assert_eq!(at_summary(&mut run, "sh://turn_1/make%20test"), "make test");
        run.respond("<ask_user question=\"Go?\" options=\"yes, no\"/>");
        let ask = "ask_user://turn_3/Go%3F";
        run.resolve(ask, Resolution::Accept, Some("yes")).unwrap();
        assert_eq!(at_summary(&mut run, ask), "Go? → yes");
    }

    #[test]
    fn a_question_without_an_answer_shows_why() {
        let mut run = TestRun::new();
        run.policy.no_interaction = true;
        run.respond("<ask_user question=\"Go?\"/>");
        let refused = run.projected("ask_user://turn_1/Go%3F");
        assert!(
            refused.starts_with("# ask_user\n<ask_user> is not available here"),
            "{refused}"
        );
        run.policy.no_interaction = false;
        run.respond("<ask_user question=\"Stop?\"/>");
        let ask = "ask_user://turn_2/Stop%3F";
        assert_eq!(run.projected(ask), "# ask_user\n# Question: Stop?");
        run.resolve(ask, Resolution::Reject, Some("not now"))
            .unwrap();
        assert_eq!(run.projected(ask), "# ask_user\n# Question: Stop?\nnot now");
    }
}
