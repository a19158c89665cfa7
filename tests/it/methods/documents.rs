//! Skills and personas: files under `$RUMMY_HOME` loaded into runs.

use serde_json::{json, Value};

use crate::support::{Client, TestApp};

#[actix_web::test]
async fn skills_are_listed_loaded_and_removed() {
    let app = TestApp::start().await;
    let (mut client, _) = app.client_in_project("skills").await;
    assert_eq!(client.ok("listSkills", json!({})).await, json!([]));
    app.write_document("skills", "sql_style", "Use lowercase SQL keywords.");
    app.write_document("skills", "rust_style", "Prefer iterators.");
    std::fs::write(app.home().join("skills/notes.txt"), "not a skill").unwrap();
    let listed = client.ok("listSkills", json!({})).await;
    assert_eq!(
        listed,
        json!([
            {"name": "rust_style", "path": "skills/rust_style.md", "title": "rust_style",
             "description": "Prefer iterators.", "whenToUse": null},
            {"name": "sql_style", "path": "skills/sql_style.md", "title": "sql_style",
             "description": "Use lowercase SQL keywords.", "whenToUse": null},
        ])
    );
    client.add_model("grok").await;
    let run = client.start_run("grok").await;
    assert_eq!(client.ok("getSkills", json!({"run": run})).await, json!([]));
    client
        .ok("skill/add", json!({"run": run, "name": "sql_style"}))
        .await;
    assert_eq!(
        client.ok("getSkills", json!({"run": run})).await,
        json!([{"name": "sql_style", "status": 200, "title": "sql_style",
                 "description": "Use lowercase SQL keywords.", "whenToUse": null,
                 "loaded": false}])
    );
    assert_eq!(
        client
            .err("skill/add", json!({"run": run, "name": "nosuch"}))
            .await,
        (-32602, "Not found: skills/nosuch.md".to_string()),
        "a path under home, nothing of where the server keeps it"
    );
    let removed = client
        .ok("skill/remove", json!({"run": run, "name": "sql_style"}))
        .await;
    assert_eq!(removed, json!({"status": "ok"}));
    assert_eq!(client.ok("getSkills", json!({"run": run})).await, json!([]));
    let absent = client
        .ok("skill/remove", json!({"run": run, "name": "sql_style"}))
        .await;
    assert_eq!(absent, json!({"status": "ok"}));
}

#[actix_web::test]
async fn skill_methods_check_name_then_run() {
    let app = TestApp::start().await;
    let (mut client, _) = app.client_in_project("skill_errors").await;
    for method in ["skill/add", "skill/remove"] {
        let cases = [
            (json!({"run": "x"}), -32602, "name is required"),
            (json!({}), -32602, "name is required"),
            (json!({"name": "sql_style"}), -32602, "run is required"),
            (
                json!({"name": "sql_style", "run": "nosuch"}),
                -32002,
                "Run not found: nosuch",
            ),
        ];
        for (params, code, message) in cases {
            assert_eq!(
                client.err(method, params.clone()).await,
                (code, message.to_string()),
                "{method} {params}"
            );
        }
    }
    assert_eq!(
        client.err("getSkills", json!({})).await,
        (-32602, "run is required".to_string())
    );
    assert_eq!(
        client.err("getSkills", json!({"run": "nosuch"})).await,
        (-32002, "Run not found: nosuch".to_string())
    );
}

/// The persona stored on `run`, as `getRun` shows it.
async fn persona_of(client: &mut Client, run: &str) -> Value {
    client.ok("getRun", json!({"run": run})).await["persona"].clone()
}

#[actix_web::test]
async fn personas_are_set_from_text_or_a_named_file() {
    let app = TestApp::start().await;
    let (mut client, _) = app.client_in_project("personas").await;
    assert_eq!(client.ok("listPersonas", json!({})).await, json!([]));
    app.write_document("personas", "pirate", "You are a pirate.");
    assert_eq!(
        client.ok("listPersonas", json!({})).await,
        json!([{"name": "pirate", "path": "personas/pirate.md"}])
    );
    client.add_model("grok").await;
    let run = client.start_run("grok").await;
    assert_eq!(persona_of(&mut client, &run).await, Value::Null);
    let ok = json!({"status": "ok"});
    let by_text = client
        .ok(
            "persona/set",
            json!({"run": run, "text": "You are a grumpy reviewer."}),
        )
        .await;
    assert_eq!(by_text, ok);
    assert_eq!(
        persona_of(&mut client, &run).await,
        json!("You are a grumpy reviewer.")
    );
    let by_name = client
        .ok("persona/set", json!({"run": run, "name": "pirate"}))
        .await;
    assert_eq!(by_name, ok);
    assert_eq!(
        persona_of(&mut client, &run).await,
        json!("You are a pirate.")
    );
    client
        .ok(
            "persona/set",
            json!({"run": run, "name": "pirate", "text": "Text wins."}),
        )
        .await;
    assert_eq!(persona_of(&mut client, &run).await, json!("Text wins."));
    assert_eq!(
        client
            .err("persona/set", json!({"run": run, "name": "nosuch"}))
            .await,
        (-32602, "Not found: personas/nosuch.md".to_string())
    );
    assert_eq!(persona_of(&mut client, &run).await, json!("Text wins."));
    assert_eq!(
        client.err("persona/set", json!({"text": "x"})).await,
        (-32602, "run is required".to_string())
    );
    assert_eq!(
        client
            .err("persona/set", json!({"run": "nosuch", "text": "x"}))
            .await,
        (-32002, "Run not found: nosuch".to_string())
    );
}

#[actix_web::test]
async fn document_names_cannot_leave_their_directory() {
    let app = TestApp::start().await;
    let (mut client, root) = app.client_in_project("traversal").await;
    std::fs::write(root.join("secret.md"), "do not load").unwrap();
    client.add_model("grok").await;
    let run = client.start_run("grok").await;
    let escapes = ["../project-traversal/secret", "..", "a/b", "a\\b"];
    for name in escapes {
        let (code, message) = client
            .err("skill/add", json!({"run": run, "name": name}))
            .await;
        assert_eq!(code, -32602, "{name}: {message}");
        let (code, message) = client
            .err("persona/set", json!({"run": run, "name": name}))
            .await;
        assert_eq!(code, -32602, "{name}: {message}");
    }
    assert_eq!(client.ok("getSkills", json!({"run": run})).await, json!([]));
    assert_eq!(persona_of(&mut client, &run).await, Value::Null);
}

#[actix_web::test]
async fn persona_set_without_name_or_text_clears_the_persona() {
    let app = TestApp::start().await;
    let (mut client, _) = app.client_in_project("clearing").await;
    client.add_model("grok").await;
    let run = client.start_run("grok").await;
    for clearing in [
        json!({"run": run}),
        json!({"run": run, "text": "", "name": ""}),
    ] {
        client
            .ok("persona/set", json!({"run": run, "text": "Terse."}))
            .await;
        assert_eq!(persona_of(&mut client, &run).await, json!("Terse."));
        assert_eq!(
            client.ok("persona/set", clearing.clone()).await,
            json!({"status": "ok"})
        );
        assert_eq!(
            persona_of(&mut client, &run).await,
            Value::Null,
            "{clearing}"
        );
    }
}
