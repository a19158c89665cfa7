//! One write gate for every writer: a client's tool call and the project scan (with its
//! constraint promotions) pass the run's budget guard as the model's commands do, so no
//! writer can carry a run past its window and make its next prompt panic.

use serde_json::{json, Value};

use crate::support::{user_message, Client, TestApp};
use rummy::testing::fake_llm::{FakeLlm, Step};

/// The window of these runs, in tokens (4 characters each).
const WINDOW: u64 = 4_000;

/// Twenty files of about 500 tokens each: ten thousand together, far past the window.
fn write_big_files(root: &std::path::Path) {
    for index in 0..20 {
        let body = format!("line {index} of a big file\n").repeat(90);
        std::fs::write(root.join(format!("big_{index:02}.txt")), body).unwrap();
    }
}

async fn ask(client: &mut Client, prompt: &str, run: Option<&str>) -> Value {
    let mut params = json!({"model": "fake", "prompt": prompt, "contextLimit": WINDOW});
    if let Some(run) = run {
        params["run"] = json!(run);
    }
    client.ok("ask", params).await
}

/// The fidelity of each project file entry of the run.
async fn file_fidelities(client: &mut Client, run: &str) -> Vec<(String, String)> {
    let entries = client
        .ok("getEntries", json!({"run": run, "pattern": "big_*"}))
        .await;
    entries
        .as_array()
        .unwrap()
        .iter()
        .map(|entry| {
            (
                entry["path"].as_str().unwrap().to_string(),
                entry["fidelity"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[actix_web::test]
async fn a_clients_get_of_a_big_glob_is_refused_as_a_models_would_be() {
    let llm = FakeLlm::start([
        Step::reply("<summarize>listed</summarize>"),
        Step::reply("<get path=\"big_*\"/><update>loading</update>"),
        Step::reply("<summarize>too big</summarize>"),
        Step::reply("<summarize>still fine</summarize>"),
    ]);
    let app = TestApp::with_llm(&llm, &[]).await;
    let (mut client, root) = app.client_in_project("gate").await;
    write_big_files(&root);
    let first = ask(&mut client, "list the files", None).await;
    let run = first["run"].as_str().unwrap().to_string();

    let (code, message) = client
        .err("get", json!({"run": run, "path": "big_*"}))
        .await;
    assert_eq!(code, -32010, "{message}");
    assert!(message.contains("tokens"), "{message}");
    let fidelities = file_fidelities(&mut client, &run).await;
    assert_eq!(fidelities.len(), 20);
    assert!(
        fidelities.iter().all(|(_, fidelity)| fidelity == "index"),
        "nothing of the refused call stays: {fidelities:?}"
    );

    // The model's own <get> of the same glob is refused by the same gate (413)…
    ask(&mut client, "load them", Some(&run)).await;
    let model_refusal = client.statuses(&run, "get://*").await;
    assert!(
        model_refusal.iter().any(|(_, status)| *status == 413),
        "{model_refusal:?}"
    );
    // …and the run's next prompt runs as a plain turn, no panic.
    let next = ask(&mut client, "anything else?", Some(&run)).await;
    assert_eq!(next["status"], json!(200), "{next}");
    let requests = llm.requests();
    let last = user_message(requests.last().unwrap());
    assert!(!last.contains("mode=\"panic\""), "{last}");
    assert!(last.contains("anything else?"), "{last}");
}

#[actix_web::test]
async fn a_constraint_the_window_cannot_hold_is_listed_not_loaded_by_the_scan() {
    let llm = FakeLlm::start([Step::reply("<summarize>fine</summarize>")]);
    let app = TestApp::with_llm(&llm, &[]).await;
    let (mut client, root) = app.client_in_project("pinned").await;
    write_big_files(&root);
    std::fs::write(root.join("small.txt"), "a small pinned file").unwrap();
    for path in ["big_*", "small.txt"] {
        client
            .ok("get", json!({"path": path, "persist": true}))
            .await;
    }
    let outcome = ask(&mut client, "what is pinned?", None).await;
    assert_eq!(outcome["status"], json!(200), "{outcome}");
    let run = outcome["run"].as_str().unwrap().to_string();
    let requests = llm.requests();
    assert_eq!(requests.len(), 1, "one turn, no panic loop first");
    let user = user_message(&requests[0]);
    assert!(!user.contains("mode=\"panic\""), "{user}");
    let tokens: u64 = requests[0]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|message| message["content"].as_str().unwrap().len() as u64)
        .sum::<u64>()
        .div_ceil(4);
    assert!(tokens <= WINDOW, "the packet fits: {tokens} tokens");
    let fidelities = file_fidelities(&mut client, &run).await;
    let loaded = fidelities
        .iter()
        .filter(|(_, fidelity)| fidelity == "full")
        .count();
    assert!(
        (1..20).contains(&loaded),
        "the pinned files that fit are loaded, the rest listed: {fidelities:?}"
    );
    let small = client
        .ok("getEntries", json!({"run": run, "pattern": "small.txt"}))
        .await;
    assert_eq!(small[0]["fidelity"], json!("full"), "{small}");
}
