//! How many model calls a loop costs with default settings, measured on the requests the
//! scripted model receives: a mix of one-turn questions, proposals a person rejects or
//! accepts, and work over several turns. Each scenario runs on a server of its own, stopped
//! before its requests are counted (a stop waits for the reflections of a loop's end, which
//! run after the reply is sent). The model answers the session notes' sidecar with valid
//! notes and every turn with the scenario's next reply, so the count does not depend on the
//! order the calls come in.
//!
//! `cargo test --test it llm_calls:: -- --nocapture` prints the table; docs/src/memory.md's
//! "Cost" paragraph gives its numbers before and after the rule that a loop refreshes the
//! notes only after work worth noting.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use rummy::testing::fake_llm::{FakeLlm, Reply, Step, WhenExhausted, DEFAULT_FINAL_REPLY};
use serde_json::{json, Value};

use crate::support::{system_message, Client, TestApp};

/// The replies the model gives the turns, in order; the final reply once they run out.
#[derive(Clone, Default)]
struct Turns(Arc<Mutex<VecDeque<String>>>);

impl Turns {
    fn set(&self, replies: impl IntoIterator<Item = String>) {
        *self.0.lock().unwrap() = replies.into_iter().collect();
    }

    fn next(&self) -> String {
        self.0
            .lock()
            .unwrap()
            .pop_front()
            .unwrap_or_else(|| DEFAULT_FINAL_REPLY.to_owned())
    }
}

/// What a request the model received was for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Purpose {
    Turn,
    SessionNotes,
    Rerank,
}

fn purpose(request: &Value) -> Purpose {
    let system = system_message(request);
    if system.starts_with("You keep the session notes") {
        Purpose::SessionNotes
    } else if system.starts_with("You order remembered facts") {
        Purpose::Rerank
    } else {
        Purpose::Turn
    }
}

fn model(turns: &Turns) -> FakeLlm {
    let turns = turns.clone();
    let notes = json!({
        "title": "Work",
        "currentState": "working",
        "decisions": [{"topic": "build", "fact": "make builds it"}],
        "workLog": ["worked"]
    })
    .to_string();
    FakeLlm::builder([])
        .when_exhausted(WhenExhausted::Respond(Arc::new(
            move |request| match purpose(request) {
                Purpose::SessionNotes => Step::Reply(Reply::new(notes.clone())),
                Purpose::Rerank => Step::Reply(Reply::new("{\"order\": []}")),
                Purpose::Turn => Step::Reply(Reply::new(turns.next())),
            },
        )))
        .start()
}

/// The calls one scenario made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Count {
    loops: usize,
    turns: usize,
    session_notes: usize,
    rerank: usize,
}

impl Count {
    fn calls(&self) -> usize {
        self.turns + self.session_notes + self.rerank
    }
}

async fn ask(client: &mut Client, run: Option<&str>, prompt: &str) -> String {
    let mut params = json!({"model": "fake", "prompt": prompt});
    if let Some(run) = run {
        params["run"] = json!(run);
    }
    let result = client.ok("ask", params).await;
    assert_eq!(result["status"], json!(200), "{result}");
    result["run"].as_str().unwrap().to_owned()
}

/// Resolves `path`; the reply (the resumed loop's outcome after an acceptance).
async fn resolve(client: &mut Client, run: &str, path: &str, action: &str) -> Value {
    client
        .ok(
            "run/resolve",
            json!({"run": run, "resolution": {"path": path, "action": action, "output": "ok\n"}}),
        )
        .await
}

/// The scenarios: each a name, the turns' replies and what a client does.
#[derive(Debug, Clone, Copy)]
enum Scenario {
    OneQuestion,
    EightQuestionsInOneRun,
    RejectedProposal,
    AcceptedProposal,
    EightTurnsWritingKnowledge,
    FourTurnsReading,
}

const SCENARIOS: [Scenario; 6] = [
    Scenario::OneQuestion,
    Scenario::EightQuestionsInOneRun,
    Scenario::RejectedProposal,
    Scenario::AcceptedProposal,
    Scenario::EightTurnsWritingKnowledge,
    Scenario::FourTurnsReading,
];

impl Scenario {
    fn replies(self) -> Vec<String> {
        let proposal = "<sh>make clean</sh><update>cleaning</update>".to_owned();
        match self {
            Scenario::OneQuestion => vec!["<summarize>4</summarize>".into()],
            Scenario::EightQuestionsInOneRun => (1..=8)
                .map(|n| format!("<summarize>answer {n}</summarize>"))
                .collect(),
            Scenario::RejectedProposal => vec![proposal],
            Scenario::AcceptedProposal => vec![proposal, "<summarize>cleaned</summarize>".into()],
            Scenario::EightTurnsWritingKnowledge => (1..=7)
                .map(|n| {
                    format!("<known path=\"known://step_{n}\">Step {n} learned.</known><update>step {n}</update>")
                })
                .chain(["<summarize>learned</summarize>".to_owned()])
                .collect(),
            Scenario::FourTurnsReading => ["app.js", "*.js", "**"]
                .iter()
                .map(|path| format!("<get path=\"{path}\"/><update>reading {path}</update>"))
                .chain(["<summarize>read</summarize>".to_owned()])
                .collect(),
        }
    }

    /// Drives the scenario; the loops it ran.
    async fn drive(self, client: &mut Client) -> usize {
        match self {
            Scenario::OneQuestion => {
                ask(client, None, "What is 2 + 2?").await;
                1
            }
            Scenario::EightQuestionsInOneRun => {
                let run = ask(client, None, "Question 1?").await;
                for n in 2..=8 {
                    ask(client, Some(&run), &format!("Question {n}?")).await;
                }
                8
            }
            Scenario::RejectedProposal => {
                let (run, path) = client.act_until_proposal("Clean the build.").await;
                resolve(client, &run, &path, "reject").await;
                1
            }
            Scenario::AcceptedProposal => {
                let (run, path) = client.act_until_proposal("Clean the build.").await;
                let resumed = resolve(client, &run, &path, "accept").await;
                assert_eq!(resumed["status"], json!(200), "{resumed}");
                2
            }
            Scenario::EightTurnsWritingKnowledge => {
                let result = client
                    .ok(
                        "act",
                        json!({"model": "fake", "prompt": "Learn the build."}),
                    )
                    .await;
                assert_eq!(result["status"], json!(200), "{result}");
                1
            }
            Scenario::FourTurnsReading => {
                ask(client, None, "What does app.js do?").await;
                1
            }
        }
    }

    /// The calls it makes with the notes refreshed only after work worth noting.
    fn expected(self) -> Count {
        let count = |loops, turns, session_notes| Count {
            loops,
            turns,
            session_notes,
            rerank: 0,
        };
        match self {
            Scenario::OneQuestion => count(1, 1, 0),
            Scenario::EightQuestionsInOneRun => count(8, 8, 0),
            Scenario::RejectedProposal => count(1, 1, 0),
            Scenario::AcceptedProposal => count(2, 2, 1),
            Scenario::EightTurnsWritingKnowledge => count(1, 8, 3),
            Scenario::FourTurnsReading => count(1, 4, 1),
        }
    }
}

/// Runs `scenario` on a server of its own with default settings; the calls it made.
async fn measure(llm: &FakeLlm, turns: &Turns, scenario: Scenario) -> Count {
    turns.set(scenario.replies());
    let before = llm.requests().len();
    let app = TestApp::with_llm_default_memory(llm, &[]).await;
    let (mut client, _) = app.client_in_project("calls").await;
    let loops = scenario.drive(&mut client).await;
    drop(client);
    app.server.stop().await;
    let requests = llm.requests();
    let of = |wanted: Purpose| {
        requests[before..]
            .iter()
            .filter(|request| purpose(request) == wanted)
            .count()
    };
    Count {
        loops,
        turns: of(Purpose::Turn),
        session_notes: of(Purpose::SessionNotes),
        rerank: of(Purpose::Rerank),
    }
}

#[actix_web::test]
async fn model_calls_per_loop_with_default_settings() {
    let turns = Turns::default();
    let llm = model(&turns);
    let mut measured = Vec::new();
    for scenario in SCENARIOS {
        measured.push((scenario, measure(&llm, &turns, scenario).await));
    }
    println!("scenario | loops | turn calls | session-notes calls | calls | calls per loop");
    let (mut loops, mut calls) = (0, 0);
    for (scenario, count) in &measured {
        loops += count.loops;
        calls += count.calls();
        println!(
            "{scenario:?} | {} | {} | {} | {} | {:.2}",
            count.loops,
            count.turns,
            count.session_notes,
            count.calls(),
            count.calls() as f64 / count.loops as f64
        );
    }
    println!(
        "all | {loops} | | | {calls} | {:.2}",
        calls as f64 / loops as f64
    );
    for (scenario, count) in measured {
        assert_eq!(count, scenario.expected(), "{scenario:?}");
    }
}
