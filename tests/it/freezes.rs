//! Pattern and edit work is bounded and does not freeze the database thread: an XPath body
//! filter with `count()`, one command repeated thousands of times in a reply, and a sed
//! edit that multiplies a large file each end promptly with a clear error (a 422 entry for
//! the model, -32008 for a client), while other clients go on being served; `/readyz`
//! says "not ready" while the database thread is stuck.

use std::sync::mpsc;

use serde_json::json;

use crate::support::{Client, TestApp};
use rummy::testing::fake_llm::{FakeLlm, Step};

/// Quadratic or worse in the number of elements: `count(//*)` for every element.
const QUADRATIC_XPATH: &str = "//*[count(//*) = count(preceding::*) + 7]";

/// An XML body of `elements` empty elements under one root.
fn xml(elements: usize) -> String {
    format!("<r>{}</r>\n", "<i/>".repeat(elements))
}

/// A server whose `fake` model is the scripted LLM, with room for large files.
async fn app_with(llm: &FakeLlm, extra: &[(&str, &str)]) -> TestApp {
    let mut env = vec![("RUMMY_CONTEXT_fake", "1000000")];
    env.extend_from_slice(extra);
    TestApp::with_llm(llm, &env).await
}

/// A client in project `name` whose files are written, scanned into a run by one `ask`
/// the fake answers with `<summarize>`; returns the client and the run.
async fn scanned(app: &TestApp, name: &str, files: &[(&str, &str)]) -> (Client, String) {
    let (mut client, root) = app.client_in_project(name).await;
    for (file, body) in files {
        std::fs::write(root.join(file), body).unwrap();
    }
    let result = client
        .ok("ask", json!({"model": "fake", "prompt": "look"}))
        .await;
    let run = result["run"].as_str().unwrap().to_string();
    (client, run)
}

/// The database thread, busy with a unit of work that waits until released.
struct HeldWriter {
    release: mpsc::Sender<()>,
    unit: actix_web::rt::task::JoinHandle<Result<(), rummy::testing::DbError>>,
}

impl HeldWriter {
    /// Returns once the writer has started the unit.
    async fn hold(app: &TestApp) -> HeldWriter {
        let (entered, busy) = tokio::sync::oneshot::channel::<()>();
        let (release, held) = mpsc::channel::<()>();
        let unit = app.server.on_database_thread(move |_| {
            let _ = entered.send(());
            let _ = held.recv();
        });
        let unit = actix_web::rt::spawn(unit);
        busy.await.unwrap();
        HeldWriter { release, unit }
    }

    async fn release(self) {
        self.release.send(()).unwrap();
        self.unit.await.unwrap().unwrap();
    }
}

#[actix_web::test]
async fn an_xpath_body_filter_stops_with_a_work_limit_error() {
    let llm = FakeLlm::start([]);
    let app = app_with(&llm, &[]).await;
    let (mut client, run) = scanned(&app, "xpath", &[("big.xml", &xml(20_000))]).await;
    let reply = client
        .call(
            "getEntries",
            json!({"run": run, "pattern": "*.xml", "body": QUADRATIC_XPATH}),
        )
        .await;
    assert_eq!(reply["error"]["code"], json!(-32008), "{reply}");
    let message = reply["error"]["message"].as_str().unwrap();
    assert!(message.contains("stopped"), "{message}");
    let found = client
        .ok(
            "getEntries",
            json!({"run": run, "pattern": "*.xml", "body": "//i[1]"}),
        )
        .await;
    assert_eq!(found[0]["path"], json!("big.xml"), "{found}");
}

#[actix_web::test]
async fn other_clients_are_served_while_a_search_computes_and_it_stops_when_its_caller_gives_up() {
    let llm = FakeLlm::start([]);
    let unbounded = &[
        ("RUMMY_WORK_MAX_STEPS", "100000000000"),
        ("RUMMY_WORK_TIMEOUT_MS", "3600000"),
        ("RUMMY_RPC_TIMEOUT", "2000"),
        ("RUMMY_DB_READERS", "1"),
    ];
    let app = app_with(&llm, unbounded).await;
    // Each file's evaluation is short, all of them together far longer than the timeout:
    // the search stops between two files once its caller has given up.
    let body = xml(300);
    let names: Vec<String> = (0..400).map(|index| format!("f{index}.xml")).collect();
    let files: Vec<(&str, &str)> = names
        .iter()
        .map(|name| (name.as_str(), body.as_str()))
        .collect();
    let (mut heavy, heavy_run) = scanned(&app, "heavy", &files).await;
    let (mut other, other_run) = scanned(&app, "other", &[("a.txt", "alpha\n")]).await;
    let search = heavy
        .send(
            "getEntries",
            json!({"run": heavy_run, "pattern": "*.xml", "body": QUADRATIC_XPATH}),
        )
        .await;
    assert_eq!(other.ok("ping", json!({})).await, json!({}));
    let runs = other.ok("getRuns", json!({})).await;
    assert_eq!(
        runs[0]["run"],
        json!(other_run),
        "the database thread answers"
    );
    let gave_up = heavy.reply(&search).await;
    assert_eq!(gave_up["error"]["code"], json!(-32603), "{gave_up}");
    assert!(gave_up["error"]["message"]
        .as_str()
        .unwrap()
        .contains("timed out"));
    // One reader: this search is served only if the abandoned one really stopped.
    let entries = other
        .ok(
            "getEntries",
            json!({"run": other_run, "pattern": "*.txt", "body": "alpha"}),
        )
        .await;
    assert_eq!(entries[0]["path"], json!("a.txt"), "{entries}");
}

#[actix_web::test]
async fn an_xpath_filter_in_a_model_reply_is_a_422_entry() {
    let llm = FakeLlm::start([
        Step::reply("<summarize>scanned</summarize>"),
        Step::reply(format!(
            "<get path=\"*.xml\">{QUADRATIC_XPATH}</get><update>looking</update>"
        )),
        Step::reply("<summarize>done</summarize>"),
    ]);
    let app = app_with(&llm, &[]).await;
    let (mut client, run) = scanned(&app, "model_xpath", &[("big.xml", &xml(20_000))]).await;
    let result = client
        .ok(
            "ask",
            json!({"model": "fake", "prompt": "find", "run": run}),
        )
        .await;
    assert_eq!(result["status"], json!(200), "{result}");
    let gets = client.statuses(&run, "get://*").await;
    assert_eq!(gets.len(), 1, "{gets:?}");
    assert_eq!(gets[0].1, 422, "{gets:?}");
    let next_turn = llm.requests()[2]["messages"].to_string();
    assert!(next_turn.contains("Stopped: "), "the model is told why");
}

/// Long enough for a test to give up on a server that computes forever.
const GENEROUS: std::time::Duration = std::time::Duration::from_secs(120);

#[actix_web::test]
async fn a_model_search_computes_beside_the_writer() {
    let llm = FakeLlm::start([
        Step::reply("<summarize>scanned</summarize>"),
        Step::reply("<summarize>scanned</summarize>"),
        Step::reply(format!("<get path=\"*.xml\">{QUADRATIC_XPATH}</get>")),
        Step::reply("<summarize>done</summarize>"),
    ]);
    // The writer could compute forever: only computing beside it ends this search.
    let unbounded_writer = &[
        ("RUMMY_WRITER_MAX_STEPS", "100000000000"),
        ("RUMMY_WRITER_TIMEOUT_MS", "3600000"),
    ];
    let app = app_with(&llm, unbounded_writer).await;
    let (mut heavy, heavy_run) = scanned(&app, "model_heavy", &[("big.xml", &xml(20_000))]).await;
    let (mut other, other_run) = scanned(&app, "model_other", &[("a.txt", "alpha\n")]).await;
    let ask = heavy
        .send(
            "ask",
            json!({"model": "fake", "prompt": "find", "run": heavy_run}),
        )
        .await;
    llm.wait_for_requests(3).await;
    let runs = other.ok("getRuns", json!({})).await;
    assert_eq!(
        runs[0]["run"],
        json!(other_run),
        "the database thread answers"
    );
    let ended = tokio::time::timeout(GENEROUS, heavy.reply(&ask))
        .await
        .expect("the search ends within its request limits");
    assert_eq!(ended["result"]["status"], json!(200), "{ended}");
    let gets = heavy.statuses(&heavy_run, "get://*").await;
    assert_eq!(gets.len(), 1, "{gets:?}");
    assert_eq!(gets[0].1, 422, "{gets:?}");
}

#[actix_web::test]
async fn a_reply_repeating_one_command_thousands_of_times_runs_the_first_hundred() {
    let copies = 8_000;
    let llm = FakeLlm::start([Step::reply(format!(
        "{}<update>loading</update>",
        "<get path=\"known://a\"/>".repeat(copies)
    ))]);
    let app = app_with(&llm, &[]).await;
    let (mut client, _) = app.client_in_project("repeat").await;
    let result = client
        .ok(
            "ask",
            json!({"model": "fake", "prompt": "load", "noRepo": true}),
        )
        .await;
    let run = result["run"].as_str().unwrap().to_string();
    let gets = client.statuses(&run, "get://*").await;
    assert_eq!(
        gets.len(),
        101,
        "the first 100 ran, one entry refuses the rest"
    );
    let refused: Vec<_> = gets.iter().filter(|(_, status)| *status == 429).collect();
    assert_eq!(refused.len(), 1, "{gets:?}");
    let next_turn = llm.requests()[1]["messages"].to_string();
    assert!(
        next_turn.contains(&format!(
            "This reply holds {} commands; only the first 100 ran",
            copies + 1
        )),
        "the model is told how many there were"
    );
}

#[actix_web::test]
async fn a_sed_edit_that_multiplies_a_large_file_is_a_422_entry() {
    let line = format!("{}\n", "abcdefgh".repeat(8));
    let big = line.repeat(15_000);
    let sed = format!("s/(.)/{}/g", "\\1".repeat(460));
    let llm = FakeLlm::start([
        Step::reply("<summarize>scanned</summarize>"),
        Step::reply(format!(
            "<set path=\"big.txt\">{sed}</set><update>editing</update>"
        )),
        Step::reply("<summarize>done</summarize>"),
    ]);
    let app = app_with(&llm, &[]).await;
    let (mut client, run) = scanned(&app, "sed", &[("big.txt", &big)]).await;
    let result = client
        .ok(
            "act",
            json!({"model": "fake", "prompt": "edit", "run": run}),
        )
        .await;
    assert_eq!(result["status"], json!(200), "{result}");
    let sets = client.statuses(&run, "set://*").await;
    assert!(sets.iter().any(|(_, status)| *status == 422), "{sets:?}");
}

#[actix_web::test]
async fn readyz_is_not_ready_while_the_database_thread_is_stuck() {
    let llm = FakeLlm::start([]);
    let app = app_with(&llm, &[("RUMMY_DB_STALL_MS", "300")]).await;
    let http = awc::Client::new();
    let readyz = format!("http://{}/readyz", app.addr());
    assert_eq!(
        http.get(&readyz).send().await.unwrap().status().as_u16(),
        200
    );
    let writer = HeldWriter::hold(&app).await;
    // Not yet stalled: the probe waits for the writer no longer than the stall limit.
    let mut probe = http.get(&readyz).send().await.unwrap();
    assert_eq!(probe.status().as_u16(), 503);
    let body = String::from_utf8(probe.body().await.unwrap().to_vec()).unwrap();
    assert!(body.contains("did not answer within 300 ms"), "{body}");
    // Stalled: the watchdog answers at once.
    tokio::time::sleep(std::time::Duration::from_millis(400)).await;
    let mut probe = http.get(&readyz).send().await.unwrap();
    assert_eq!(probe.status().as_u16(), 503);
    let body = String::from_utf8(probe.body().await.unwrap().to_vec()).unwrap();
    assert!(body.contains("busy with one unit of work"), "{body}");
    writer.release().await;
    assert_eq!(
        http.get(&readyz).send().await.unwrap().status().as_u16(),
        200
    );
}

#[actix_web::test]
async fn read_only_methods_are_answered_while_the_writer_is_busy() {
    let llm = FakeLlm::start([]);
    let app = app_with(&llm, &[("RUMMY_RPC_TIMEOUT", "3000")]).await;
    let (mut client, run) = scanned(&app, "reads", &[("a.txt", "alpha\n")]).await;
    let writer = HeldWriter::hold(&app).await;
    let runs = client.ok("getRuns", json!({})).await;
    assert_eq!(runs[0]["run"], json!(run), "{runs}");
    let detail = client.ok("getRun", json!({"run": run})).await;
    assert_eq!(detail["status"], json!(200), "{detail}");
    let models = client.ok("getModels", json!({})).await;
    assert!(models.to_string().contains("fake"), "{models}");
    client.ok("getSkills", json!({"run": run})).await;
    writer.release().await;
}

/// 20,000 numbered lines.
fn large_file() -> String {
    (0..20_000)
        .map(|n| format!("line {n} of a large file\n"))
        .collect()
}

/// A merge edit of line 17,000 of [`large_file`].
const LINE_17000_EDIT: &str =
    "<<<<<<< SEARCH\nline 17000 of a large file\n=======\nline 17000 edited\n>>>>>>> REPLACE";

#[actix_web::test]
async fn a_model_edit_of_a_large_file_computes_beside_the_writer() {
    let lines = large_file();
    let edit = LINE_17000_EDIT;
    let llm = FakeLlm::start([
        Step::reply("<summarize>scanned</summarize>"),
        Step::reply(format!(
            "<set path=\"big.txt\">{edit}</set><update>editing</update>"
        )),
    ]);
    // The writer may scan far less than the file: only an edit computed beside it applies.
    let small_writer = &[("RUMMY_WRITER_MAX_STEPS", "2000")];
    let app = app_with(&llm, small_writer).await;
    let (mut client, run) = scanned(&app, "edit_beside", &[("big.txt", &lines)]).await;
    let result = client
        .ok(
            "act",
            json!({"model": "fake", "prompt": "edit", "run": run}),
        )
        .await;
    assert_eq!(result["status"], json!(202), "{result}");
    let attributes: serde_json::Value =
        serde_json::from_str(result["proposed"][0]["attributes"].as_str().unwrap()).unwrap();
    let patch = attributes["patch"].as_str().unwrap_or_default();
    assert!(patch.contains("+line 17000 edited"), "{patch}");
}

/// Model replies that once froze the database thread or a loop, and their neighbours.
fn hostile_replies() -> Vec<String> {
    let multiply = format!("s/(.)/{}/g", "\\1".repeat(460));
    vec![
        format!("<get path=\"*.xml\">{QUADRATIC_XPATH}</get><update>x</update>"),
        "<get path=\"*.xml\">//*[count(//*[count(//*) > 0]) > 0]</get>".to_string(),
        "<get path=\"known://a\"/>".repeat(3_000),
        format!("<set path=\"big.txt\">{multiply}</set>"),
        format!("<set path=\"known://notes\">{}</set>", "n".repeat(200_000)),
        "<set path=\"known://notes\">s/n/nn/g</set><set path=\"known://notes\">s/n/nn/g</set>"
            .to_string(),
        "<set path=\"big.txt\"><<<<<<< SEARCH\nline 9 of a large file\n=======\nnine\n>>>>>>> REPLACE</set>"
            .to_string(),
        "<get path=\"**\">/(a|aa)+$/</get><get path=\"**\">$..*</get>".to_string(),
        "<rm path=\"**\"/><mv path=\"**\" to=\"/etc\"/>".to_string(),
        "<set path=\"<<<<\"><get <rm path=".repeat(500),
        "<get path=\"../../../etc/passwd\"/><sh>yes</sh>".to_string(),
    ]
}

/// The longest any loop may take, however hostile its model.
const LOOP_LIMIT: std::time::Duration = std::time::Duration::from_secs(90);

#[actix_web::test]
async fn hostile_replies_never_hang_a_loop_or_the_database() {
    let mut script = Vec::new();
    let replies = hostile_replies();
    let scripted = replies.len() * 2;
    for reply in replies {
        script.push(Step::reply(format!("{reply}<update>going on</update>")));
        script.push(Step::reply(reply));
    }
    let llm = FakeLlm::start(script);
    let app = app_with(&llm, &[("RUMMY_MAX_TURNS", "4")]).await;
    let lines = large_file();
    let xml_body = xml(3_000);
    let files = [("big.txt", lines.as_str()), ("big.xml", xml_body.as_str())];
    let mut clients = Vec::new();
    for index in 0..4 {
        clients.push(scanned(&app, &format!("hostile{index}"), &files).await);
    }
    let loops = clients.into_iter().map(|(mut client, run)| async move {
        let mut outcomes = Vec::new();
        for _ in 0..6 {
            let ask = client
                .send("act", json!({"model": "fake", "prompt": "go", "run": run}))
                .await;
            let reply = tokio::time::timeout(LOOP_LIMIT, client.reply(&ask))
                .await
                .expect("every loop ends within 90 s");
            let proposed = reply["result"]["proposed"].as_array().cloned();
            outcomes.push(reply);
            for proposal in proposed.unwrap_or_default() {
                let resolution = json!({"path": proposal["path"], "action": "reject"});
                let resolve =
                    client.call("run/resolve", json!({"run": run, "resolution": resolution}));
                let resolved = tokio::time::timeout(LOOP_LIMIT, resolve)
                    .await
                    .expect("every resolution ends within 90 s");
                assert!(resolved.get("result").is_some(), "{resolved}");
            }
        }
        outcomes
    });
    for outcomes in futures_util::future::join_all(loops).await {
        for reply in outcomes {
            let status = reply["result"]["status"].as_i64();
            assert!(
                matches!(status, Some(200 | 202 | 413 | 499 | 500)),
                "a loop ends with a status: {reply}"
            );
        }
    }
    assert!(
        llm.requests().len() > scripted,
        "every hostile reply reached a loop"
    );
    let http = awc::Client::new();
    let readyz = format!("http://{}/readyz", app.addr());
    assert_eq!(
        http.get(&readyz).send().await.unwrap().status().as_u16(),
        200
    );
}

#[actix_web::test]
async fn a_model_edit_of_several_large_files_computes_each_beside_the_writer() {
    let lines = large_file();
    let edit = LINE_17000_EDIT;
    let llm = FakeLlm::start([
        Step::reply("<summarize>scanned</summarize>"),
        Step::reply(format!(
            "<set path=\"*.txt\">{edit}</set><update>editing</update>"
        )),
    ]);
    let small_writer = &[("RUMMY_WRITER_MAX_STEPS", "2000")];
    let app = app_with(&llm, small_writer).await;
    let files = [("one.txt", lines.as_str()), ("two.txt", lines.as_str())];
    let (mut client, run) = scanned(&app, "edits_beside", &files).await;
    let result = client
        .ok(
            "act",
            json!({"model": "fake", "prompt": "edit", "run": run}),
        )
        .await;
    assert_eq!(result["status"], json!(202), "{result}");
    let proposed = result["proposed"].as_array().unwrap();
    assert_eq!(proposed.len(), 2, "both files: {result}");
}
