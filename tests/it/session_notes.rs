//! Session notes through the public protocol, with a scripted model whose steps answer the
//! turns and the sidecar calls in the order the loop makes them (a turn, then the refresh
//! it triggers): the notes the sidecar answers reach the next turn's `<memory>`,
//! `run/state.session` and `memory/session`; a loop's end consolidates their decisions into
//! project memory, which a new run recalls and a contradicting decision replaces (the old
//! one kept in the history), and moves the run's narrative to the history; a malformed or failed answer keeps the notes and the loop
//! completes; a panic refreshes them and consolidates them before it compresses; with
//! memory off no sidecar
//! request reaches the model; a stopping server writes the notes of the loop end it is
//! reflecting on before it gives the run up; a client's edit or erasure of the notes reaches
//! the project's other clients at once (`ui/notify`); every answered call, the turns' and the
//! sidecar's, is recorded once in the run's `model_calls`.

use std::time::Duration;

use rummy::testing::fake_llm::{FakeLlm, Reply, Step, Usage};
use serde_json::{json, Value};

use crate::support::{eventually, system_message, user_message, Client, TestApp};

/// Notes on, refreshed after every turn that wrote.
pub(crate) const NOTES_ON: [(&str, &str); 2] = [
    ("RUMMY_MEMORY_SESSION_TOKENS", "600"),
    ("RUMMY_MEMORY_SESSION_EVERY_TURNS", "1"),
];

/// The sidecar's answer: notes titled `title` with one decision.
pub(crate) fn notes(title: &str, topic: &str, fact: &str) -> Step {
    Step::reply(
        json!({
            "title": title,
            "currentState": "working",
            "userIntent": "fix the login",
            "activeFiles": ["src/auth.rs"],
            "decisions": [{"topic": topic, "fact": fact}],
            "workLog": ["read the code"]
        })
        .to_string(),
    )
}

/// A turn that writes knowledge and goes on.
pub(crate) fn learning(slug: &str) -> Step {
    Step::reply(format!(
        "<known path=\"known://{slug}\">Learned {slug}.</known><update>learning</update>"
    ))
}

fn is_sidecar(request: &Value) -> bool {
    system_message(request).starts_with("You keep the session notes")
}

async fn ask(client: &mut Client, prompt: &str) -> String {
    let result = client
        .ok("ask", json!({"model": "fake", "prompt": prompt}))
        .await;
    assert_eq!(result["status"], json!(200), "{result}");
    result["run"].as_str().unwrap().to_owned()
}

/// Every `run/state` received so far, oldest first.
fn states(client: &Client) -> Vec<Value> {
    client
        .pending_notifications()
        .iter()
        .filter(|message| message["method"] == "run/state")
        .map(|message| message["params"].clone())
        .collect()
}

/// Waits until `run`'s notes are titled `title`: a loop's end refreshes them after its reply
/// is sent, and the server announces nothing when that is done, so this polls.
async fn until_titled(client: &mut Client, run: &str, title: &str) -> Value {
    let what = format!("the notes of {run} to be titled {title:?}");
    eventually(&what, async || {
        let session = client.ok("memory/session", json!({"run": run})).await;
        (session["notes"]["title"] == json!(title)).then_some(session)
    })
    .await
}

/// Waits until the project's newest fact says `body` (consolidation follows a loop's end).
async fn until_fact(client: &mut Client, body: &str) -> Value {
    eventually(&format!("a fact saying {body:?}"), async || {
        let facts = client.ok("memory/list", json!({})).await;
        (facts["items"][0]["body"] == json!(body)).then_some(facts)
    })
    .await
}

#[actix_web::test]
async fn notes_reach_the_next_turn_and_clients_and_their_decision_outlives_the_run() {
    let llm = FakeLlm::start([
        learning("auth"),
        notes("Fix login", "auth tokens", "Use JWT bearer tokens."),
        Step::reply("<summarize>Done.</summarize>"),
        notes("Fix login, done", "auth tokens", "Use JWT bearer tokens."),
        Step::reply("<summarize>JWT bearer tokens.</summarize>"),
        notes("Auth question", "auth tokens", "Use session cookies."),
    ]);
    let app = TestApp::with_llm(&llm, &NOTES_ON).await;
    let (mut client, _) = app.client_in_project("shop").await;
    let run = ask(&mut client, "Fix the login.").await;
    let session = until_titled(&mut client, &run, "Fix login, done").await;
    let facts = until_fact(&mut client, "Use JWT bearer tokens.").await;

    let requests = llm.requests();
    assert_eq!(requests.len(), 4, "two turns, two refreshes");
    let sidecars: Vec<bool> = requests.iter().map(is_sidecar).collect();
    assert_eq!(sidecars, [false, true, false, true]);
    assert!(user_message(&requests[1]).contains("Learned auth."));
    let first = user_message(&requests[0]);
    assert!(!first.contains("# Fix login"), "{first}");
    let second = user_message(&requests[2]);
    assert!(
        second.contains("<memory>\nYour session notes")
            && second.contains("# Fix login\n")
            && second.contains("- auth tokens: Use JWT bearer tokens."),
        "{second}"
    );

    let states = states(&client);
    assert_eq!(states.len(), 2, "{states:?}");
    assert_eq!(states[0]["session"], Value::Null);
    assert_eq!(states[1]["session"]["title"], json!("Fix login"));
    assert_eq!(
        states[1]["session"]["decisions"],
        json!([{"topic": "auth tokens", "fact": "Use JWT bearer tokens."}])
    );

    assert_eq!(session["turn"], json!(2));
    assert!(session["rendered"]
        .as_str()
        .unwrap()
        .starts_with("# Fix login, done\nCurrent state: working"));
    assert_eq!(
        facts["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|fact| (fact["topic"].clone(), fact["body"].clone()))
            .collect::<Vec<_>>(),
        [(json!("auth tokens"), json!("Use JWT bearer tokens."))]
    );

    let second_run = ask(&mut client, "Which auth tokens do we use?").await;
    assert_ne!(second_run, run);
    let requests = llm.requests();
    let asked = user_message(&requests[4]);
    assert!(
        asked.contains("- [project] auth tokens: Use JWT bearer tokens."),
        "{asked}"
    );
    assert!(
        !asked.contains("# Fix login"),
        "a new run has no notes yet: {asked}"
    );
    until_fact(&mut client, "Use session cookies.").await;
    let history = client.ok("memory/list", json!({"history": true})).await;
    let history: Vec<(Value, Value, Value)> = history["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|item| {
            (
                item["reason"].clone(),
                item["topic"].clone(),
                item["body"].clone(),
            )
        })
        .collect();
    assert_eq!(
        history,
        [
            (
                json!("narrative"),
                json!("auth question"),
                json!("Current state: working\nUser intent: fix the login\nWork log:\n- read the code")
            ),
            (
                json!("replaced"),
                json!("auth tokens"),
                json!("Use JWT bearer tokens.")
            ),
            (
                json!("narrative"),
                json!("fix login, done"),
                json!("Current state: working\nUser intent: fix the login\nWork log:\n- read the code")
            ),
        ],
        "newest first: the second run's narrative, the replaced decision, the first run's narrative"
    );
}

#[actix_web::test]
async fn a_malformed_or_failed_answer_keeps_the_notes_and_the_loop_completes() {
    let llm = FakeLlm::start([
        learning("one"),
        notes("Kept", "db", "SQLite."),
        learning("two"),
        Step::reply("{\"title\": \"Lost\", \"nextSteps\": \"not a list\"}"),
        learning("three"),
        Step::reply("I will not answer in JSON."),
        Step::reply("<summarize>Done.</summarize>"),
        Step::error(500),
    ]);
    let app = TestApp::with_llm(&llm, &NOTES_ON).await;
    let (mut client, _) = app.client_in_project("shop").await;
    let run = ask(&mut client, "Learn three things.").await;
    llm.wait_for_requests(8).await;
    let session = client.ok("memory/session", json!({"run": run})).await;
    assert_eq!(session["notes"]["title"], json!("Kept"));
    assert_eq!(session["turn"], json!(1));
    let last_turn = user_message(&llm.requests()[6]);
    assert!(last_turn.contains("# Kept\n"), "{last_turn}");
    assert_eq!(
        states(&client).last().unwrap()["session"]["title"],
        json!("Kept")
    );
}

/// `step`'s reply reporting `prompt` prompt tokens, 10 completion tokens and `cost`.
fn costing(step: Step, prompt: u64, cost: f64) -> Step {
    let Step::Reply(reply) = step else {
        panic!("not a reply: {step:?}");
    };
    Step::Reply(reply.with_usage(Usage {
        prompt_tokens: prompt,
        completion_tokens: 10,
        cached_tokens: 0,
        cost,
    }))
}

/// One purpose's line of a run's usage: `(purpose, calls, prompt_tokens, cost)`.
fn purpose_lines(telemetry: &Value) -> Vec<(String, i64, i64, f64)> {
    telemetry["calls"]
        .as_array()
        .unwrap_or_else(|| panic!("no calls in {telemetry}"))
        .iter()
        .map(|line| {
            (
                line["purpose"].as_str().unwrap().to_owned(),
                line["calls"].as_i64().unwrap(),
                line["prompt_tokens"].as_i64().unwrap(),
                line["cost"].as_f64().unwrap(),
            )
        })
        .collect()
}

/// A run whose one loop learns a fact, has its notes refreshed, summarizes and has them
/// refreshed again, each call reporting its tokens and cost; returned once the last notes
/// are written.
async fn costed_login_fix() -> (FakeLlm, TestApp, Client, String) {
    let llm = FakeLlm::start([
        costing(learning("auth"), 1000, 0.5),
        costing(notes("Fix login", "auth", "JWT."), 300, 0.25),
        costing(Step::reply("<summarize>Done.</summarize>"), 1200, 0.5),
        costing(notes("Fix login, done", "auth", "JWT."), 400, 0.25),
    ]);
    let app = TestApp::with_llm(&llm, &NOTES_ON).await;
    let (mut client, _) = app.client_in_project("shop").await;
    let run = ask(&mut client, "Fix the login.").await;
    until_titled(&mut client, &run, "Fix login, done").await;
    (llm, app, client, run)
}

#[actix_web::test]
async fn the_run_s_usage_shows_each_sidecar_call_with_its_purpose() {
    let (_llm, _app, mut client, run) = costed_login_fix().await;

    let states = states(&client);
    assert_eq!(
        purpose_lines(&states[1]["telemetry"]),
        [
            ("turn".to_owned(), 2, 2200, 1.0),
            ("session_notes".to_owned(), 1, 300, 0.25)
        ],
        "the second turn's state counts the refresh after the first"
    );
    assert_eq!(states[1]["telemetry"]["prompt_tokens"], json!(2500));

    let detail = client.ok("getRun", json!({"run": run})).await;
    let telemetry = &detail["context"]["telemetry"];
    assert_eq!(
        purpose_lines(telemetry),
        [
            ("turn".to_owned(), 2, 2200, 1.0),
            ("session_notes".to_owned(), 2, 700, 0.5)
        ]
    );
    assert_eq!(detail["turn"], json!(2), "turns are the turn calls only");
    assert_eq!(telemetry["prompt_tokens"], json!(2900));
    assert_eq!(telemetry["completion_tokens"], json!(40));
    assert_eq!(telemetry["total_tokens"], json!(2940));
    assert_eq!(telemetry["cost"], json!(1.5));
}

/// One answered call as the store records it: purpose, turn and prompt tokens.
#[derive(diesel::QueryableByName, Debug, PartialEq)]
struct RecordedCall {
    #[diesel(sql_type = diesel::sql_types::Text)]
    purpose: String,
    #[diesel(sql_type = diesel::sql_types::Integer)]
    turn: i32,
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    prompt_tokens: i64,
}

#[actix_web::test]
async fn each_answered_call_turns_included_is_recorded_once_in_order() {
    let (_llm, app, _client, run) = costed_login_fix().await;

    let mut conn = app.database().connect().unwrap();
    let id = crate::stored::run_named(&mut conn, &run).unwrap().id;
    let calls: Vec<RecordedCall> = {
        use diesel::RunQueryDsl;
        diesel::sql_query(format!(
            "SELECT purpose, turn, CAST(prompt_tokens AS BIGINT) AS prompt_tokens \
             FROM model_calls WHERE run_id = {} ORDER BY id",
            id
        ))
        .load(&mut conn)
        .unwrap()
    };
    let call = |purpose: &str, turn, prompt_tokens| RecordedCall {
        purpose: purpose.to_owned(),
        turn,
        prompt_tokens,
    };
    assert_eq!(
        calls,
        [
            call("turn", 1, 1000),
            call("session_notes", 1, 300),
            call("turn", 2, 1200),
            call("session_notes", 2, 400)
        ]
    );
}

#[actix_web::test]
async fn writing_turns_refresh_the_notes_once_every_so_many_turns() {
    let llm = FakeLlm::start([
        learning("one"),
        learning("two"),
        notes("Two", "db", "SQLite."),
        learning("three"),
        learning("four"),
        notes("Four", "db", "SQLite."),
        Step::reply("<summarize>Done.</summarize>"),
        notes("End", "db", "SQLite."),
    ]);
    let every_two = [NOTES_ON[0], ("RUMMY_MEMORY_SESSION_EVERY_TURNS", "2")];
    let app = TestApp::with_llm(&llm, &every_two).await;
    let (mut client, _) = app.client_in_project("shop").await;
    let run = ask(&mut client, "Learn four things.").await;
    until_titled(&mut client, &run, "End").await;
    let sidecars: Vec<usize> = llm
        .requests()
        .iter()
        .enumerate()
        .filter(|(_, request)| is_sidecar(request))
        .map(|(index, _)| index)
        .collect();
    assert_eq!(sidecars, [2, 5, 7]);
}

#[actix_web::test]
async fn with_memory_off_no_sidecar_request_reaches_the_model_and_the_notes_go() {
    let llm = FakeLlm::start([
        learning("one"),
        notes("Before", "db", "SQLite."),
        Step::reply("<summarize>Done.</summarize>"),
        notes("Before, done", "db", "SQLite."),
        learning("two"),
        Step::reply("<summarize>Done again.</summarize>"),
    ]);
    let app = TestApp::with_llm(&llm, &NOTES_ON).await;
    let (mut client, _) = app.client_in_project("shop").await;
    let run = ask(&mut client, "Learn one thing.").await;
    until_titled(&mut client, &run, "Before, done").await;

    client.ok("memory/switch", json!({"enabled": false})).await;
    let again = client
        .ok(
            "ask",
            json!({"model": "fake", "prompt": "Learn another thing.", "run": run}),
        )
        .await;
    assert_eq!(again["status"], json!(200), "{again}");
    let requests = llm.requests();
    assert_eq!(requests.len(), 6);
    assert!(!requests[4..].iter().any(is_sidecar));
    for request in &requests[4..] {
        let user = user_message(request);
        assert!(!user.contains("# Before"), "{user}");
    }
    let session = client.ok("memory/session", json!({"run": run})).await;
    assert_eq!(session["notes"], Value::Null);
    assert!(states(&client)
        .iter()
        .rev()
        .take(2)
        .all(|state| state["session"].is_null()));
}

#[actix_web::test]
async fn memory_session_answers_a_run_of_another_project_or_none_as_not_found() {
    let llm = FakeLlm::start([
        Step::reply("<summarize>Done.</summarize>"),
        notes("t", "a", "b"),
    ]);
    let app = TestApp::with_llm(&llm, &NOTES_ON).await;
    let (mut shop, _) = app.client_in_project("shop").await;
    let run = ask(&mut shop, "Hello.").await;
    let (mut other, _) = app.client_in_project("other").await;
    let (code, message) = other.err("memory/session", json!({"run": run})).await;
    assert_eq!(
        (code, message),
        (-32002, format!("Run '{run}' not found.")),
        "another project's run is no run, as for every method"
    );
    let (code, _) = other
        .err("memory/session", json!({"run": "no_such_run"}))
        .await;
    assert_eq!(code, -32002);
    let (code, _) = other.err("memory/session", json!({})).await;
    assert_eq!(code, -32602);
}

/// A context window that three big notes nearly fill, so that a long prompt then overflows
/// it; and the model's answer that writes those notes.
async fn filled_window() -> (String, Step) {
    let base = crate::budget::base_packet_tokens().await;
    let body = "lorem ipsum ".repeat(150);
    let fill = Step::reply(format!(
        "<known path=\"known://notes/a\">{body}</known>\
         <known path=\"known://notes/b\">{body}</known>\
         <known path=\"known://notes/c\">{body}</known>\
         <summarize>noted</summarize>"
    ));
    ((base + 2_600).to_string(), fill)
}

/// A server with session notes on, a context window of `window` tokens and turns enough for
/// a panic loop and its retry.
async fn panic_app(llm: &FakeLlm, window: &str) -> TestApp {
    let mut env = NOTES_ON.to_vec();
    env.extend([("RUMMY_CONTEXT_fake", window), ("RUMMY_MAX_TURNS", "6")]);
    TestApp::with_llm(llm, &env).await
}

#[actix_web::test]
async fn notes_are_refreshed_before_a_panic_compresses_the_context() {
    let (window, fill) = filled_window().await;
    let big_prompt = format!("Summarize this log: {}", "lorem ipsum ".repeat(500));
    let llm = FakeLlm::start([
        fill,
        Step::error(500),
        notes("Before the panic", "log", "Keep it short."),
        Step::reply(
            "<set path=\"known://notes/*\" fidelity=\"archive\"/><update>archived the notes</update>",
        ),
        Step::reply("<summarize>the log is fine</summarize>"),
        notes("After the panic", "log", "Keep it short."),
    ]);
    let app = panic_app(&llm, &window).await;
    let (mut client, _) = app.client_in_project("panic").await;
    let run = ask(&mut client, "take notes").await;
    assert_eq!(
        client.ok("memory/session", json!({"run": run})).await["notes"],
        Value::Null,
        "the failed refresh wrote nothing"
    );
    let outcome = client
        .ok(
            "ask",
            json!({"model": "fake", "prompt": big_prompt, "run": run}),
        )
        .await;
    assert_eq!(outcome["status"], json!(200), "{outcome}");
    until_titled(&mut client, &run, "After the panic").await;
    let requests = llm.requests();
    let sidecars: Vec<bool> = requests.iter().map(is_sidecar).collect();
    assert_eq!(sidecars, [false, true, true, false, false, true]);
    let panic_packet = user_message(&requests[3]);
    assert!(panic_packet.contains("mode=\"panic\""), "{panic_packet}");
    assert!(
        panic_packet.contains("# Before the panic"),
        "{panic_packet}"
    );
}

/// The project's facts as `(topic, body)`.
async fn facts(client: &mut Client) -> Vec<(Value, Value)> {
    client.ok("memory/list", json!({})).await["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|fact| (fact["topic"].clone(), fact["body"].clone()))
        .collect()
}

#[actix_web::test]
async fn a_panic_consolidates_the_notes_before_it_compresses() {
    let (window, fill) = filled_window().await;
    let big_prompt = format!("Summarize this log: {}", "lorem ipsum ".repeat(500));
    let llm = FakeLlm::start([
        fill,
        Step::error(500),
        notes("Before the panic", "log format", "One line per event."),
        Step::held("<set path=\"known://notes/*\" fidelity=\"archive\"/><update>archived</update>"),
        Step::reply("<summarize>the log is fine</summarize>"),
        notes("After the panic", "tone", "Plain words."),
    ]);
    let app = panic_app(&llm, &window).await;
    let (mut client, _) = app.client_in_project("panic").await;
    let run = ask(&mut client, "take notes").await;
    assert!(facts(&mut client).await.is_empty(), "no notes, no facts");
    let asked = client
        .send(
            "ask",
            json!({"model": "fake", "prompt": big_prompt, "run": run}),
        )
        .await;
    llm.wait_for_requests(4).await;
    assert!(
        user_message(&llm.requests()[3]).contains("mode=\"panic\""),
        "the panic loop's turn waits"
    );
    assert_eq!(
        facts(&mut client).await,
        [(json!("log format"), json!("One line per event."))],
        "the notes' decision is the project's while the panic loop compresses"
    );
    let history = client.ok("memory/list", json!({"history": true})).await;
    assert_eq!(history["items"][0]["topic"], json!("before the panic"));
    assert_eq!(history["items"][0]["reason"], json!("narrative"));
    llm.release();
    let outcome = client.reply(&asked).await;
    assert_eq!(outcome["result"]["status"], json!(200), "{outcome}");
    until_titled(&mut client, &run, "After the panic").await;
    let sidecars: Vec<bool> = llm.requests().iter().map(is_sidecar).collect();
    assert_eq!(
        sidecars,
        [false, true, true, false, false, true],
        "no call beyond the refresh before the panic"
    );
    let kept = eventually("a second fact after the panic", async || {
        let kept = facts(&mut client).await;
        (kept.len() > 1).then_some(kept)
    })
    .await;
    assert_eq!(
        kept,
        [
            (json!("log format"), json!("One line per event.")),
            (json!("tone"), json!("Plain words.")),
        ],
        "the loop's end consolidates after the notes are written"
    );
}

#[actix_web::test]
async fn the_reply_does_not_wait_for_the_loop_ends_sidecar_and_the_next_loop_does() {
    let llm = FakeLlm::start([
        Step::reply("<summarize>Done.</summarize>"),
        Step::delayed(
            Duration::from_secs(600),
            Reply::new("{\"title\": \"Never\"}"),
        ),
        Step::reply("<summarize>Done again.</summarize>"),
        Step::delayed(
            Duration::from_millis(300),
            Reply::new(
                json!({"title": "Late", "decisions": [{"topic": "queue", "fact": "Use RabbitMQ."}]})
                    .to_string(),
            ),
        ),
        Step::reply("<summarize>RabbitMQ.</summarize>"),
        Step::reply("{\"title\": \"Last\"}"),
    ]);
    let mut env = NOTES_ON.to_vec();
    env.push(("RUMMY_MEMORY_SESSION_TIMEOUT_SECS", "600"));
    let app = TestApp::with_llm(&llm, &env).await;
    let (mut client, _) = app.client_in_project("queue").await;
    let held = ask(&mut client, "Pick a queue.").await;
    llm.wait_for_requests(2).await;
    assert_eq!(
        client.ok("memory/session", json!({"run": held})).await["notes"],
        Value::Null,
        "the reply came while the sidecar still held its answer"
    );

    let run = ask(&mut client, "Pick a message queue.").await;
    assert_ne!(run, held);
    let again = client
        .ok(
            "ask",
            json!({"model": "fake", "prompt": "Which queue do we use?", "run": run}),
        )
        .await;
    assert_eq!(again["status"], json!(200), "{again}");
    let requests = llm.requests();
    assert!(is_sidecar(&requests[3]));
    let next = user_message(&requests[4]);
    assert!(
        next.contains("# Late\n") && next.contains("- [project] queue: Use RabbitMQ."),
        "the run's next loop waited for the notes and their consolidation: {next}"
    );
}

/// The next `ui/notify` `client` receives, its params.
async fn notified(client: &mut Client) -> Value {
    client.until_notified("ui/notify", |_| true).await["params"].clone()
}

#[actix_web::test]
async fn a_client_replaces_or_erases_the_notes_and_the_next_turn_reads_them() {
    let llm = FakeLlm::start([
        Step::reply("<summarize>Done.</summarize>"),
        notes("From the sidecar", "db", "SQLite."),
        Step::reply("<summarize>Done again.</summarize>"),
        Step::reply("<summarize>And again.</summarize>"),
    ]);
    let app = TestApp::with_llm(&llm, &NOTES_ON).await;
    let (mut client, _) = app.client_in_project("shop").await;
    let catalogue = client.ok("discover", json!({})).await;
    assert!(
        catalogue["methods"]["memory/session/set"]["params"]["notes"].is_string(),
        "{catalogue}"
    );
    let run = ask(&mut client, "Hello.").await;
    until_titled(&mut client, &run, "From the sidecar").await;
    let (mut watcher, _) = app.client_in_project("shop").await;

    for (notes, why) in [
        (json!({"currentState": "no title"}), "no title"),
        (
            json!({"title": "t", "nextSteps": "not a list"}),
            "not a list",
        ),
        (json!({"title": "x".repeat(121)}), "over its bound"),
        (json!("text"), "not notes"),
    ] {
        let (code, message) = client
            .err("memory/session/set", json!({"run": run, "notes": notes}))
            .await;
        assert_eq!(code, -32602, "{why}: {message}");
        assert!(message.starts_with("notes: "), "{why}: {message}");
    }
    let set = client
        .ok(
            "memory/session/set",
            json!({"run": run, "notes": {
                "title": "Edited by hand",
                "constraints": [{"topic": "style", "fact": "Tabs, not spaces."}]
            }}),
        )
        .await;
    assert_eq!(set["notes"]["title"], json!("Edited by hand"));
    assert_eq!(set["turn"], json!(1), "dated at the run's latest turn");
    assert!(
        set["rendered"]
            .as_str()
            .unwrap()
            .starts_with("# Edited by hand\n"),
        "{set}"
    );
    assert_eq!(
        client.ok("memory/session", json!({"run": run})).await,
        set,
        "memory/session reads what was set"
    );
    let told = notified(&mut watcher).await;
    assert_eq!(
        told["text"],
        json!(format!(
            "{run}: session notes set\n\n{}",
            set["rendered"].as_str().unwrap()
        )),
        "{told}"
    );

    let again = client
        .ok(
            "ask",
            json!({"model": "fake", "prompt": "Go on.", "run": run}),
        )
        .await;
    assert_eq!(again["status"], json!(200), "{again}");
    let turn = user_message(&llm.requests()[2]);
    assert!(
        turn.contains("# Edited by hand\n") && !turn.contains("From the sidecar"),
        "{turn}"
    );

    let (mut other, _) = app.client_in_project("other").await;
    let (code, message) = other
        .err("memory/session/set", json!({"run": run, "notes": null}))
        .await;
    assert_eq!((code, message), (-32002, format!("Run '{run}' not found.")));

    let erased = client
        .ok("memory/session/set", json!({"run": run, "notes": null}))
        .await;
    assert_eq!(erased["notes"], Value::Null);
    assert_eq!(erased["rendered"], json!(""));
    let told = notified(&mut watcher).await;
    assert_eq!(
        told["text"],
        json!(format!("{run}: session notes erased")),
        "{told}"
    );
    client.ok("memory/switch", json!({"enabled": false})).await;
    let (code, message) = client
        .err(
            "memory/session/set",
            json!({"run": run, "notes": {"title": "Off"}}),
        )
        .await;
    assert_eq!(code, -32602);
    assert!(message.contains("memory is off"), "{message}");
}

#[actix_web::test]
async fn a_stopping_server_waits_for_the_notes_of_the_loop_end_it_was_reflecting_on() {
    let llm = FakeLlm::start([
        Step::reply("<summarize>Done.</summarize>"),
        Step::delayed(
            Duration::from_secs(1),
            Reply::new("{\"title\": \"Kept at the stop\"}"),
        ),
    ]);
    let app = TestApp::with_llm(&llm, &NOTES_ON).await;
    let store = app.database();
    let (mut client, _) = app.client_in_project("stop").await;
    let run = ask(&mut client, "Hello.").await;
    llm.wait_for_requests(2).await;

    let TestApp {
        server,
        home,
        database,
        ..
    } = app;
    server.stop().await;

    let mut conn = store.connect().unwrap();
    let id = crate::stored::run_named(&mut conn, &run).unwrap().id;
    let notes = crate::stored::entry_attributes(&mut conn, id, "memory://session")
        .expect("the loop end's notes were written before the stop gave the run up");
    assert!(notes.contains("Kept at the stop"), "{notes:?}");
    drop((home, database));
}

#[actix_web::test]
async fn recall_shows_a_narrative_several_runs_left_identical_once() {
    let mut script = Vec::new();
    for _ in 0..3 {
        script.push(Step::reply("<summarize>Login fixed.</summarize>"));
        script.push(notes("Fix login", "auth tokens", "Use JWT bearer tokens."));
    }
    script.push(Step::reply("<summarize>Done.</summarize>"));
    let llm = FakeLlm::start(script);
    let app = TestApp::with_llm(&llm, &NOTES_ON).await;
    let (mut client, _) = app.client_in_project("shop").await;
    for runs in 1..=3 {
        ask(&mut client, "Fix the login.").await;
        eventually(&format!("{runs} narratives in the history"), async || {
            let history = client.ok("memory/list", json!({"history": true})).await;
            (history["items"].as_array().unwrap().len() == runs).then_some(())
        })
        .await;
    }
    let history = client.ok("memory/list", json!({"history": true})).await;
    assert_eq!(history["items"].as_array().unwrap().len(), 3, "{history}");

    ask(&mut client, "Is the login fixed?").await;
    let requests = llm.requests();
    let last_turn = requests.iter().rev().find(|request| !is_sidecar(request));
    let asked = user_message(last_turn.unwrap());
    assert_eq!(
        asked.matches("] fix login: Current state: working").count(),
        1,
        "{asked}"
    );
}
