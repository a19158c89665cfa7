//! A file the model has in view that changes on disk between loops is named in the next
//! packet, once: the scan rewrites its body and `<progress>` says which paths changed.

use serde_json::json;

use super::packet;
use crate::support::TestApp;
use rummy::testing::fake_llm::{FakeLlm, Step};

fn notice(path: &str) -> String {
    format!("Changed on disk since you last saw it: {path}")
}

#[actix_web::test]
async fn a_file_changed_on_disk_is_named_in_the_next_packet_once() {
    let llm = FakeLlm::start([
        Step::reply("<get path=\"seen.txt\"/><update>reading</update>"),
        Step::reply("<summarize>read it</summarize>"),
        Step::reply("<update>looking again</update>"),
        Step::reply("<summarize>it changed</summarize>"),
        Step::reply("<summarize>nothing new</summarize>"),
    ]);
    let app = TestApp::with_llm(&llm, &[]).await;
    let (mut client, root) = app.client_in_project("disk").await;
    std::fs::write(root.join("seen.txt"), "version one").unwrap();
    std::fs::write(root.join("unseen.txt"), "never loaded").unwrap();
    let first = client
        .ok("ask", json!({"model": "fake", "prompt": "read seen.txt"}))
        .await;
    let run = first["run"].as_str().unwrap().to_string();
    std::fs::write(root.join("seen.txt"), "version two").unwrap();
    std::fs::write(root.join("unseen.txt"), "changed, never loaded").unwrap();
    client
        .ok(
            "ask",
            json!({"model": "fake", "prompt": "read it again", "run": run}),
        )
        .await;
    client
        .ok(
            "ask",
            json!({"model": "fake", "prompt": "anything new?", "run": run}),
        )
        .await;
    let requests = llm.requests();
    assert_eq!(requests.len(), 5);
    let told: Vec<bool> = requests
        .iter()
        .map(|request| packet(request).contains(&notice("seen.txt")))
        .collect();
    assert_eq!(
        told,
        [false, false, true, false, false],
        "only the first packet after the change names it"
    );
    let after_change = packet(&requests[2]);
    assert!(
        after_change.contains("version two"),
        "the new body is loaded"
    );
    assert!(
        !after_change.contains(&notice("unseen.txt")),
        "a file the model only saw the path of is no news: {after_change}"
    );
}
