//! `noRepo`, `noInteraction`, `noWeb`, `noProposals` (PROTOCOL Part A.7): a tool excluded by
//! a flag is neither offered to the model nor run when the model emits it anyway (403, with
//! a message the model sees); without the flag the same reply runs. `search` needs a search
//! backend. `noRepo` keeps the project's files out of the store and the packet.

use serde_json::json;

use super::{alias, file_entries, history_of, packet, told_about};
use crate::support::TestApp;
use rummy::testing::fake_llm::{FakeLlm, Step, WhenExhausted};

/// A search backend nothing listens on: a `<search>` that runs fails with 502 (the web
/// tests in `web.rs` use a backend that answers).
const SEARXNG: (&str, &str) = ("RUMMY_SEARXNG_URL", "http://127.0.0.1:9");

/// A flag, the tools it excludes, and a reply that emits them all.
struct Exclusion {
    method: &'static str,
    flag: &'static str,
    tools: &'static [&'static str],
    emitted: &'static str,
    /// What the refusal gives as the reason.
    reason: &'static str,
    /// Whether the first tool, run, proposes (else it runs on the server: not refused).
    proposes: bool,
    env: &'static [(&'static str, &'static str)],
}

/// With the flag: the tools are not offered, each emitted one is recorded as 403 and the
/// next packet says why. Without it, on a new run: offered, and the first one proposes
/// (or runs, when it runs on the server).
async fn assert_excludes(case: Exclusion) {
    let reply = format!("{}<update>trying</update>", case.emitted);
    let llm = FakeLlm::builder([
        Step::reply(reply.clone()),
        Step::reply("<summarize>could not</summarize>"),
        Step::reply(reply),
        Step::reply("<summarize>ran</summarize>"),
    ])
    .when_exhausted(WhenExhausted::Error(500))
    .start();
    let app = TestApp::with_llm(&llm, case.env).await;
    let (mut client, _) = app.client_in_project("flags").await;
    let flag = case.flag;
    let mut params = json!({"model": "fake", "prompt": "try every tool"});
    params[flag] = json!(true);
    let flagged = client.ok(case.method, params).await;
    assert_eq!(flagged["status"], json!(200), "{flag}: {flagged}");
    let run = alias(&flagged);
    let requests = llm.requests();
    assert_eq!(requests.len(), 2, "{flag}");
    for tool in case.tools {
        assert!(!told_about(&requests[0], tool), "{flag}: <{tool}> offered");
        let rows = history_of(&mut client, &run, tool).await;
        assert_eq!(rows.len(), 1, "{flag}: {rows:?}");
        assert_eq!(
            rows[0]["status"],
            json!(403),
            "{flag}: <{tool}> ran: {rows:?}"
        );
        let refusal = format!("<{tool}> is not available here");
        let body = rows[0]["body"].as_str().unwrap();
        assert!(body.contains(&refusal), "{flag}: {body}");
        assert!(body.contains(case.reason), "{flag}: {body}");
        assert!(
            packet(&requests[1]).contains(&refusal),
            "{flag}: the model is told that <{tool}> was refused"
        );
    }
    let plain = client
        .ok(
            case.method,
            json!({"model": "fake", "prompt": "try every tool"}),
        )
        .await;
    let requests = llm.requests();
    for tool in case.tools {
        assert!(told_about(&requests[2], tool), "without {flag}: <{tool}>");
    }
    if !case.proposes {
        let rows = history_of(&mut client, &alias(&plain), case.tools[0]).await;
        assert_ne!(rows[0]["status"], json!(403), "without {flag}: {rows:?}");
        return;
    }
    assert_eq!(requests.len(), 3, "{flag}");
    assert_eq!(plain["status"], json!(202), "without {flag}: {plain}");
    let proposed = plain["proposed"][0]["path"].as_str().unwrap();
    assert!(
        proposed.starts_with(&format!("{}://", case.tools[0])),
        "without {flag}: {proposed}"
    );
}

#[actix_web::test]
async fn no_interaction_excludes_ask_user() {
    assert_excludes(Exclusion {
        method: "ask",
        flag: "noInteraction",
        tools: &["ask_user"],
        emitted: "<ask_user question=\"Which database?\" options=\"postgres; sqlite\"/>",
        reason: "no interaction",
        proposes: true,
        env: &[],
    })
    .await;
}

#[actix_web::test]
async fn no_web_excludes_search() {
    assert_excludes(Exclusion {
        method: "ask",
        flag: "noWeb",
        tools: &["search"],
        emitted: "<search>actix websocket frame limit</search>",
        reason: "no web",
        proposes: false,
        env: &[SEARXNG],
    })
    .await;
}

/// `noProposals` excludes the tools whose only effect is a proposal: `env`, `sh` and
/// `ask_user` (as the reference's HEAD does). File edits stay with the mode: see
/// `no_proposals_leaves_file_edits_to_the_mode`.
#[actix_web::test]
async fn no_proposals_excludes_env_sh_and_ask_user() {
    assert_excludes(Exclusion {
        method: "act",
        flag: "noProposals",
        tools: &["env", "sh", "ask_user"],
        emitted: "<env>node --version</env><sh>npm test</sh><ask_user question=\"Ship it?\"/>",
        reason: "no proposals",
        proposes: true,
        env: &[],
    })
    .await;
}

#[actix_web::test]
async fn search_is_offered_only_with_a_search_backend() {
    let llm = FakeLlm::builder([
        Step::reply("<search>rust sqlite wal</search><update>searching</update>"),
        Step::reply("<summarize>no search</summarize>"),
    ])
    .when_exhausted(WhenExhausted::Error(500))
    .start();
    let app = TestApp::with_llm(&llm, &[]).await;
    let (mut client, _) = app.client_in_project("nosearch").await;
    let outcome = client
        .ok("ask", json!({"model": "fake", "prompt": "look it up"}))
        .await;
    assert_eq!(outcome["status"], json!(200), "{outcome}");
    let requests = llm.requests();
    assert!(!told_about(&requests[0], "search"));
    let rows = history_of(&mut client, &alias(&outcome), "search").await;
    assert_eq!(rows[0]["status"], json!(403), "{rows:?}");
    assert!(rows[0]["body"]
        .as_str()
        .unwrap()
        .contains("no search backend"));
    let with_backend = FakeLlm::start([Step::reply("<summarize>ok</summarize>")]);
    let app = TestApp::with_llm(&with_backend, &[SEARXNG]).await;
    let (mut client, _) = app.client_in_project("search").await;
    client
        .ok("ask", json!({"model": "fake", "prompt": "look it up"}))
        .await;
    assert!(told_about(&with_backend.requests()[0], "search"));
}

/// An act loop with `noProposals` still proposes file edits: editing files is what act
/// is for, and only the client can apply them. (An ask loop may not edit at all.)
#[actix_web::test]
async fn no_proposals_leaves_file_edits_to_the_mode() {
    let llm = FakeLlm::builder([Step::reply(
        "<set path=\"app.js\">s/3000/8080/</set><update>changing the port</update>",
    )])
    .when_exhausted(WhenExhausted::Error(500))
    .start();
    let app = TestApp::with_llm(&llm, &[]).await;
    let (mut client, root) = app.client_in_project("edits").await;
    std::fs::write(root.join("app.js"), "const port = 3000;\n").unwrap();
    let outcome = client
        .ok(
            "act",
            json!({"model": "fake", "prompt": "use 8080", "noProposals": true}),
        )
        .await;
    assert_eq!(outcome["status"], json!(202), "{outcome}");
    assert_eq!(outcome["proposed"][0]["path"], json!("set://app.js"));
    assert!(told_about(&llm.requests()[0], "set"));
}

#[actix_web::test]
async fn no_repo_keeps_project_files_out_of_the_store_and_the_packet() {
    let llm = FakeLlm::builder([
        Step::reply("<summarize>nothing to read</summarize>"),
        Step::reply("<summarize>read it</summarize>"),
    ])
    .when_exhausted(WhenExhausted::Error(500))
    .start();
    let app = TestApp::with_llm(&llm, &[]).await;
    let (mut client, root) = app.client_in_project("norepo").await;
    std::fs::write(root.join("codename.md"), "The codename is phoenix.\n").unwrap();
    let skipped = client
        .ok(
            "ask",
            json!({"model": "fake", "prompt": "what is the codename?", "noRepo": true}),
        )
        .await;
    assert_eq!(skipped["status"], json!(200), "{skipped}");
    assert_eq!(
        file_entries(&mut client, &alias(&skipped)).await,
        [] as [&str; 0]
    );
    let scanned = client
        .ok(
            "ask",
            json!({"model": "fake", "prompt": "what is the codename?"}),
        )
        .await;
    assert_eq!(
        file_entries(&mut client, &alias(&scanned)).await,
        ["codename.md"]
    );
    let requests = llm.requests();
    assert!(!packet(&requests[0]).contains("codename.md"), "noRepo");
    assert!(
        packet(&requests[1]).contains("codename.md"),
        "without noRepo"
    );
}
