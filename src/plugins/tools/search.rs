//! `search`: a web search. Offered only when a search backend is configured (and not under
//! `noWeb` or in panic mode). The query becomes a 202 proposal `{query, results}` that the
//! backend (or the client) answers on accept; the results become the entry's body.

use std::borrow::Cow;

use serde_json::json;

use crate::context::view::EntryView;
use crate::db::enums::LoopMode;
use crate::parser::{Command, SearchCommand, TagSpec};
use crate::plugins::policy::ToolPolicy;
use crate::plugins::tool::{
    Availability, ClientCall, Handled, TargetKind, ToolEffect, ToolError, ToolInfo, ToolScope,
    TypedTool,
};
use crate::plugins::tools::{echoed, propose_text};

pub struct Search;

impl ToolInfo for Search {
    fn effect(&self) -> ToolEffect {
        ToolEffect::Reads
    }

    fn name(&self) -> &'static str {
        "search"
    }

    fn availability(&self, policy: &ToolPolicy) -> Availability {
        if policy.search_available && !policy.no_web && policy.mode != LoopMode::Panic {
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
        include_str!("../text/tools/search.md")
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

    fn handle(
        &self,
        scope: &mut ToolScope<'_>,
        search: &SearchCommand,
        result_path: &str,
    ) -> Result<Handled, ToolError> {
        propose_text(
            scope,
            result_path,
            search.query.as_deref(),
            "a query is required",
            |query| json!({ "query": query, "results": search.results }),
        )
    }
}

#[cfg(test)]
mod tests {
    use crate::plugins::tools::testing::TestRun;

    #[test]
    fn with_a_backend_a_query_is_proposed() {
        let mut run = TestRun::new();
        run.policy.search_available = true;
        let outcome = run.respond("<search results=\"3\">rust sqlite</search>");
        assert_eq!(outcome.proposals[0].path, "search://turn_1/rust%20sqlite");
        assert_eq!(
            run.attribute("search://turn_1/rust%20sqlite", "results"),
            serde_json::json!(3)
        );
        assert!(outcome.flags.has_reads);
    }
}
