//! A source file at summary fidelity shows its outline (its definitions with their lines),
//! refreshed when the file changes on disk; a file without one (no grammar, over
//! `RUMMY_OUTLINE_MAX_BYTES`, no definition) shows its first characters.

use std::path::Path;

use serde_json::{json, Value};

use crate::support::{system_message, Client, TestApp};
use rummy::testing::fake_llm::{FakeLlm, Step};

const APP: &str =
    "pub struct Server {\n    port: u16,\n}\n\nimpl Server {\n    pub fn listen(&self) {}\n}\n";

/// The `<knowns>` entry of `path` in the packet `request` carried.
fn entry(request: &Value, path: &str) -> String {
    let system = system_message(request);
    let start = system
        .find(&format!("path=\"{path}\""))
        .unwrap_or_else(|| panic!("{path} is not in the packet: {system}"));
    let line_start = system[..start].rfind('<').unwrap();
    let rest = &system[line_start..];
    let tag_end = rest.find('>').unwrap();
    let close = rest.find("</").unwrap();
    rest[tag_end + 1..close].to_string()
}

/// Asks on `run` (a new one when `None`); the run's alias.
async fn ask(client: &mut Client, run: Option<&str>, prompt: &str) -> String {
    let mut params = json!({"model": "fake", "prompt": prompt});
    if let Some(run) = run {
        params["run"] = json!(run);
    }
    let outcome = client.ok("ask", params).await;
    assert_eq!(outcome["status"], json!(200), "{outcome}");
    outcome["run"].as_str().unwrap().to_string()
}

fn write(root: &Path, path: &str, text: &str) {
    std::fs::write(root.join(path), text).unwrap();
}

#[actix_web::test]
async fn a_source_file_at_summary_fidelity_shows_its_outline_refreshed_on_change() {
    let llm = FakeLlm::start([
        Step::reply(
            "<set path=\"app.rs\" fidelity=\"summary\"/>\
             <set path=\"notes.txt\" fidelity=\"summary\"/><update>reading</update>",
        ),
        Step::reply("<summarize>seen</summarize>"),
        Step::reply("<summarize>seen again</summarize>"),
    ]);
    let app = TestApp::with_llm(&llm, &[]).await;
    let (mut client, root) = app.client_in_project("outlines").await;
    write(&root, "app.rs", APP);
    write(&root, "notes.txt", "fn not_code() {}\n");
    let run = ask(&mut client, None, "what is here?").await;
    let requests = llm.requests();
    assert_eq!(
        entry(&requests[1], "app.rs"),
        "1-3 class Server\n5-7 impl Server\n  6 method listen"
    );
    assert_eq!(entry(&requests[1], "notes.txt"), "fn not_code() {}\n");

    write(&root, "app.rs", &format!("fn main() {{}}\n\n{APP}"));
    ask(&mut client, Some(&run), "and now?").await;
    let requests = llm.requests();
    assert_eq!(
        entry(&requests[2], "app.rs"),
        "1 function main\n3-5 class Server\n7-9 impl Server\n  8 method listen"
    );
}

#[actix_web::test]
async fn a_file_without_an_outline_shows_its_first_characters() {
    let llm = FakeLlm::start([
        Step::reply(
            "<set path=\"big.rs\" fidelity=\"summary\"/>\
             <set path=\"broken.py\" fidelity=\"summary\"/><update>reading</update>",
        ),
        Step::reply("<summarize>seen</summarize>"),
        Step::reply("<summarize>seen again</summarize>"),
    ]);
    let app = TestApp::with_llm(&llm, &[("RUMMY_OUTLINE_MAX_BYTES", "100")]).await;
    let (mut client, root) = app.client_in_project("fallback").await;
    write(&root, "big.rs", "fn small() {}\n");
    write(&root, "broken.py", ")))) = = = ((((\n");
    let run = ask(&mut client, None, "what is here?").await;
    let requests = llm.requests();
    assert_eq!(entry(&requests[1], "big.rs"), "1 function small");
    assert_eq!(entry(&requests[1], "broken.py"), ")))) = = = ((((\n");

    let grown = format!("fn small() {{}}\n{}", "// padding\n".repeat(20));
    write(&root, "big.rs", &grown);
    ask(&mut client, Some(&run), "and now?").await;
    let requests = llm.requests();
    let first: String = grown.chars().take(80).collect();
    assert_eq!(entry(&requests[2], "big.rs"), first);
}
