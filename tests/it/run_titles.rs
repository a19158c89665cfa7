//! Runs' titles (`getRuns`' and `getRun`'s `title`): the first line of a run's first prompt
//! from the moment the prompt is queued, kept by later prompts and by forks; the session
//! notes' title once the notes have one; a person's (`run/rename`), which neither replaces.

use rummy::testing::fake_llm::{FakeLlm, Step};
use serde_json::{json, Value};

use crate::session_notes::{notes, NOTES_ON};
use crate::support::{eventually, Client, TestApp};

/// The run `alias` as `getRuns` lists it.
async fn listed(client: &mut Client, alias: &str) -> Value {
    let runs = client.ok("getRuns", json!({})).await;
    runs.as_array()
        .unwrap()
        .iter()
        .find(|run| run["run"] == json!(alias))
        .cloned()
        .unwrap_or_else(|| panic!("{alias} is not listed: {runs}"))
}

async fn title(client: &mut Client, alias: &str) -> Value {
    let detail = client.ok("getRun", json!({"run": alias})).await;
    let listed = listed(client, alias).await;
    assert_eq!(listed["title"], detail["title"], "getRuns and getRun agree");
    detail["title"].clone()
}

#[actix_web::test]
async fn a_run_is_titled_by_the_first_line_of_its_first_prompt() {
    let llm = FakeLlm::start([
        Step::reply("<summarize>Four.</summarize>"),
        Step::reply("<summarize>Six.</summarize>"),
        Step::reply("<summarize>Eight.</summarize>"),
        Step::reply("<summarize>Ten.</summarize>"),
    ]);
    let app = TestApp::with_llm(&llm, &[]).await;
    let (mut client, _) = app.client_in_project("titles").await;
    let prompt = "\n   What   is\t2 + 2?  \nShow your work, in **markdown**.";
    let asked = client
        .ok("ask", json!({"model": "fake", "prompt": prompt}))
        .await;
    let run = asked["run"].as_str().unwrap().to_owned();
    assert_eq!(title(&mut client, &run).await, json!("What is 2 + 2?"));
    let item = listed(&mut client, &run).await;
    assert_eq!(item["asked"], json!(prompt), "what was asked, whole");
    assert!(item["last_event_ms"].as_i64().unwrap() > 0, "{item}");
    let detail = client.ok("getRun", json!({"run": run})).await;
    assert_eq!(detail["created"], item["created"]);
    assert_eq!(detail["last_event_ms"], item["last_event_ms"]);

    client
        .ok(
            "ask",
            json!({"model": "fake", "prompt": "And 3 + 3?", "run": run}),
        )
        .await;
    assert_eq!(
        title(&mut client, &run).await,
        json!("What is 2 + 2?"),
        "a later prompt keeps the first one's title"
    );
    let fork = client
        .ok(
            "ask",
            json!({"model": "fake", "prompt": "And 4 + 4?", "run": run, "fork": true}),
        )
        .await["run"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_ne!(fork, run);
    assert_eq!(
        title(&mut client, &fork).await,
        json!("What is 2 + 2?"),
        "a fork keeps it"
    );

    let idle = client.start_run("fake").await;
    assert_eq!(
        title(&mut client, &idle).await,
        Value::Null,
        "no prompt, no title"
    );
    assert_eq!(listed(&mut client, &idle).await["asked"], Value::Null);
    let long = format!("{} and more", "Summarise the report ".repeat(10));
    client
        .ok("ask", json!({"model": "fake", "prompt": long, "run": idle}))
        .await;
    let cut = title(&mut client, &idle).await;
    assert_eq!(
        cut,
        json!("Summarise the report Summarise the report Summarise the report Summarise the…"),
        "a long first line is cut at a word, to at most 80 characters"
    );
    let asked = listed(&mut client, &idle).await["asked"].clone();
    assert_eq!(asked.as_str().unwrap().chars().count(), 219, "{asked}");
}

#[actix_web::test]
async fn the_notes_title_replaces_the_prompts_and_a_persons_title_wins_over_both() {
    let llm = FakeLlm::start([
        Step::reply("<known path=\"known://a\">A.</known><update>learning</update>"),
        notes("Login flow repair", "auth", "JWT."),
        Step::reply("<summarize>Done.</summarize>"),
    ]);
    let app = TestApp::with_llm(&llm, &NOTES_ON).await;
    let (mut client, _) = app.client_in_project("notes").await;
    let asked = client
        .ok("ask", json!({"model": "fake", "prompt": "fix the login"}))
        .await;
    let run = asked["run"].as_str().unwrap().to_owned();
    eventually("the notes' title to title the run", async || {
        (title(&mut client, &run).await == json!("Login flow repair")).then_some(())
    })
    .await;

    let renamed = client
        .ok(
            "run/rename",
            json!({"run": run, "title": "  The login, again  "}),
        )
        .await;
    assert_eq!(renamed, json!({"run": run, "title": "The login, again"}));
    assert_eq!(title(&mut client, &run).await, json!("The login, again"));
    client
        .ok(
            "memory/session/set",
            json!({"run": run, "notes": {"title": "Notes by hand"}}),
        )
        .await;
    assert_eq!(
        title(&mut client, &run).await,
        json!("The login, again"),
        "notes no longer replace a person's title"
    );
    client
        .ok(
            "ask",
            json!({"model": "fake", "prompt": "go on", "run": run}),
        )
        .await;
    assert_eq!(title(&mut client, &run).await, json!("The login, again"));

    let renamed = client
        .ok("run/rename", json!({"run": run, "name": "login_fix"}))
        .await;
    assert_eq!(renamed, json!({"run": "login_fix", "title": "login_fix"}));
    assert_eq!(title(&mut client, "login_fix").await, json!("login_fix"));
    for bad in [json!(""), json!("two\nlines"), json!("x".repeat(81))] {
        let (code, _) = client
            .err("run/rename", json!({"run": "login_fix", "title": bad}))
            .await;
        assert_eq!(code, -32602, "{bad}");
    }
    assert_eq!(title(&mut client, "login_fix").await, json!("login_fix"));
}
