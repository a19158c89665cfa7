//! The context economy end to end: the pre-LLM ceiling, panic mode, the size gate, partial
//! reads and fidelity changes, with a scripted LLM and small context windows.

use serde_json::{json, Value};

use crate::support::{Client, TestApp};
use rummy::testing::fake_llm::{FakeLlm, Reply, Step, WhenExhausted};

/// Characters per token in these tests (the server's default divisor).
const DIVISOR: usize = 4;

pub(crate) async fn app_with(llm: &FakeLlm, context: usize) -> TestApp {
    let context = context.to_string();
    TestApp::with_llm(
        llm,
        &[
            ("RUMMY_CONTEXT_fake", context.as_str()),
            ("RUMMY_MAX_TURNS", "6"),
            // `<delegate>` is not offered in panic mode: its doc would leave a panic loop's
            // packet and count as room the loop freed, a strike these figures do not expect.
            ("RUMMY_PLUGINS_DISABLED", "subagents"),
        ],
    )
    .await
}

pub(crate) fn packet_tokens(request: &Value) -> usize {
    let characters: usize = request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|message| {
            message["content"]
                .as_str()
                .unwrap_or_default()
                .chars()
                .count()
        })
        .sum();
    characters.div_ceil(DIVISOR)
}

/// The size of the first packet of a fresh run with a short prompt: the instructions and
/// the empty sections.
pub(crate) async fn base_packet_tokens() -> usize {
    let llm = FakeLlm::start([Step::reply("<summarize>ok</summarize>")]);
    let app = app_with(&llm, 1_000_000).await;
    let (mut client, _) = app.client_in_project("base").await;
    client
        .ok("ask", json!({"model": "fake", "prompt": "x"}))
        .await;
    packet_tokens(&llm.requests()[0])
}

/// A `<known>` body of about `tokens` tokens.
fn filler(tokens: usize) -> String {
    "lorem ipsum ".repeat(tokens * DIVISOR / 12)
}

/// Three knowns of ~450 tokens each, written by the first loop.
fn three_knowns() -> String {
    let body = filler(450);
    format!(
        "<known path=\"known://notes/a\">{body}</known>\
         <known path=\"known://notes/b\">{body}</known>\
         <known path=\"known://notes/c\">{body}</known>\
         <summarize>noted</summarize>"
    )
}

async fn run_of(client: &mut Client) -> Value {
    client.ok("getRuns", json!({})).await[0].clone()
}

#[actix_web::test]
async fn a_panic_frees_room_and_then_the_original_prompt_runs() {
    let base = base_packet_tokens().await;
    let window = base + 2_600;
    let big_prompt = format!("Summarize this log: {}", filler(1_500));
    let llm = FakeLlm::start([
        Step::reply(three_knowns()),
        Step::reply("<set path=\"known://notes/*\" fidelity=\"archive\"/><update>archived the notes</update>"),
        Step::reply("<summarize>the log is fine</summarize>"),
    ]);
    let app = app_with(&llm, window).await;
    let (mut client, _) = app.client_in_project("panic").await;
    let first = client
        .ok("ask", json!({"model": "fake", "prompt": "take notes"}))
        .await;
    let run = first["run"].as_str().unwrap().to_string();
    let outcome = client
        .ok(
            "ask",
            json!({"model": "fake", "prompt": big_prompt, "run": run}),
        )
        .await;
    assert_eq!(outcome["status"], json!(200), "{outcome}");
    let requests = llm.requests();
    assert_eq!(
        requests.len(),
        3,
        "notes, one panic turn, the retried prompt"
    );
    let panic_packet = requests[1]["messages"][1]["content"].as_str().unwrap();
    assert!(
        panic_packet.contains("mode=\"panic\""),
        "the panic loop has its own prompt: {panic_packet}"
    );
    assert!(
        !panic_packet.contains("Summarize this log"),
        "the big prompt waits"
    );
    let retried = requests[2]["messages"][1]["content"].as_str().unwrap();
    assert!(retried.contains("Summarize this log"));
    assert!(packet_tokens(&requests[2]) <= window);
    let state = run_of(&mut client).await;
    assert_eq!(state["status"], json!(200));
    assert_eq!(state["summary"], json!("the log is fine"));
}

#[actix_web::test]
async fn a_panic_that_frees_nothing_fails_after_three_strikes() {
    let base = base_packet_tokens().await;
    let window = base + 2_600;
    let big_prompt = format!("Summarize this log: {}", filler(1_500));
    let llm = FakeLlm::builder([Step::reply(three_knowns())])
        .when_exhausted(WhenExhausted::Reply(Reply::new(
            "<update>thinking about it</update>",
        )))
        .start();
    let app = app_with(&llm, window).await;
    let (mut client, _) = app.client_in_project("strikes").await;
    let first = client
        .ok("ask", json!({"model": "fake", "prompt": "take notes"}))
        .await;
    let run = first["run"].as_str().unwrap().to_string();
    let outcome = client
        .ok(
            "ask",
            json!({"model": "fake", "prompt": big_prompt, "run": run}),
        )
        .await;
    assert_eq!(outcome["status"], json!(413), "{outcome}");
    let error = outcome["error"].as_str().unwrap();
    assert!(error.contains("prompt"), "names what does not fit: {error}");
    let state = run_of(&mut client).await;
    assert_eq!(state["status"], json!(413), "not stuck at 102: {state}");
    let prompts = client
        .ok("getEntries", json!({"run": run, "pattern": "prompt://*"}))
        .await;
    let panic_prompt = prompts.as_array().unwrap().last().unwrap();
    assert_eq!(
        panic_prompt["fidelity"],
        json!("archive"),
        "the failed panic's instructions are archived: {prompts}"
    );
    let calls = llm.requests().len();
    assert!(
        calls <= 5,
        "three strikes, not the turn limit: {calls} calls"
    );
    let (pending, latest) = app
        .read(move |conn| {
            let run = crate::stored::run_named(conn, &run).expect("the run exists");
            (
                crate::stored::pending_loops(conn, run.id),
                crate::stored::latest_loop_status(conn, run.id),
            )
        })
        .await;
    assert!(
        pending == 0 && !matches!(latest, Some(100 | 102)),
        "the retry ended with the panic: {pending:?} {latest:?}"
    );
}

#[actix_web::test]
async fn a_prompt_larger_than_the_window_fails_clearly_without_calling_the_llm() {
    let base = base_packet_tokens().await;
    let window = base + 1_000;
    let llm = FakeLlm::start([]);
    let app = app_with(&llm, window).await;
    let (mut client, _) = app.client_in_project("huge").await;
    let prompt = format!("Read this: {}", filler(window * 2));
    let outcome = client
        .ok("ask", json!({"model": "fake", "prompt": prompt}))
        .await;
    assert_eq!(outcome["status"], json!(413), "{outcome}");
    assert!(outcome["error"].as_str().unwrap().contains("prompt"));
    assert!(llm.requests().is_empty());
    assert_eq!(run_of(&mut client).await["status"], json!(413));
}

#[actix_web::test]
async fn an_oversized_known_is_refused_with_a_message_that_teaches_splitting() {
    let huge = filler(900);
    let llm = FakeLlm::start([
        Step::reply(format!(
            "<known path=\"known://manual\">{huge}</known><update>saving</update>"
        )),
        Step::reply("<summarize>ok</summarize>"),
    ]);
    let app = app_with(&llm, 100_000).await;
    let (mut client, _) = app.client_in_project("gate").await;
    let outcome = client
        .ok("ask", json!({"model": "fake", "prompt": "save"}))
        .await;
    assert_eq!(outcome["status"], json!(200));
    let second = llm.requests()[1].to_string();
    assert!(second.contains("413"), "the model sees the refusal");
    assert!(
        second.to_lowercase().contains("split"),
        "and is taught to split"
    );
    let run = outcome["run"].as_str().unwrap();
    let stored = client
        .ok(
            "getEntries",
            json!({"run": run, "pattern": "known://manual"}),
        )
        .await;
    assert!(
        stored
            .as_array()
            .unwrap()
            .iter()
            .all(|entry| entry["tokens"].as_i64().unwrap() < 512),
        "nothing oversized was stored: {stored}"
    );
}

#[actix_web::test]
async fn a_partial_read_shows_the_lines_and_keeps_the_fidelity() {
    let llm = FakeLlm::start([
        Step::reply("<get path=\"notes.md\" line=\"2\" limit=\"1\"/><update>reading</update>"),
        Step::reply("<summarize>read it</summarize>"),
    ]);
    let app = app_with(&llm, 100_000).await;
    let (mut client, root) = app.client_in_project("partial").await;
    std::fs::write(
        root.join("notes.md"),
        "first line\nsecond line\nthird line\n",
    )
    .unwrap();
    let outcome = client
        .ok("ask", json!({"model": "fake", "prompt": "read"}))
        .await;
    assert_eq!(outcome["status"], json!(200));
    let second = llm.requests()[1]["messages"][1]["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(second.contains("second line"), "{second}");
    let run = outcome["run"].as_str().unwrap();
    let file = client
        .ok("getEntries", json!({"run": run, "pattern": "notes.md"}))
        .await;
    assert_eq!(
        file[0]["fidelity"],
        json!("index"),
        "a partial read never promotes"
    );
}

#[actix_web::test]
async fn a_fidelity_change_shows_in_the_next_packet() {
    let body = "the deploy target is the staging cluster in eu-west";
    let llm = FakeLlm::start([
        Step::reply(format!(
            "<known path=\"known://deploy\">{body}</known><update>noted</update>"
        )),
        Step::reply(
            "<set path=\"known://deploy\" fidelity=\"summary\" summary=\"deploy,staging\"/><update>tidy</update>",
        ),
        Step::reply("<summarize>done</summarize>"),
    ]);
    let app = app_with(&llm, 100_000).await;
    let (mut client, _) = app.client_in_project("fidelity").await;
    let outcome = client
        .ok("ask", json!({"model": "fake", "prompt": "go"}))
        .await;
    assert_eq!(outcome["status"], json!(200));
    let requests = llm.requests();
    let full = requests[1]["messages"][0]["content"].as_str().unwrap();
    assert!(full.contains(body), "full fidelity shows the body");
    let summary = requests[2]["messages"][0]["content"].as_str().unwrap();
    assert!(
        !summary.contains(body),
        "summary fidelity hides it: {summary}"
    );
    assert!(summary.contains("deploy,staging"), "and shows the summary");
}

#[actix_web::test]
async fn the_write_guard_trips_mid_dispatch_and_fails_every_later_write() {
    let base = base_packet_tokens().await;
    let window = (base + 1_200) * 10 / 9;
    let body = filler(450);
    let llm = FakeLlm::start([
        Step::reply(format!(
            "<known path=\"known://a\">{body}</known>\
             <known path=\"known://b\">{body}</known>\
             <known path=\"known://c\">{body}</known><update>saving</update>"
        )),
        Step::reply("<summarize>ok</summarize>"),
    ]);
    let app = app_with(&llm, window).await;
    let (mut client, _) = app.client_in_project("guard").await;
    let outcome = client
        .ok("ask", json!({"model": "fake", "prompt": "save"}))
        .await;
    assert_eq!(outcome["status"], json!(200), "{outcome}");
    let run = outcome["run"].as_str().unwrap();
    let knowns = client
        .ok("getEntries", json!({"run": run, "pattern": "known://*"}))
        .await;
    let status_of = |path: &str| {
        knowns
            .as_array()
            .unwrap()
            .iter()
            .find(|entry| entry["path"] == json!(path))
            .map(|entry| entry["status"].clone())
    };
    assert_eq!(status_of("known://a"), Some(json!(200)), "{knowns}");
    assert_ne!(status_of("known://b"), Some(json!(200)), "{knowns}");
    assert_ne!(status_of("known://c"), Some(json!(200)), "{knowns}");
    let second = llm.requests()[1].to_string();
    assert!(
        second.contains("413"),
        "the model sees why its writes failed"
    );
}

#[actix_web::test]
async fn a_prompt_queued_behind_a_failing_panic_still_runs() {
    let base = base_packet_tokens().await;
    let window = base + 2_600;
    let big_prompt = format!("Summarize this log: {}", filler(1_500));
    let slow = || {
        Step::delayed(
            std::time::Duration::from_millis(200),
            Reply::new("<update>thinking about it</update>"),
        )
    };
    let mut script = vec![Step::reply(three_knowns())];
    script.extend((0..4).map(|_| slow()));
    let llm = FakeLlm::builder(script)
        .when_exhausted(WhenExhausted::Reply(Reply::new(
            "<summarize>answered</summarize>",
        )))
        .start();
    let app = app_with(&llm, window).await;
    let (mut client, _) = app.client_in_project("queued").await;
    let (mut other, _) = app.client_in_project("queued").await;
    let first = client
        .ok("ask", json!({"model": "fake", "prompt": "take notes"}))
        .await;
    let run = first["run"].as_str().unwrap().to_string();
    let big = client
        .send(
            "ask",
            json!({"model": "fake", "prompt": big_prompt, "run": run}),
        )
        .await;
    llm.wait_for_requests(2).await;
    let small = other
        .send(
            "ask",
            json!({"model": "fake", "prompt": "a small question", "run": run}),
        )
        .await;
    let failed = client.reply(&big).await;
    assert_eq!(failed["result"]["status"], json!(413), "{failed}");
    let answered = other.reply(&small).await;
    assert_eq!(
        answered["result"]["status"],
        json!(200),
        "the queued prompt runs after the panic failed: {answered}"
    );
}

#[actix_web::test]
async fn a_prompt_injected_after_a_recovered_panic_may_panic_again() {
    let base = base_packet_tokens().await;
    let window = base + 2_600;
    let big = |topic: &str| format!("Summarize this {topic}: {}", filler(1_500));
    let archive = "<set path=\"known://notes/*\" fidelity=\"archive\"/><update>archived</update>";
    let llm = FakeLlm::start([
        Step::reply(three_knowns()),
        Step::reply(archive),
        Step::reply("<summarize>the log is fine</summarize>"),
        Step::reply(
            "<set path=\"prompt://5\" fidelity=\"archive\"/><get path=\"known://notes/*\"/>\
             <summarize>restored</summarize>",
        ),
        Step::reply(archive),
        Step::reply("<summarize>the trace is fine</summarize>"),
    ]);
    let app = app_with(&llm, window).await;
    let (mut client, _) = app.client_in_project("inject_panic").await;
    let first = client
        .ok("ask", json!({"model": "fake", "prompt": "take notes"}))
        .await;
    let run = first["run"].as_str().unwrap().to_string();
    let recovered = client
        .ok(
            "ask",
            json!({"model": "fake", "prompt": big("log"), "run": run}),
        )
        .await;
    assert_eq!(recovered["status"], json!(200), "{recovered}");
    // The model loads the notes again, within the write gate once it archived the log.
    let restored = client
        .ok(
            "ask",
            json!({"model": "fake", "prompt": "restore the notes", "run": run}),
        )
        .await;
    assert_eq!(restored["status"], json!(200), "{restored}");
    let injected = client
        .ok("run/inject", json!({"run": run, "message": big("trace")}))
        .await;
    assert_eq!(
        injected["status"],
        json!(200),
        "a new prompt may panic again: {injected}"
    );
    let requests = llm.requests();
    assert_eq!(requests.len(), 6, "a second panic, then the prompt");
    let panic_packet = requests[4]["messages"][1]["content"].as_str().unwrap();
    assert!(panic_packet.contains("mode=\"panic\""), "{panic_packet}");
}
