//! The work a fixed workload makes the server do, counted and pinned: a three-turn loop, a
//! one-turn question and a proposal accepted, with default settings and the scripted model,
//! in a project of fixed files. Every model request is held until the server is quiet and its
//! counts are read, so each segment (from a request to the next, or to the quiet after a
//! loop's end) is counted apart: SQL statements by connection, the writer's units of work,
//! reads beside it, rows written, stored bytes, frames sent and their bytes, model calls.
//!
//! The counts are deterministic, so they are compared exactly with the figures committed
//! beside this file, one file per store (`counted_work/sqlite.txt`, `postgres.txt`): a count
//! that rises fails (work was added: pin it in the same commit and say why), and so does a
//! count that falls (lower the pin, so that it never drifts above what the server does).
//! `RUMMY_COUNTED_WORK_PIN=1` writes the figures measured as the new pins;
//! `RUMMY_COUNTED_WORK_STATEMENTS=1` prints every segment's statements by text.

mod figures;

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use rummy::testing::fake_llm::{FakeLlm, Reply, Step, WhenExhausted};
use rummy::testing::WorkDone;
use serde_json::{json, Value};

use crate::support::{eventually, system_message, Client, TestApp};
use figures::{Figures, Segment};

/// The project's files: what the loops' scans find.
const FILES: [(&str, &str); 3] = [
    ("app.js", "const port = 3000;\nlisten(port);\n"),
    ("README.md", "# counted\n\nA small app.\n"),
    ("lib/util.js", "export const twice = (n) => n * 2;\n"),
];

/// The turns' replies, in the order the workload asks for them.
const TURNS: [&str; 6] = [
    // The three-turn loop.
    "<known path=\"known://port\" summary=\"port\">The app listens on 3000.</known>\
     <update>reading the app</update>",
    "<known path=\"known://helper\" summary=\"helper\">lib/util.js doubles.</known>\
     <update>noting the helper</update>",
    "<summarize>It listens on port 3000.</summarize>",
    // The one-turn question.
    "<summarize>4</summarize>",
    // The proposal, then the turn after it was accepted.
    "<set path=\"app.js\">s/3000/8080/</set><update>changing the port</update>",
    "<summarize>The app listens on 8080.</summarize>",
];

/// The session notes' answer to each refresh (memory's sidecar call, on by default).
fn notes() -> Step {
    Step::reply(
        json!({
            "title": "The app's port",
            "currentState": "done",
            "userIntent": "know and change the port",
            "activeFiles": ["app.js"],
            "decisions": [{"topic": "port", "fact": "the app listens on the port in app.js"}],
            "workLog": ["read app.js"]
        })
        .to_string(),
    )
}

/// The scripted model: each turn's reply, held until the test lets it go; a session notes'
/// refresh answered at once.
fn model() -> FakeLlm {
    let turns = Arc::new(Mutex::new(VecDeque::from(TURNS)));
    let respond = move |request: &Value| {
        if is_notes(request) {
            return notes();
        }
        let reply = turns.lock().unwrap().pop_front();
        Step::Held(Reply::new(
            reply.unwrap_or("<summarize>unscripted</summarize>"),
        ))
    };
    FakeLlm::builder([])
        .when_exhausted(WhenExhausted::Respond(Arc::new(respond)))
        .start()
}

#[actix_web::test]
async fn a_fixed_workload_does_the_pinned_work() {
    let llm = model();
    // The instance's heartbeat (a unit of work every third of the lease) stays out of the
    // few seconds measured; nothing else is configured.
    let app = TestApp::start_with(&[
        ("OPENAI_BASE_URL", llm.base_url()),
        ("RUMMY_MODEL_fake", "openai/fake"),
        ("RUMMY_CONTEXT_fake", "32768"),
        ("RUMMY_LLM_ATTEMPTS", "1"),
        ("RUMMY_LEASE_TTL_SECS", "86400"),
    ])
    .await;
    let root = app.project_root("counted");
    for (path, text) in FILES {
        let path = root.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    let mut client = app.client().await;
    client.init("counted", &root).await;
    let statements = std::env::var("RUMMY_COUNTED_WORK_STATEMENTS").is_ok_and(|v| v == "1");
    app.server.record_statements(statements);
    let mut meter = Meter::start(&app, &llm).await;

    let asked = client
        .send(
            "ask",
            json!({"model": "fake", "prompt": "Where does the app listen?"}),
        )
        .await;
    meter.at_call("three-turn loop: ask to call 1").await;
    meter.at_call("three-turn loop: call 1 to call 2").await;
    meter.at_call("three-turn loop: call 2 to call 3").await;
    meter.release();
    done(&mut client, &asked, 200).await;
    meter.at_quiet("three-turn loop: call 3 to quiet").await;

    let asked = client
        .send("ask", json!({"model": "fake", "prompt": "What is 2 + 2?"}))
        .await;
    meter.at_call("one-turn question: ask to call").await;
    meter.release();
    done(&mut client, &asked, 200).await;
    meter.at_quiet("one-turn question: call to quiet").await;

    let acted = client
        .send("act", json!({"model": "fake", "prompt": "Listen on 8080."}))
        .await;
    meter.at_call("accepted proposal: act to call 1").await;
    meter.release();
    let proposed = done(&mut client, &acted, 202).await;
    meter
        .at_quiet("accepted proposal: call 1 to proposal")
        .await;
    let resolution = json!({"path": proposed["proposed"][0]["path"], "action": "accept"});
    let resolved = client
        .send(
            "run/resolve",
            json!({"run": proposed["run"], "resolution": resolution}),
        )
        .await;
    meter.at_call("accepted proposal: accept to call 2").await;
    meter.release();
    done(&mut client, &resolved, 200).await;
    meter.at_quiet("accepted proposal: call 2 to quiet").await;

    let store = if app.database.is_some() {
        "postgres"
    } else {
        "sqlite"
    };
    let measured = Figures::new(meter.segments);
    if statements {
        println!("{}", measured.statements_table());
    }
    measured.compare_with_pins(store);
}

/// The reply to request `id`, whose `status` must be `status`.
async fn done(client: &mut Client, id: &Value, status: i64) -> Value {
    let reply = client.reply(id).await;
    let result = reply["result"].clone();
    assert_eq!(result["status"], json!(status), "{reply}");
    result
}

/// Reads the server's work at each point of the workload, the server quiet.
struct Meter<'a> {
    app: &'a TestApp,
    llm: &'a FakeLlm,
    /// The turns' model requests waited for so far.
    calls: usize,
    /// The model request held now, if any.
    held: bool,
    last: WorkDone,
    segments: Vec<Segment>,
}

impl<'a> Meter<'a> {
    async fn start(app: &'a TestApp, llm: &'a FakeLlm) -> Meter<'a> {
        let last = quiet_work(app, true).await;
        Meter {
            app,
            llm,
            calls: 0,
            held: false,
            last,
            segments: Vec::new(),
        }
    }

    /// Lets the held model request be answered.
    fn release(&mut self) {
        if std::mem::take(&mut self.held) {
            self.llm.release();
        }
    }

    /// Counts `name` up to the next turn's model request, held meanwhile (the one held
    /// before is let go first).
    async fn at_call(&mut self, name: &str) {
        self.release();
        self.calls += 1;
        let (llm, calls) = (self.llm, self.calls);
        eventually("the next turn's model request", async || {
            (turn_requests(llm) >= calls).then_some(())
        })
        .await;
        self.held = true;
        self.count(name, false).await;
    }

    /// Counts `name` up to the quiet after a loop's end (memory's session notes included).
    async fn at_quiet(&mut self, name: &str) {
        self.count(name, true).await;
    }

    async fn count(&mut self, name: &str, loops_ended: bool) {
        let now = quiet_work(self.app, loops_ended).await;
        self.segments.push(Segment::between(name, &self.last, &now));
        self.last = now;
    }
}

/// The turns' requests the model received so far (a session notes' refresh is not a turn).
fn turn_requests(llm: &FakeLlm) -> usize {
    llm.requests()
        .iter()
        .filter(|request| !is_notes(request))
        .count()
}

/// Whether `request` is a session notes' refresh.
fn is_notes(request: &Value) -> bool {
    system_message(request).starts_with("You keep the session notes")
}

/// The server's work once it is quiet: nothing on its way inside it (no run with work, when
/// `loops_ended`), what it handed to the writer written, and then what those writes handed
/// on (the notifications they numbered, to the hubs and the bus) handed on too.
async fn quiet_work(app: &TestApp, loops_ended: bool) -> WorkDone {
    let server = &app.server;
    let quiet = async || {
        eventually("the server to be quiet", async || {
            server.is_quiet(loops_ended).then_some(())
        })
        .await;
    };
    quiet().await;
    server.settle_writes().await.unwrap();
    quiet().await;
    server.work_done().await.unwrap()
}
