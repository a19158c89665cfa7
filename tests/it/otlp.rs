//! OpenTelemetry traces as a collector receives them: one `ask` through a real server,
//! exporting to an OTLP/HTTP receiver on loopback (`tests/otel/receiver.py`, built on
//! OpenTelemetry's own protobuf messages), is one trace: the request, its loop, the turn
//! and its stages, and the model call under the turn's `call` stage, with who asked, the
//! project, the run and the call's counts, and never the prompt, the reply or a key.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};

use rummy::testing::fake_llm::{FakeLlm, Step};
use serde_json::{json, Value};

use crate::access::users;
use crate::process::ServerProcess;
use crate::support::{eventually, project_root, Client};

const TOKEN: &str = "ada-token-otel-0123456789";
const KEY: &str = "sk-otel-key-0123456789";
const PROMPT: &str = "PROMPT-TEXT-NOT-FOR-TRACES";
const REPLY: &str = "REPLY-TEXT-NOT-FOR-TRACES";

/// The receiver's process and the spans it printed so far.
struct Receiver {
    child: Child,
    port: u16,
    spans: Arc<Mutex<Vec<Value>>>,
}

impl Receiver {
    /// Starts `tests/otel/receiver.py` with the interpreter of `tests/otel/.venv` (which
    /// `tests/run.sh` makes), else `python3`.
    fn start() -> Receiver {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/otel");
        let venv = dir.join(".venv/bin/python");
        let python = if venv.exists() {
            venv
        } else {
            "python3".into()
        };
        let mut child = Command::new(python)
            .arg(dir.join("receiver.py"))
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let port = lines.next().unwrap().unwrap().trim().parse().unwrap();
        let spans = Arc::new(Mutex::new(Vec::new()));
        let received = Arc::clone(&spans);
        std::thread::spawn(move || {
            for line in lines.map_while(Result::ok) {
                received
                    .lock()
                    .unwrap()
                    .push(serde_json::from_str(&line).unwrap());
            }
        });
        Receiver { child, port, spans }
    }

    fn spans(&self) -> Vec<Value> {
        self.spans.lock().unwrap().clone()
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The one span named `name` whose parent is `parent`.
fn child<'a>(spans: &'a [Value], name: &str, parent: &Value) -> &'a Value {
    let found: Vec<&Value> = spans
        .iter()
        .filter(|span| span["name"] == name && span["parent"] == parent["id"])
        .collect();
    assert_eq!(found.len(), 1, "one {name} under {parent}: {spans:#?}");
    found[0]
}

#[actix_web::test]
#[ignore = "needs python3 with opentelemetry-proto (tests/otel/.venv, made by tests/run.sh)"]
async fn one_ask_is_one_trace_from_the_request_to_the_model_call() {
    let receiver = Receiver::start();
    let llm = FakeLlm::start([Step::reply(format!("{REPLY}<summarize>done</summarize>"))]);
    let home = tempfile::tempdir().unwrap();
    let root = project_root(home.path());
    let people = home.path().join("users.toml");
    std::fs::write(&people, users(&[("ada", TOKEN, "admin", &["*"])])).unwrap();
    let endpoint = format!("http://127.0.0.1:{}", receiver.port);
    let server = ServerProcess::start_with(
        home.path(),
        &llm,
        &[
            ("RUMMY_USERS_FILE", people.to_str().unwrap()),
            ("OPENAI_API_KEY", KEY),
            ("RUMMY_OTLP_ENDPOINT", &endpoint),
            ("RUMMY_OTLP_SERVICE_NAME", "rummy-under-test"),
            ("OTEL_BSP_SCHEDULE_DELAY", "50"),
        ],
    )
    .await;
    let url = format!("ws://127.0.0.1:{}/?token={TOKEN}", server.port);
    let mut ada = Client::connect(&url).await;
    let project = ada.init("traced", &root).await;
    let outcome = ada
        .ok("ask", json!({"model": "fake", "prompt": PROMPT}))
        .await;
    assert_eq!(outcome["status"], json!(200), "{outcome}");

    let spans = eventually("the ask's trace to arrive", async || {
        let spans = receiver.spans();
        let complete = ["rpc.request", "llm.complete", "publish"]
            .iter()
            .all(|name| spans.iter().any(|span| span["name"] == *name))
            && spans.iter().any(|span| {
                span["name"] == "rpc.request" && span["attributes"]["rpc.method"] == "ask"
            });
        complete.then_some(spans)
    })
    .await;
    let ask = spans
        .iter()
        .find(|span| span["name"] == "rpc.request" && span["attributes"]["rpc.method"] == "ask")
        .unwrap();
    assert_eq!(
        ask["parent"],
        json!(""),
        "a request is a trace's root: {ask}"
    );
    assert_eq!(ask["attributes"]["person"], json!("ada"), "{ask}");
    assert_eq!(ask["attributes"]["project.id"], json!(project), "{ask}");
    assert_eq!(ask["resource"]["service.name"], json!("rummy-under-test"));

    let lp = child(&spans, "loop", ask);
    let run = &lp["attributes"]["run.id"];
    assert!(run.is_string(), "{lp}");
    let turn = child(&spans, "turn", lp);
    assert_eq!(&turn["attributes"]["run.id"], run, "{turn}");
    for stage in ["measure", "call", "gather", "apply", "publish"] {
        child(&spans, stage, turn);
    }
    let call = child(&spans, "call", turn);
    let model = child(&spans, "llm.complete", call);
    let attributes = &model["attributes"];
    assert_eq!(attributes["llm.model"], json!("fake"), "{model}");
    assert_eq!(attributes["llm.purpose"], json!("turn"), "{model}");
    assert_eq!(&attributes["run.id"], run, "{model}");
    for count in ["llm.prompt_tokens", "llm.completion_tokens"] {
        assert!(
            attributes[count].as_i64().is_some_and(|n| n > 0),
            "{count}: {model}"
        );
    }
    assert!(attributes["llm.cost_micros"].is_i64(), "{model}");
    for span in [lp, turn, model] {
        assert_eq!(span["trace"], ask["trace"], "one trace: {span}");
    }
    assert!(
        !spans.iter().any(|span| span["name"] == "connection"),
        "a connection is no span of a trace"
    );
    let exported = serde_json::to_string(&spans).unwrap();
    for secret in [PROMPT, REPLY, KEY, TOKEN] {
        assert!(!exported.contains(secret), "{secret} exported: {exported}");
    }
}
