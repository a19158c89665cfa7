//! Adding a model tool touches one file. This one defines `<echo>` whole (its name, tag,
//! doc, view, typed input and what it does), registers it with one line through the API
//! the bundled tools are registered with, and shows a scripted model's `<echo>` reaching
//! it: the result entry is recorded and the model reads it next turn.

use std::borrow::Cow;

use rummy::plugins::tool::{
    ClientCall, Handled, TargetKind, ToolError, ToolInfo, ToolScope, TypedTool,
};
use rummy::plugins::writes::finish;
use rummy::plugins::EntryStatus;
use rummy::plugins::EntryView;
use rummy::plugins::{Command, TagSpec, TaggedText};
use serde_json::json;

use crate::support::{system_message, user_message, TestApp};
use rummy::testing::fake_llm::{FakeLlm, Step};

/// `<echo>`: records its text as its result, in capitals when `loud`.
struct Echo;

/// What one `<echo>` says.
#[derive(Clone)]
struct Said {
    text: String,
    loud: bool,
}

impl ToolInfo for Echo {
    fn name(&self) -> &'static str {
        "echo"
    }

    fn tag(&self) -> TagSpec {
        TagSpec {
            main_field: "body",
            attributes: &["body", "loud"],
        }
    }

    fn doc(&self) -> &'static str {
        "## <echo>[text]</echo> - Echo text\nExample: <echo loud>hi</echo>\n* YOU MAY echo."
    }

    fn full_view(&self, entry: &EntryView<'_>) -> String {
        format!("# echo\n{}", entry.body)
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

impl TypedTool for Echo {
    type Input = Said;

    fn input<'c>(&self, command: &'c Command) -> Option<Cow<'c, Said>> {
        match command {
            Command::Other { name, content } if name == self.name() => Some(Cow::Owned(Said {
                text: content.body.clone(),
                loud: content.attributes.iter().any(|(name, _)| name == "loud"),
            })),
            _ => None,
        }
    }

    fn target(&self, said: &Said) -> String {
        said.text.clone()
    }

    fn handle(
        &self,
        scope: &mut ToolScope<'_>,
        said: &Said,
        result_path: &str,
    ) -> Result<Handled, ToolError> {
        let text = if said.loud {
            said.text.to_uppercase()
        } else {
            said.text.clone()
        };
        finish(scope, result_path, EntryStatus::Ok, &text, None)
    }
}

#[actix_web::test]
async fn a_tool_defined_in_one_file_runs_when_the_model_writes_its_tag() {
    let llm = FakeLlm::start([
        Step::reply("<echo loud>hello from the model</echo><update>echoed</update>"),
        Step::reply("<summarize>done</summarize>"),
    ]);
    let app = TestApp::with_llm_and_tools(&llm, &[], |plugins| plugins.with(Echo)).await;
    let (mut client, _) = app.client_in_project("echo").await;
    let result = client
        .ok("ask", json!({"model": "fake", "prompt": "say hello"}))
        .await;
    assert_eq!(result["status"], json!(200), "{result}");
    let run = result["run"].as_str().unwrap();
    assert_eq!(
        client.statuses(run, "echo://*").await,
        [("echo://turn_1/hello%20from%20the%20model".to_string(), 200)]
    );
    let requests = llm.requests();
    assert_eq!(requests.len(), 2);
    assert!(system_message(&requests[0]).contains("## <echo>"));
    let next = format!(
        "{}{}",
        system_message(&requests[1]),
        user_message(&requests[1])
    );
    assert!(next.contains("# echo\nHELLO FROM THE MODEL"), "{next}");
}
