//! `get`: load entries into context (promote to full), list them without loading
//! (`preview`), or read some lines of one entry without changing anything. A plain `http`
//! or `https` URL is fetched (before the unit of work: its gather half,
//! [`crate::plugins::bundled::web::Pages`]) and
//! stored as the entry at that URL, in the `data` section like a file; under `noWeb` it is
//! refused.

use std::borrow::Cow;

use crate::context::view::EntryView;
use serde_json::json;

use crate::db::enums::{EntryStatus, Fidelity};
use crate::db::paths::normalize_path;
use crate::db::queries::selected;
use crate::parser::{Command, GetCommand, Selection, TagSpec};
use crate::plugins::bundled::tools::{
    attribute_or, fail, headed, is_pattern, listing, non_empty, not_found, parse_fidelity,
    paths_of, pattern_header, preview, report, select,
};
use crate::plugins::bundled::web::{failure_status, once_each, Pages};
use crate::plugins::gather::{Gather, Gathering};
use crate::plugins::policy::ToolPolicy;
use crate::plugins::tool::{
    ClientCall, Handled, ToolEffect, ToolError, ToolInfo, ToolScope, TypedTool,
};
use crate::plugins::writes::write_row;

pub(crate) struct Get;

const NAME: &str = "get";

/// The URL a get fetches: a plain `http(s)` URL, with no body filter, preview, line range or
/// `*` glob (those work on the entries already stored).
pub(crate) fn url_of(get: &GetCommand) -> Option<&str> {
    let path = non_empty(get.selection.path.as_deref())?.trim();
    let scheme = path.split_once("://")?.0.to_ascii_lowercase();
    let plain = non_empty(get.selection.filter.as_deref()).is_none()
        && !get.selection.preview
        && get.line.is_none()
        && get.limit.is_none()
        && !path.contains(|c: char| c == '*' || c.is_whitespace());
    (plain && matches!(scheme.as_str(), "http" | "https")).then_some(path)
}

impl ToolInfo for Get {
    fn effect(&self) -> ToolEffect {
        ToolEffect::Reads
    }

    fn name(&self) -> &'static str {
        NAME
    }

    fn tag(&self) -> TagSpec {
        TagSpec {
            main_field: "path",
            attributes: &["path", "body", "preview", "line", "limit", "fidelity"],
        }
    }

    fn doc(&self) -> &'static str {
        include_str!("../../text/tools/get.md")
    }

    fn full_view(&self, entry: &EntryView<'_>) -> String {
        headed("get", attribute_or(entry, "path", entry.path), entry.body)
    }

    fn command_from_call(&self, call: &ClientCall) -> Command {
        Command::Get(GetCommand {
            selection: Selection {
                path: Some(call.path.clone()),
                filter: call.body.clone().or_else(|| call.attribute("body")),
                preview: call.flag("preview"),
            },
            line: call.number("line"),
            limit: call.number("limit"),
            fidelity: call.attribute("fidelity"),
        })
    }
}

impl TypedTool for Get {
    type Input = GetCommand;

    fn input<'c>(&self, command: &'c Command) -> Option<Cow<'c, GetCommand>> {
        match command {
            Command::Get(get) => Some(Cow::Borrowed(get)),
            _ => None,
        }
    }

    fn target(&self, get: &GetCommand) -> String {
        get.selection.path.clone().unwrap_or_default()
    }

    fn gather<'a>(
        &'a self,
        at: &'a Gathering<'a>,
        inputs: Vec<Cow<'a, GetCommand>>,
    ) -> Option<Gather<'a>> {
        let urls = once_each(
            inputs
                .iter()
                .filter_map(|get| Some(url_of(get)?.to_owned())),
        );
        (!urls.is_empty()).then(|| Gather::of(Pages::fetched(at.web, urls, at.cancel)))
    }

    fn forbids(&self, get: &GetCommand, policy: &ToolPolicy) -> Option<String> {
        let url = url_of(get)?;
        policy.no_web.then(|| {
            format!(
                "<get> of {url} is not allowed: this loop may not use the web (noWeb). \
                 Work with the project and known:// entries instead."
            )
        })
    }

    fn handle(
        &self,
        scope: &mut ToolScope<'_>,
        get: &GetCommand,
        result_path: &str,
    ) -> Result<Handled, ToolError> {
        let Some(path) = non_empty(get.selection.path.as_deref()) else {
            return fail(
                scope,
                result_path,
                EntryStatus::BadRequest,
                "path is required",
            );
        };
        let filter = non_empty(get.selection.filter.as_deref());
        if get.line.is_some() || get.limit.is_some() {
            return partial_read(scope, get, path, filter, result_path);
        }
        let fidelity = match get.fidelity.as_deref().map(parse_fidelity).transpose() {
            Ok(fidelity) => fidelity,
            Err(message) => return fail(scope, result_path, EntryStatus::BadRequest, &message),
        };
        if let Some(url) = url_of(get) {
            return store_page(scope, url, fidelity, result_path);
        }
        let pattern = is_pattern(path, filter);
        let rows = select(scope, path, filter)?;
        if get.selection.preview {
            return preview(scope, result_path, "get", path, filter, &rows);
        }
        if rows.is_empty() && !pattern {
            return not_found(scope, result_path, path);
        }
        selected::promote(scope.conn, &rows, scope.turn)?;
        if let Some(fidelity) = fidelity {
            selected::set_fidelity(scope.conn, &rows, fidelity)?;
        }
        let body = if pattern {
            listing(&pattern_header("get", path, filter), &rows)
        } else {
            let tokens: i64 = rows.iter().map(|row| i64::from(row.tokens_full)).sum();
            format!("{} loaded ({tokens} tokens)", paths_of(&rows))
        };
        report(scope, result_path, path, &body)
    }
}

/// The fetched page at `url` stored as the entry at that URL (at full fidelity unless the
/// get names one), or the failed fetch at the result path.
fn store_page(
    scope: &mut ToolScope<'_>,
    url: &str,
    fidelity: Option<Fidelity>,
    result_path: &str,
) -> Result<Handled, ToolError> {
    let answer = scope
        .gathered::<Pages>(NAME)
        .and_then(|pages| pages.of(url));
    let page = match answer {
        Some(Ok(page)) => page,
        Some(Err(error)) => {
            let message = format!("{url}: {error}");
            return fail(scope, result_path, failure_status(&error), &message);
        }
        None => {
            let message = format!("{url} was not fetched");
            return fail(scope, result_path, EntryStatus::Failed, &message);
        }
    };
    let attributes = json!({ "url": page.url, "contentType": page.content_type });
    let path = normalize_path(url);
    let row = write_row(scope, &path, &page.text, EntryStatus::Ok, Some(attributes))?;
    let rows = [row];
    selected::promote(scope.conn, &rows, scope.turn)?;
    if let Some(fidelity) = fidelity {
        selected::set_fidelity(scope.conn, &rows, fidelity)?;
    }
    let [row] = rows;
    let body = format!("{path} fetched ({} tokens)", row.tokens_full);
    report(scope, result_path, url, &body)
}

/// `line`/`limit`: some lines of one entry, with no promotion and no fidelity change.
fn partial_read(
    scope: &mut ToolScope<'_>,
    get: &GetCommand,
    path: &str,
    filter: Option<&str>,
    result_path: &str,
) -> Result<Handled, ToolError> {
    if is_pattern(path, filter) {
        let message =
            format!("line and limit read one entry: {path} is a pattern. Give a single path.");
        return fail(scope, result_path, EntryStatus::BadRequest, &message);
    }
    let Some(entry) = select(scope, path, None)?.into_iter().next() else {
        return not_found(scope, result_path, path);
    };
    let lines: Vec<&str> = entry.body.lines().collect();
    let total = u64::try_from(lines.len()).unwrap_or(u64::MAX);
    let first = get.line.unwrap_or(1).max(1);
    if first > total.max(1) {
        let message = format!("line {first} is past the end of {path} ({total} lines)");
        return fail(
            scope,
            result_path,
            EntryStatus::RangeNotSatisfiable,
            &message,
        );
    }
    let last = match get.limit {
        Some(limit) => first.saturating_add(limit.max(1) - 1).min(total),
        None => total,
    };
    let slice: Vec<&str> = lines
        .iter()
        .skip(usize::try_from(first - 1).unwrap_or(usize::MAX))
        .take(usize::try_from(last.saturating_sub(first) + 1).unwrap_or(usize::MAX))
        .copied()
        .collect();
    let body = format!(
        "[lines {first}–{last} / {total} total]\n{}",
        slice.join("\n")
    );
    report(scope, result_path, path, &body)
}

#[cfg(test)]
mod tests {
    use crate::db::enums::EntryStatus;
    use crate::db::enums::Fidelity;
    use crate::plugins::bundled::tools::testing::TestRun;
    use crate::plugins::bundled::web::Pages;
    use crate::web::{Page, RefusedAddress, WebError};

    fn page(text: &str) -> Page {
        Page {
            url: "https://example.com/docs?v=2".into(),
            content_type: "text/html".into(),
            text: text.into(),
        }
    }

    fn archived(run: &mut TestRun, path: &str, body: &str) {
        run.put(path, body);
        run.respond(&format!("<set path=\"{path}\" fidelity=\"archive\"/>"));
    }

    #[test]
    fn exact_get_promotes_and_reports() {
        let mut run = TestRun::new();
        archived(&mut run, "known://auth", "cookie ttl");
        let outcome = run.respond("<get path=\"known://auth\"/>");
        let entry = run.entry("known://auth").unwrap();
        assert_eq!((entry.fidelity, entry.turn), (Fidelity::Full, 2));
        assert!(outcome.errors.is_empty() && outcome.flags.has_reads);
        let result = run.entry("get://turn_2/known%3A//auth").unwrap();
        assert!(
            result.body.starts_with("known://auth loaded"),
            "{}",
            result.body
        );
        assert_eq!(
            run.projected("get://turn_2/known%3A//auth"),
            format!("# get known://auth\n{}", result.body)
        );
    }

    #[test]
    fn patterns_filter_by_body_and_preview_loads_nothing() {
        let mut run = TestRun::new();
        archived(&mut run, "known://a", "about auth");
        archived(&mut run, "known://b", "about billing");
        run.respond("<get path=\"known://*\" preview>auth</get>");
        assert_eq!(run.entry("known://a").unwrap().fidelity, Fidelity::Archive);
        let preview = run.entry("get://turn_3/known%3A//*").unwrap().body;
        assert!(preview.starts_with("PREVIEW get path=\"known://*\" body=\"auth\": 1 matched"));
        run.respond("<get path=\"known://*\">auth</get>");
        assert_eq!(run.entry("known://a").unwrap().fidelity, Fidelity::Full);
        assert_eq!(run.entry("known://b").unwrap().fidelity, Fidelity::Archive);
        let none = run.respond("<get path=\"known://zz*\"/>");
        assert!(
            none.errors.is_empty(),
            "an empty pattern match is not an error"
        );
        let miss = run.respond("<get path=\"known://missing\"/>");
        assert_eq!(miss.errors[0].status, EntryStatus::NotFound);
    }

    #[test]
    fn partial_reads_never_change_fidelity_and_refuse_patterns() {
        let mut run = TestRun::new();
        archived(&mut run, "src/a.rs", "one\ntwo\nthree\nfour");
        run.respond("<get path=\"src/a.rs\" line=\"2\" limit=\"2\"/>");
        let body = run.entry("get://turn_2/src/a.rs").unwrap().body;
        assert_eq!(body, "[lines 2–3 / 4 total]\ntwo\nthree");
        assert_eq!(run.entry("src/a.rs").unwrap().fidelity, Fidelity::Archive);
        let pattern = run.respond("<get path=\"src/*\" line=\"1\"/>");
        assert_eq!(pattern.errors[0].status, EntryStatus::BadRequest);
        let past = run.respond("<get path=\"src/a.rs\" line=\"9\"/>");
        assert_eq!(past.errors[0].status, EntryStatus::RangeNotSatisfiable);
    }

    #[test]
    fn fidelity_attribute_applies_after_loading() {
        let mut run = TestRun::new();
        archived(&mut run, "known://a", "alpha");
        run.respond("<get path=\"known://a\" fidelity=\"summary\"/>");
        let entry = run.entry("known://a").unwrap();
        assert_eq!((entry.fidelity, entry.turn), (Fidelity::Summary, 2));
        let bad = run.respond("<get path=\"known://a\" fidelity=\"loud\"/>");
        assert!(bad.errors[0].message.contains("Unknown fidelity"));
    }

    #[test]
    fn a_url_get_stores_the_fetched_page_at_that_url() {
        let mut run = TestRun::new();
        let url = "https://example.com/docs?v=2";
        run.gathering(
            "get",
            Pages::default().with(url, Ok(page("# Docs\nread me"))),
        );
        let outcome =
            run.respond("<get path=\"https://example.com/docs?v=2\" fidelity=\"summary\"/>");
        assert!(outcome.errors.is_empty() && outcome.flags.has_reads);
        let stored = run.entry("https://example.com/docs%3Fv%3D2").unwrap();
        assert_eq!(stored.body, "# Docs\nread me");
        assert_eq!(
            (stored.status, stored.fidelity),
            (EntryStatus::Ok, Fidelity::Summary)
        );
        let path = "https://example.com/docs%3Fv%3D2";
        assert_eq!(
            run.attribute(path, "contentType"),
            serde_json::json!("text/html")
        );
        let result = run
            .entry("get://turn_1/https%3A//example.com/docs%3Fv%3D2")
            .unwrap();
        assert!(
            result
                .body
                .starts_with("https://example.com/docs%3Fv%3D2 fetched ("),
            "{}",
            result.body
        );
        let pattern = run.respond("<get path=\"https://*\" preview/>");
        assert!(
            pattern.errors.is_empty(),
            "a pattern lists stored pages, fetching nothing"
        );
    }

    #[test]
    fn a_failed_or_forbidden_fetch_is_an_entry_that_says_why() {
        let mut run = TestRun::new();
        let refused = WebError::Refused(RefusedAddress {
            host: "10.0.0.1".into(),
            address: "10.0.0.1".parse().unwrap(),
            reason: "private",
        });
        let answers = Pages::default()
            .with("http://10.0.0.1/", Err(refused))
            .with(
                "https://example.com/big",
                Err(WebError::TooLarge { limit: 9 }),
            );
        run.gathering("get", answers);
        let outcome = run.respond("<get path=\"http://10.0.0.1/\"/>");
        assert_eq!(outcome.errors[0].status, EntryStatus::Forbidden);
        assert!(outcome.errors[0]
            .message
            .starts_with("http://10.0.0.1/: 10.0.0.1 is a private address"));
        assert!(run.entry("http://10.0.0.1/").is_none());
        let unfetched = run.respond("<get path=\"https://example.com/never\"/>");
        assert_eq!(unfetched.errors[0].status, EntryStatus::Failed);
        run.policy.no_web = true;
        let offline = run.respond("<get path=\"https://example.com/big\"/>");
        assert_eq!(offline.errors[0].status, EntryStatus::Forbidden);
        assert!(
            offline.errors[0].message.contains("(noWeb)"),
            "{}",
            offline.errors[0].message
        );
    }
}
