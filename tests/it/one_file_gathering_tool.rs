//! Adding a tool whose commands need work outside the store (here a process) touches one
//! file too. `<shout>` has a gather half: before the unit of work that records the reply,
//! it runs `tr` once per distinct text of the reply's `<shout>`s, all at once, off the DB
//! writer; its handler then finds what `tr` printed in its scope. The turn, the dispatch and
//! the registry name no part of it.

use std::borrow::Cow;
use std::collections::HashMap;
use std::process::Stdio;

use rummy::plugins::gather::{Gather, Gathering};
use rummy::plugins::tool::{
    ClientCall, Handled, TargetKind, ToolError, ToolInfo, ToolScope, TypedTool,
};
use rummy::plugins::writes::finish;
use rummy::plugins::EntryStatus;
use rummy::plugins::EntryView;
use rummy::plugins::{Command, TagSpec, TaggedText};
use serde_json::json;
use tokio::io::AsyncWriteExt;

use crate::support::{user_message, TestApp};
use rummy::testing::fake_llm::{FakeLlm, Step};

/// `<shout>text</shout>`: records the text in capitals, as `tr` made them.
struct Shout;

const NAME: &str = "shout";

/// What `tr` printed for each text of one reply.
type Shouted = HashMap<String, String>;

/// Runs `tr a-z A-Z` on `text`.
async fn upper_case(text: String) -> (String, String) {
    let mut tr = tokio::process::Command::new("tr")
        .args(["a-z", "A-Z"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("tr runs");
    let mut input = tr.stdin.take().unwrap();
    input.write_all(text.as_bytes()).await.unwrap();
    drop(input);
    let output = tr.wait_with_output().await.unwrap();
    (text, String::from_utf8(output.stdout).unwrap())
}

impl ToolInfo for Shout {
    fn name(&self) -> &'static str {
        NAME
    }

    fn tag(&self) -> TagSpec {
        TagSpec::BODY
    }

    fn doc(&self) -> &'static str {
        "## <shout>[text]</shout> - Shout text\nExample: <shout>hi</shout>\n* YOU MAY shout."
    }

    fn full_view(&self, entry: &EntryView<'_>) -> String {
        format!("# shout\n{}", entry.body)
    }

    fn command_from_call(&self, call: &ClientCall) -> Command {
        Command::Other {
            name: NAME.to_owned(),
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

impl TypedTool for Shout {
    type Input = String;

    fn input<'c>(&self, command: &'c Command) -> Option<Cow<'c, String>> {
        match command {
            Command::Other { name, content } if name == NAME => Some(Cow::Borrowed(&content.body)),
            _ => None,
        }
    }

    fn target(&self, text: &String) -> String {
        text.clone()
    }

    fn gather<'a>(
        &'a self,
        _at: &'a Gathering<'a>,
        texts: Vec<Cow<'a, String>>,
    ) -> Option<Gather<'a>> {
        let mut distinct: Vec<String> = texts.into_iter().map(Cow::into_owned).collect();
        distinct.dedup();
        Some(Gather::of(async move {
            let runs = distinct.into_iter().map(upper_case);
            futures_util::future::join_all(runs)
                .await
                .into_iter()
                .collect::<Shouted>()
        }))
    }

    fn handle(
        &self,
        scope: &mut ToolScope<'_>,
        text: &String,
        result_path: &str,
    ) -> Result<Handled, ToolError> {
        let shouted = scope
            .gathered::<Shouted>(NAME)
            .and_then(|shouted| shouted.get(text).cloned());
        match shouted {
            Some(loud) => finish(scope, result_path, EntryStatus::Ok, &loud, None),
            None => finish(scope, result_path, EntryStatus::Failed, "not shouted", None),
        }
    }
}

#[actix_web::test]
async fn a_tool_with_a_gather_half_defined_in_one_file_gets_what_it_gathered() {
    let llm = FakeLlm::start([
        Step::reply("<shout>first</shout><shout>second</shout><update>shouted</update>"),
        Step::reply("<summarize>done</summarize>"),
    ]);
    let app = TestApp::with_llm_and_tools(&llm, &[], |plugins| plugins.with(Shout)).await;
    let (mut client, _) = app.client_in_project("shout").await;
    let result = client
        .ok("ask", json!({"model": "fake", "prompt": "shout twice"}))
        .await;
    assert_eq!(result["status"], json!(200), "{result}");
    let run = result["run"].as_str().unwrap();
    assert_eq!(
        client.statuses(run, "shout://*").await,
        [
            ("shout://turn_1/first".to_string(), 200),
            ("shout://turn_1/second".to_string(), 200)
        ]
    );
    let next = user_message(&llm.requests()[1]);
    assert!(
        next.contains("# shout\nFIRST") && next.contains("# shout\nSECOND"),
        "{next}"
    );
}

#[actix_web::test]
async fn a_clients_call_of_the_tool_is_gathered_for_too() {
    let app = TestApp::start_with_tools(&[], |plugins| plugins.with(Shout)).await;
    let (mut client, _) = app.client_in_project("shout").await;
    client.add_model("fake").await;
    let run = client.start_run("fake").await;
    client
        .ok(NAME, json!({"run": run, "path": "from the client"}))
        .await;
    assert_eq!(
        client.statuses(&run, "shout://*").await,
        [("shout://turn_1/from%20the%20client".to_string(), 200)],
        "the handler found what the gather half made (else 500, \"not shouted\")"
    );
}
