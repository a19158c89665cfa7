//! `search`: a web search. Offered only when a search backend is configured (and not under
//! `noWeb` or in panic mode). The server asks SearXNG before the unit of work that runs the
//! command (its gather half, [`crate::plugins::bundled::web::Searches`]); the result entry lists the hits (title, URL, snippet),
//! which the model reads further with `<get path="https://…"/>`. A backend that fails, is
//! slow or answers junk leaves a failed entry that says so.

use std::borrow::Cow;

use serde_json::json;

use crate::context::view::EntryView;
use crate::db::enums::{EntryStatus, LoopMode};
use crate::parser::{Command, SearchCommand, TagSpec};
use crate::plugins::bundled::tools::{echoed, fail, non_empty};
use crate::plugins::bundled::web::{failure_status, once_each, Searches};
use crate::plugins::gather::{Gather, Gathering};
use crate::plugins::policy::ToolPolicy;
use crate::plugins::tool::{
    Availability, ClientCall, Handled, TargetKind, ToolEffect, ToolError, ToolInfo, ToolScope,
    TypedTool,
};
use crate::plugins::writes::finish;
use crate::web::SearchHit;

pub(crate) struct Search;

const NAME: &str = "search";

/// Results listed when the command names no count.
const DEFAULT_RESULTS: usize = 5;
/// Most results one search lists.
const MAX_RESULTS: usize = 20;

/// The query of a search and the number of results it lists, `None` without a query.
pub(crate) fn query_of(search: &SearchCommand) -> Option<(&str, usize)> {
    let query = non_empty(search.query.as_deref())?.trim();
    let count = search
        .results
        .and_then(|count| usize::try_from(count).ok())
        .unwrap_or(DEFAULT_RESULTS)
        .clamp(1, MAX_RESULTS);
    Some((query, count))
}

/// The hits as the model reads them: one numbered block each (title, URL, snippet).
fn listing(hits: &[SearchHit]) -> String {
    if hits.is_empty() {
        return "No results.".to_owned();
    }
    let blocks: Vec<String> = hits
        .iter()
        .enumerate()
        .map(|(index, hit)| {
            let title = hit.title.trim();
            let title = if title.is_empty() {
                hit.url.as_str()
            } else {
                title
            };
            let mut block = format!("{}. {title}\n   {}", index + 1, hit.url);
            let snippet = hit.content.split_whitespace().collect::<Vec<_>>().join(" ");
            if !snippet.is_empty() {
                block.push_str(&format!("\n   {snippet}"));
            }
            block
        })
        .collect();
    blocks.join("\n")
}

impl ToolInfo for Search {
    fn effect(&self) -> ToolEffect {
        ToolEffect::Reads
    }

    fn name(&self) -> &'static str {
        NAME
    }

    fn availability(&self, policy: &ToolPolicy) -> Availability {
        if policy.search_available
            && policy.optional_tools
            && !policy.no_web
            && policy.mode != LoopMode::Panic
        {
            Availability::Offered
        } else {
            Availability::Excluded
        }
    }

    fn excluded_because(&self, policy: &ToolPolicy) -> Option<&'static str> {
        (!policy.search_available).then_some("no search backend")
    }

    fn tag(&self) -> TagSpec {
        TagSpec {
            main_field: "path",
            attributes: &["path", "results"],
        }
    }

    fn doc(&self) -> &'static str {
        include_str!("../../text/tools/search.md")
    }

    fn full_view(&self, entry: &EntryView<'_>) -> String {
        echoed("search", entry, "query")
    }

    fn summary_view(&self, entry: &EntryView<'_>) -> String {
        entry.attribute("query").unwrap_or_default().to_owned()
    }

    fn command_from_call(&self, call: &ClientCall) -> Command {
        Command::Search(SearchCommand {
            query: Some(call.path.clone()),
            results: call.number("results"),
        })
    }

    fn target_kind(&self) -> TargetKind {
        TargetKind::Text
    }
}

impl TypedTool for Search {
    type Input = SearchCommand;

    fn input<'c>(&self, command: &'c Command) -> Option<Cow<'c, SearchCommand>> {
        match command {
            Command::Search(search) => Some(Cow::Borrowed(search)),
            _ => None,
        }
    }

    fn target(&self, search: &SearchCommand) -> String {
        search.query.clone().unwrap_or_default()
    }

    fn gather<'a>(
        &'a self,
        at: &'a Gathering<'a>,
        inputs: Vec<Cow<'a, SearchCommand>>,
    ) -> Option<Gather<'a>> {
        let asked = once_each(inputs.iter().filter_map(|search| {
            let (query, count) = query_of(search)?;
            Some((query.to_owned(), count))
        }));
        (!asked.is_empty()).then(|| Gather::of(Searches::made(at.web, asked, at.cancel)))
    }

    fn handle(
        &self,
        scope: &mut ToolScope<'_>,
        search: &SearchCommand,
        result_path: &str,
    ) -> Result<Handled, ToolError> {
        let Some((query, count)) = query_of(search) else {
            return fail(
                scope,
                result_path,
                EntryStatus::BadRequest,
                "a query is required",
            );
        };
        let answer = scope
            .gathered::<Searches>(NAME)
            .and_then(|searches| searches.of(query, count));
        let (status, body) = match answer {
            Some(Ok(hits)) => (EntryStatus::Ok, listing(&hits)),
            Some(Err(error)) => (
                failure_status(&error),
                format!("The search for \"{query}\" failed: {error}"),
            ),
            None => (
                EntryStatus::Failed,
                format!("The search for \"{query}\" was not made."),
            ),
        };
        let mut attributes = json!({ "query": query, "results": count });
        if status.is_failure() {
            attributes["error"] = json!(body);
        }
        finish(scope, result_path, status, &body, Some(attributes))
    }
}

#[cfg(test)]
mod tests {
    use crate::db::enums::EntryStatus;
    use crate::plugins::bundled::tools::testing::TestRun;
    use crate::plugins::bundled::web::Searches;
    use crate::web::{SearchHit, WebError};

    fn hit(number: u32) -> SearchHit {
        SearchHit {
            url: format!("https://example.com/{number}"),
            title: format!("Result {number}"),
            content: format!("about\n  {number}"),
        }
    }

    #[test]
    fn the_hits_become_the_result_entry() {
        let mut run = TestRun::new();
        run.policy.search_available = true;
        let answers = Searches::default().with("rust sqlite", 2, Ok(vec![hit(1), hit(2)]));
        run.gathering("search", answers);
        let outcome = run.respond("<search results=\"2\">rust sqlite</search>");
        assert!(outcome.errors.is_empty() && outcome.proposals.is_empty());
        assert!(outcome.flags.has_reads);
        let path = "search://turn_1/rust%20sqlite";
        let entry = run.entry(path).unwrap();
        assert_eq!(entry.status, EntryStatus::Ok);
        assert_eq!(
            entry.body,
            "1. Result 1\n   https://example.com/1\n   about 1\n\
             2. Result 2\n   https://example.com/2\n   about 2"
        );
        assert_eq!(run.attribute(path, "results"), serde_json::json!(2));
        assert_eq!(
            run.projected(path),
            format!("# search rust sqlite\n{}", entry.body)
        );
    }

    #[test]
    fn counts_default_and_are_bounded() {
        let mut run = TestRun::new();
        run.policy.search_available = true;
        let answers =
            Searches::default()
                .with("a", 5, Ok(Vec::new()))
                .with("b", 20, Ok(Vec::new()));
        run.gathering("search", answers);
        run.respond("<search>a</search><search results=\"500\">b</search>");
        assert_eq!(run.entry("search://turn_1/a").unwrap().body, "No results.");
        assert_eq!(run.entry("search://turn_1/b").unwrap().body, "No results.");
    }

    #[test]
    fn a_failed_search_is_an_entry_that_says_why() {
        let mut run = TestRun::new();
        run.policy.search_available = true;
        let junk = WebError::Junk("expected value at line 1".into());
        run.gathering("search", Searches::default().with("q", 5, Err(junk)));
        let outcome = run.respond("<search>q</search>");
        assert_eq!(outcome.errors[0].status, EntryStatus::BadGateway);
        let entry = run.entry("search://turn_1/q").unwrap();
        assert!(
            entry
                .body
                .starts_with("The search for \"q\" failed: the search backend answered"),
            "{}",
            entry.body
        );
        let unasked = run.respond("<search>never made</search>");
        assert_eq!(unasked.errors[0].status, EntryStatus::Failed);
    }
}
