//! `readonly` file constraints are enforced: the model's changes to such a file are refused
//! (403, a message it sees, no proposal), and the server never writes one when it applies
//! accepted changes itself (`RUMMY_APPLY_EDITS=server`).

use std::path::Path;

use serde_json::{json, Value};

use crate::support::{user_message, Client, TestApp};
use rummy::testing::fake_llm::{FakeLlm, Step};

const LOCKED: &str = "port = 3000\n";

async fn pin_readonly(client: &mut Client, path: &str) {
    let pinned = client
        .ok(
            "get",
            json!({"path": path, "persist": true, "readonly": true}),
        )
        .await;
    assert_eq!(pinned, json!({"status": "ok"}));
}

fn read(root: &Path, path: &str) -> Option<String> {
    std::fs::read_to_string(root.join(path)).ok()
}

#[actix_web::test]
async fn a_model_cannot_change_a_readonly_file() {
    let llm = FakeLlm::start([
        Step::reply("<set path=\"locked.txt\">s/3000/8080/</set><update>editing</update>"),
        Step::reply("<set path=\"./locked.txt\">port = 1</set><update>rewriting</update>"),
        Step::reply("<rm path=\"*.txt\"/><update>cleaning</update>"),
        Step::reply("<mv path=\"locked.txt\" to=\"moved.txt\"/><update>moving</update>"),
        Step::reply("<cp path=\"free.txt\" to=\"locked.txt\"/><update>copying</update>"),
        Step::reply("<summarize>it is read-only</summarize>"),
    ]);
    let app = TestApp::with_llm(&llm, &[("RUMMY_APPLY_EDITS", "server")]).await;
    let (mut client, root) = app.client_in_project("readonly").await;
    std::fs::write(root.join("locked.txt"), LOCKED).unwrap();
    std::fs::write(root.join("free.txt"), "free\n").unwrap();
    pin_readonly(&mut client, "locked.txt").await;
    let outcome = client
        .ok("act", json!({"model": "fake", "prompt": "use port 8080"}))
        .await;
    assert_eq!(outcome["status"], json!(200), "no proposal: {outcome}");
    let run = outcome["run"].as_str().unwrap();
    let requests = llm.requests();
    assert_eq!(requests.len(), 6);
    for (turn, request) in requests.iter().enumerate().skip(1) {
        let seen = user_message(request);
        assert!(
            seen.contains("locked.txt is read-only"),
            "turn {}: {seen}",
            turn + 1
        );
    }
    for scheme in ["set", "rm", "mv", "cp"] {
        let statuses = client.statuses(run, &format!("{scheme}://**")).await;
        assert!(!statuses.is_empty(), "{scheme}");
        assert!(
            statuses.iter().all(|(_, status)| *status == 403),
            "{scheme}: {statuses:?}"
        );
    }
    assert_eq!(read(&root, "locked.txt").as_deref(), Some(LOCKED));
    assert_eq!(read(&root, "free.txt").as_deref(), Some("free\n"));
    assert_eq!(read(&root, "moved.txt"), None);
}

/// Proposes with `act`, pins `pinned` readonly, accepts; returns the proposal's status.
async fn accept_after_pinning(client: &mut Client, pinned: &str) -> (Value, i64) {
    let (run, path) = client.act_until_proposal("change the files").await;
    pin_readonly(client, pinned).await;
    let resolved = client
        .ok(
            "run/resolve",
            json!({"run": run, "resolution": {"path": path, "action": "accept"}}),
        )
        .await;
    let statuses = client.statuses(&run, &path).await;
    assert_eq!(statuses.len(), 1, "{statuses:?}");
    (resolved, statuses[0].1)
}

#[actix_web::test]
async fn the_server_never_applies_a_proposal_whose_file_became_readonly() {
    let llm = FakeLlm::start([
        Step::reply("<set path=\"app.js\">s/3000/8080/</set><update>editing</update>"),
        Step::reply("<rm path=\"old.js\"/><update>removing</update>"),
        Step::reply("<cp path=\"src.js\" to=\"copy.js\"/><update>copying</update>"),
        Step::reply("<mv path=\"src.js\" to=\"moved.js\"/><update>moving</update>"),
    ]);
    let app = TestApp::with_llm(&llm, &[("RUMMY_APPLY_EDITS", "server")]).await;
    let (mut client, root) = app.client_in_project("became-readonly").await;
    for file in ["app.js", "old.js", "src.js"] {
        std::fs::write(root.join(file), LOCKED).unwrap();
    }
    for pinned in ["app.js", "old.js", "copy.js", "src.js"] {
        let (resolved, status) = accept_after_pinning(&mut client, pinned).await;
        assert_eq!(status, 403, "{pinned}: {resolved}");
    }
    for file in ["app.js", "old.js", "src.js"] {
        assert_eq!(read(&root, file).as_deref(), Some(LOCKED), "{file}");
    }
    assert_eq!(read(&root, "copy.js"), None);
    assert_eq!(read(&root, "moved.js"), None);
    assert_eq!(llm.requests().len(), 4, "a refused change stops the run");
}
