//! Skills' front matter: the model reads each skill's description (and when to use it)
//! until it loads the body with `<get>`; a skill without front matter is described by its
//! first line.

use serde_json::json;

use crate::support::{system_message, TestApp};
use rummy::testing::fake_llm::{FakeLlm, Step};

const SQL_STYLE: &str = "---\nname: SQL style\ndescription: How this team writes SQL.\n\
                         when_to_use: before writing or reviewing a query\n---\n\
                         # SQL\nUse lowercase keywords and one clause per line.\n";

#[actix_web::test]
async fn a_skill_is_described_until_the_model_loads_its_body() {
    let llm = FakeLlm::start([
        Step::reply("<get path=\"skill://sql_style\"/><update>loading the skill</update>"),
        Step::reply("<summarize>written in our style</summarize>"),
    ]);
    let app = TestApp::with_llm(&llm, &[]).await;
    app.write_document("skills", "sql_style", SQL_STYLE);
    app.write_document("skills", "plain", "## Prefer iterators\nOver index loops.");
    let (mut client, _) = app.client_in_project("skilled").await;
    let listed = client.ok("listSkills", json!({})).await;
    assert_eq!(
        listed[1],
        json!({"name": "sql_style", "path": "skills/sql_style.md", "title": "SQL style",
               "description": "How this team writes SQL.",
               "whenToUse": "before writing or reviewing a query"})
    );
    assert_eq!(listed[0]["description"], json!("Prefer iterators"));
    let run = client.start_run("fake").await;
    for name in ["sql_style", "plain"] {
        client
            .ok("skill/add", json!({"run": run, "name": name}))
            .await;
    }
    let result = client
        .ok(
            "ask",
            json!({"model": "fake", "run": run, "prompt": "write a query", "noRepo": true}),
        )
        .await;
    assert_eq!(result["status"], json!(200), "{result}");

    let requests = llm.requests();
    let before = system_message(&requests[0]);
    assert!(
        before.contains(
            "### SQL style\nHow this team writes SQL. (when to use: before writing or reviewing \
             a query)\nNot loaded: <get path=\"skill://sql_style\"/> loads it."
        ),
        "{before}"
    );
    assert!(
        before.contains("### plain\nPrefer iterators\nNot loaded:"),
        "{before}"
    );
    assert!(
        !before.contains("one clause per line"),
        "no body before loading: {before}"
    );
    assert!(!before.contains("Over index loops"), "{before}");
    let after = system_message(&requests[1]);
    assert!(
        after.contains("### SQL style\n# SQL\nUse lowercase keywords and one clause per line."),
        "{after}"
    );
    assert!(
        !after.contains("name: SQL style"),
        "the front matter is not body: {after}"
    );
    assert!(
        !after.contains("Over index loops"),
        "the other stays unloaded: {after}"
    );

    let skills = client.ok("getSkills", json!({"run": run})).await;
    assert_eq!(
        skills,
        json!([
            {"name": "sql_style", "status": 200, "title": "SQL style",
             "description": "How this team writes SQL.",
             "whenToUse": "before writing or reviewing a query", "loaded": true},
            {"name": "plain", "status": 200, "title": "plain",
             "description": "Prefer iterators", "whenToUse": null, "loaded": false},
        ])
    );
}

#[actix_web::test]
async fn a_name_longer_than_a_file_name_may_be_is_a_parameter_error_naming_the_limit() {
    let llm = FakeLlm::start([]);
    let app = TestApp::with_llm(&llm, &[]).await;
    let (mut client, _) = app.client_in_project("named").await;
    let run = client.start_run("fake").await;
    let too_long = "n".repeat(300);
    for method in ["skill/add", "persona/set"] {
        let (code, message) = client
            .err(method, json!({"run": run, "name": too_long}))
            .await;
        assert_eq!(code, -32602, "{method}: {message}");
        assert!(message.contains("at most 252 bytes"), "{method}: {message}");
    }
    app.write_document("personas", &"p".repeat(252), "Be terse.");
    client
        .ok("persona/set", json!({"run": run, "name": "p".repeat(252)}))
        .await;
}
