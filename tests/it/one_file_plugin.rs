//! Adding a tool, a packet section and an RPC method is one plugin in one file, plus one
//! line that registers it. This one (`greeter`) brings `<shout>`, a `<house_rules>` section
//! in the system message, an observer counting the turns it sees, a `greeter/hello`
//! method that answers with that count and sends `ui/notify` and `ui/render` to the
//! project's clients, and a `greeter/turns` method that needs no params and no `init`. A scripted model uses all of it; disabling the plugin by configuration
//! (`RUMMY_PLUGINS_DISABLED=greeter`) takes all of it away.

use std::borrow::Cow;
use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use rummy::plugins::assembly::{AssemblyContext, AssemblyFilter, Chain};
use rummy::plugins::clients::Clients;
use rummy::plugins::events::{Event, Hook, Observer};
use rummy::plugins::filters::{EntryRecording, LlmMessages, LlmResponse, RpcResult};
use rummy::plugins::method::{MethodCall, MethodError, TypedMethod};
use rummy::plugins::tool::{
    ClientCall, Handled, TargetKind, ToolError, ToolInfo, ToolScope, TypedTool,
};
use rummy::plugins::writes::finish;
use rummy::plugins::EntryStatus;
use rummy::plugins::EntryView;
use rummy::plugins::NotifyLevel;
use rummy::plugins::Role;
use rummy::plugins::{Bucket, MessageBuilder};
use rummy::plugins::{Command, TagSpec, TaggedText};
use rummy::plugins::{Plugin, Registrar};
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::support::{system_message, user_message, TestApp};
use rummy::testing::fake_llm::{FakeLlm, Step};

/// The plugin: what it adds, under one name.
struct Greeter;

impl Plugin for Greeter {
    fn name(&self) -> &'static str {
        "greeter"
    }

    fn register(self: Box<Self>, registrar: &mut Registrar<'_>) {
        let turns = Arc::new(AtomicUsize::new(0));
        registrar.tool(Shout);
        registrar.section(Chain::System, HouseRules);
        registrar.observer(TurnCounter(Arc::clone(&turns)));
        registrar.method(Turns(Arc::clone(&turns)));
        registrar.method(Hello {
            turns,
            clients: registrar.clients(),
        });
    }
}

/// `<shout>`: records its text in capitals.
struct Shout;

impl ToolInfo for Shout {
    fn name(&self) -> &'static str {
        "shout"
    }

    fn tag(&self) -> TagSpec {
        TagSpec {
            main_field: "body",
            attributes: &["body"],
        }
    }

    fn doc(&self) -> &'static str {
        "## <shout>[text]</shout> - Shout text\nExample: <shout>hi</shout>\n* YOU MAY shout."
    }

    fn full_view(&self, entry: &EntryView<'_>) -> String {
        format!("# shout\n{}", entry.body)
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

impl TypedTool for Shout {
    type Input = String;

    fn input<'c>(&self, command: &'c Command) -> Option<Cow<'c, String>> {
        match command {
            Command::Other { name, content } if name == self.name() => {
                Some(Cow::Borrowed(&content.body))
            }
            _ => None,
        }
    }

    fn target(&self, text: &String) -> String {
        text.clone()
    }

    fn handle(
        &self,
        scope: &mut ToolScope<'_>,
        text: &String,
        result_path: &str,
    ) -> Result<Handled, ToolError> {
        finish(
            scope,
            result_path,
            EntryStatus::Ok,
            &text.to_uppercase(),
            None,
        )
    }
}

/// `<house_rules>`, after the instructions and before `<knowns>`.
struct HouseRules;

impl AssemblyFilter for HouseRules {
    fn priority(&self) -> i32 {
        50
    }

    fn apply(&self, _: &AssemblyContext<'_>, message: &mut MessageBuilder) {
        message.open_section(Bucket::System);
        message.push(
            Bucket::System,
            "<house_rules>Shout when done.</house_rules>",
        );
    }
}

/// Counts the turns that completed.
struct TurnCounter(Arc<AtomicUsize>);

impl Observer for TurnCounter {
    fn hooks(&self) -> &[Hook] {
        &[Hook::TurnCompleted]
    }

    fn observe(&self, event: &Event<'_>) {
        if let Event::TurnCompleted { .. } = event {
            self.0.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// `greeter/hello {name}` → `{greeting, turns}`, and a toast and a display line to the
/// caller's project.
struct Hello {
    turns: Arc<AtomicUsize>,
    clients: Clients,
}

#[derive(Deserialize)]
struct HelloParams {
    name: String,
}

#[derive(Serialize)]
struct Greeting {
    greeting: String,
    turns: usize,
}

impl TypedMethod for Hello {
    type Params = HelloParams;
    type Output = Greeting;

    fn name(&self) -> &'static str {
        "greeter/hello"
    }

    fn description(&self) -> &'static str {
        "Greets someone and tells the project's clients."
    }

    fn params(&self) -> &'static [(&'static str, &'static str)] {
        &[("name", "string — who to greet")]
    }

    fn role(&self) -> Role {
        Role::Viewer
    }

    fn call(
        &self,
        call: MethodCall,
        params: HelloParams,
    ) -> impl Future<Output = Result<Greeting, MethodError>> + Send + 'static {
        let turns = self.turns.load(Ordering::Relaxed);
        let clients = self.clients.clone();
        async move {
            if params.name.is_empty() {
                return Err(MethodError::InvalidParams("name is empty".into()));
            }
            let greeting = format!("hello {}", params.name);
            if let Some(project) = call.project {
                clients.render(project, greeting.clone(), false);
                clients.notify(project, greeting.clone(), NotifyLevel::Info);
            }
            Ok(Greeting { greeting, turns })
        }
    }
}

/// `greeter/turns` → the turns counted so far, on any connection.
struct Turns(Arc<AtomicUsize>);

impl TypedMethod for Turns {
    type Params = serde_json::Value;
    type Output = usize;

    fn name(&self) -> &'static str {
        "greeter/turns"
    }

    fn description(&self) -> &'static str {
        "The turns the greeter counted."
    }

    fn needs_init(&self) -> bool {
        false
    }

    fn call(
        &self,
        _: MethodCall,
        _: serde_json::Value,
    ) -> impl Future<Output = Result<usize, MethodError>> + Send + 'static {
        let turns = self.0.load(Ordering::Relaxed);
        async move { Ok(turns) }
    }
}

fn script() -> FakeLlm {
    FakeLlm::start([
        Step::reply("<shout>hello there</shout><update>shouted</update>"),
        Step::reply("<summarize>done</summarize>"),
    ])
}

#[actix_web::test]
async fn a_plugin_adds_a_tool_a_section_an_observer_and_a_method_in_one_file() {
    let llm = script();
    let app = TestApp::with_llm_and_tools(&llm, &[], |plugins| plugins.plugin(Greeter)).await;
    let (mut client, _) = app.client_in_project("greet").await;
    let result = client
        .ok("ask", json!({"model": "fake", "prompt": "say hello"}))
        .await;
    assert_eq!(result["status"], json!(200), "{result}");
    let run = result["run"].as_str().unwrap();
    assert_eq!(
        client.statuses(run, "shout://*").await,
        [("shout://turn_1/hello%20there".to_string(), 200)]
    );
    let requests = llm.requests();
    let system = system_message(&requests[0]);
    assert!(system.contains("## <shout>"), "{system}");
    let rules = system.find("<house_rules>Shout when done.</house_rules>");
    assert!(rules.is_some(), "{system}");
    let catalogue = client.ok("discover", json!({})).await;
    assert_eq!(
        catalogue["methods"]["greeter/hello"],
        json!({
            "description": "Greets someone and tells the project's clients.",
            "params": {"name": "string — who to greet"},
            "role": "viewer",
        })
    );
    let hello = client.ok("greeter/hello", json!({"name": "ada"})).await;
    assert_eq!(hello, json!({"greeting": "hello ada", "turns": 2}));
    let render = client.notification("ui/render").await;
    assert_eq!(
        render["params"],
        json!({"text": "hello ada", "append": false})
    );
    let notify = client.notification("ui/notify").await;
    assert_eq!(
        notify["params"],
        json!({"text": "hello ada", "level": "info"})
    );
    let (code, message) = client.err("greeter/hello", json!({})).await;
    assert_eq!((code, message.as_str()), (-32602, "name is required"));
    let (code, message) = client.err("greeter/hello", json!({"name": ""})).await;
    assert_eq!((code, message.as_str()), (-32602, "name is empty"));
}

#[actix_web::test]
async fn a_plugin_method_passes_the_same_init_gate_as_the_built_in_ones() {
    let app = TestApp::start_with_tools(&[], |plugins| plugins.plugin(Greeter)).await;
    let mut client = app.client().await;
    let (code, _) = client.err("greeter/hello", json!({"name": "ada"})).await;
    assert_eq!(code, -32001, "needs init");
    assert_eq!(client.ok("greeter/turns", json!({})).await, json!(0));
    let catalogue = client.ok("discover", json!({})).await;
    assert_eq!(
        catalogue["methods"]["greeter/turns"],
        json!({
            "description": "The turns the greeter counted.",
            "params": {},
            "role": "member",
        })
    );
}

#[actix_web::test]
async fn a_disabled_plugin_leaves_nothing_behind() {
    let llm = script();
    let disabled = [("RUMMY_PLUGINS_DISABLED", "greeter")];
    let app = TestApp::with_llm_and_tools(&llm, &disabled, |plugins| plugins.plugin(Greeter)).await;
    let (mut client, _) = app.client_in_project("greet").await;
    let result = client
        .ok("ask", json!({"model": "fake", "prompt": "say hello"}))
        .await;
    let run = result["run"].as_str().unwrap();
    assert!(client.statuses(run, "shout://*").await.is_empty());
    let system = system_message(&llm.requests()[0]);
    assert!(
        !system.contains("<shout>") && !system.contains("<house_rules>"),
        "{system}"
    );
    let catalogue = client.ok("discover", json!({})).await;
    assert!(catalogue["methods"].get("greeter/hello").is_none());
    let (code, _) = client.err("greeter/hello", json!({"name": "ada"})).await;
    assert_eq!(code, -32601);
}

#[actix_web::test]
async fn a_bundled_tool_and_section_are_plugins_the_configuration_can_disable() {
    let llm = script();
    let disabled = [("RUMMY_PLUGINS_DISABLED", "sh, progress")];
    let app = TestApp::with_llm(&llm, &disabled).await;
    let (mut client, _) = app.client_in_project("quiet").await;
    client
        .ok("act", json!({"model": "fake", "prompt": "look around"}))
        .await;
    let requests = llm.requests();
    let system = system_message(&requests[0]);
    assert!(
        !system.contains("## <sh>") && system.contains("## <env>"),
        "{system}"
    );
    let user = user_message(&requests[0]);
    assert!(
        !user.contains("<progress") && user.contains("<prompt"),
        "{user}"
    );
    let catalogue = client.ok("discover", json!({})).await;
    assert!(catalogue["methods"].get("sh").is_none());
    assert!(catalogue["methods"].get("env").is_some());
}

/// Filters at four hook points (one of them rewriting `<summarize>` into a tag no tool
/// takes, which is ignored) and an observer that panics on every event.
struct Rewriter;

impl Plugin for Rewriter {
    fn name(&self) -> &'static str {
        "rewriter"
    }

    fn register(self: Box<Self>, registrar: &mut Registrar<'_>) {
        registrar.filter::<LlmMessages>(100, |messages, _| {
            if let Some(system) = messages.first_mut() {
                system.content.push_str("\n<!-- rewritten -->");
            }
        });
        registrar.filter::<LlmResponse>(100, |reply, _| {
            *reply = reply.replace("hello there", "filtered");
        });
        registrar.filter::<EntryRecording>(100, |recordable, _| {
            if let Command::Update(text) = &mut recordable.command {
                text.push_str(" loudly");
            }
        });
        registrar.filter::<EntryRecording>(200, |recordable, _| {
            if let Command::Summarize(_) = recordable.command {
                recordable.command = Command::Other {
                    name: "nosuch".into(),
                    content: TaggedText {
                        body: String::new(),
                        attributes: Vec::new(),
                    },
                };
            }
        });
        registrar.filter::<RpcResult>(100, |result, call| {
            if call.method == "ping" {
                *result = json!({"pong": true});
            }
        });
        registrar.observer(Panicker);
    }
}

struct Panicker;

impl Observer for Panicker {
    fn hooks(&self) -> &[Hook] {
        &Hook::ALL
    }

    fn observe(&self, _: &Event<'_>) {
        panic!("a plugin bug");
    }
}

#[actix_web::test]
async fn filters_rewrite_the_request_the_reply_the_commands_and_a_result_and_a_panicking_observer_harms_nothing(
) {
    let llm = script();
    let app = TestApp::with_llm_and_tools(&llm, &[], |plugins| {
        plugins.plugin(Greeter).plugin(Rewriter)
    })
    .await;
    let (mut client, _) = app.client_in_project("rewrite").await;
    let result = client
        .ok("ask", json!({"model": "fake", "prompt": "say hello"}))
        .await;
    assert_eq!(result["status"], json!(200), "{result}");
    let run = result["run"].as_str().unwrap();
    assert_eq!(
        client.statuses(run, "shout://*").await,
        [("shout://turn_1/filtered".to_string(), 200)]
    );
    let updates = client.statuses(run, "update://*").await;
    assert!(updates[0].0.contains("loudly"), "{updates:?}");
    assert_eq!(client.statuses(run, "summarize://*").await.len(), 1);
    let system = system_message(&llm.requests()[0]);
    assert!(system.ends_with("\n<!-- rewritten -->"), "{system}");
    assert_eq!(client.ok("ping", json!({})).await, json!({"pong": true}));
    assert_eq!(
        client
            .ok("getRuns", json!({}))
            .await
            .as_array()
            .map(Vec::len),
        Some(1)
    );
}

/// Records the hook of every event it observes.
struct HookLog(Arc<Mutex<Vec<&'static str>>>);

impl Plugin for HookLog {
    fn name(&self) -> &'static str {
        "hook_log"
    }

    fn register(self: Box<Self>, registrar: &mut Registrar<'_>) {
        registrar.observer(*self);
    }
}

impl Observer for HookLog {
    fn hooks(&self) -> &[Hook] {
        &Hook::ALL
    }

    fn observe(&self, event: &Event<'_>) {
        self.0.lock().unwrap().push(event.hook().name());
    }
}

#[actix_web::test]
async fn observers_see_a_request_a_loop_and_its_turns_in_order() {
    let llm = script();
    let log = Arc::new(Mutex::new(Vec::new()));
    let hooks = HookLog(Arc::clone(&log));
    let app =
        TestApp::with_llm_and_tools(&llm, &[], |plugins| plugins.plugin(Greeter).plugin(hooks))
            .await;
    let (mut client, _) = app.client_in_project("hooks").await;
    let init: Vec<&str> = log.lock().unwrap().drain(..).collect();
    assert!(
        init.ends_with(&[
            "rpc.started",
            "project.init.started",
            "project.init.completed",
            "rpc.completed"
        ]),
        "{init:?}"
    );
    client
        .ok("ask", json!({"model": "fake", "prompt": "say hello"}))
        .await;
    let (code, _) = client.err("nosuch/method", json!({})).await;
    assert_eq!(code, -32601);
    let seen: Vec<&str> = log.lock().unwrap().clone();
    let (changed, seen): (Vec<&str>, Vec<&str>) =
        seen.into_iter().partition(|hook| *hook == "entry.changed");
    assert!(!changed.is_empty(), "tests/it/entry_changed.rs pins them");
    assert_eq!(
        seen,
        [
            "rpc.started",
            "ask.started",
            "run.created",
            "loop.started",
            "turn.started",
            "turn.response",
            "tool.before",
            "tool.after",
            "entry.created",
            "entry.created",
            "run.state",
            "turn.completed",
            "turn.started",
            "turn.response",
            "entry.created",
            "run.state",
            "turn.completed",
            "loop.completed",
            "ask.completed",
            "rpc.completed",
            "rpc.error",
        ]
    );
}

/// Records the alias of every new run (not a fork) it is told of.
struct CreatedRuns(Arc<Mutex<Vec<String>>>);

impl Plugin for CreatedRuns {
    fn name(&self) -> &'static str {
        "created_runs"
    }

    fn register(self: Box<Self>, registrar: &mut Registrar<'_>) {
        registrar.observer(*self);
    }
}

impl Observer for CreatedRuns {
    fn hooks(&self) -> &[Hook] {
        &[Hook::RunCreated]
    }

    fn observe(&self, event: &Event<'_>) {
        if let Event::RunCreated {
            alias,
            forked_from: None,
            ..
        } = event
        {
            self.0.lock().unwrap().push((*alias).to_owned());
        }
    }
}

#[actix_web::test]
async fn run_created_is_told_of_a_run_start_run_creates_and_of_none_it_refuses() {
    let llm = script();
    let created = Arc::new(Mutex::new(Vec::new()));
    let observer = CreatedRuns(Arc::clone(&created));
    let app = TestApp::with_llm_and_tools(&llm, &[], |plugins| plugins.plugin(observer)).await;
    let (mut client, _) = app.client_in_project("created").await;
    let started = client.ok("startRun", json!({"model": "fake"})).await;
    client
        .err("startRun", json!({"model": "no-such-model"}))
        .await;
    assert_eq!(
        *created.lock().unwrap(),
        [started["run"].as_str().unwrap().to_owned()]
    );
}
