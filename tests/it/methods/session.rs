//! `ping`, `discover` and `init`.

use serde_json::json;

use crate::support::TestApp;

#[actix_web::test]
async fn ping_answers_an_empty_object_before_and_after_init() {
    let app = TestApp::start().await;
    let mut client = app.client().await;
    assert_eq!(client.ok("ping", json!({"ignored": true})).await, json!({}));
    client.init("pinged", &app.project_root("pinged")).await;
    assert_eq!(client.ok("ping", json!({})).await, json!({}));
}

#[actix_web::test]
async fn discover_describes_every_method_and_notification() {
    let app = TestApp::start().await;
    let mut client = app.client().await;
    let catalogue = client.ok("discover", json!({})).await;
    let methods = catalogue["methods"].as_object().unwrap();
    let expected = [
        "ping",
        "discover",
        "init",
        "getModels",
        "addModel",
        "removeModel",
        "get",
        "store",
        "getEntries",
        "startRun",
        "ask",
        "act",
        "run/resolve",
        "run/abort",
        "run/rename",
        "run/inject",
        "run/config",
        "getRuns",
        "getRun",
        "skill/add",
        "skill/remove",
        "getSkills",
        "listSkills",
        "persona/set",
        "listPersonas",
        "set",
        "known",
        "unknown",
        "env",
        "sh",
        "rm",
        "cp",
        "mv",
        "summarize",
        "update",
        "ask_user",
    ];
    for name in expected {
        let method = &methods[name];
        assert!(method["description"].is_string(), "{name}: {method}");
        assert!(method["params"].is_object(), "{name}: {method}");
    }
    assert_eq!(methods.len(), expected.len(), "{:?}", methods.keys());
    assert!(!methods.contains_key("rpc/discover"));
    assert_eq!(methods["ping"]["params"], json!({}));
    let init_params = methods["init"]["params"].as_object().unwrap();
    assert!(init_params.contains_key("name") && init_params.contains_key("projectRoot"));
    let set_params: Vec<&String> = methods["set"]["params"]
        .as_object()
        .unwrap()
        .keys()
        .collect();
    assert_eq!(set_params, ["run", "path", "body", "to", "attributes"]);
    for notification in [
        "run/state",
        "run/progress",
        "run/proposal",
        "ui/render",
        "ui/notify",
    ] {
        assert!(
            catalogue["notifications"][notification]["description"].is_string(),
            "{notification}"
        );
    }
    assert_eq!(client.ok("rpc/discover", json!({})).await, catalogue);
}

#[actix_web::test]
async fn init_upserts_the_project_by_name() {
    let app = TestApp::start().await;
    let mut client = app.client().await;
    let root = app.project_root("alpha");
    let first = client
        .ok(
            "init",
            json!({"name": "alpha", "projectRoot": root, "configPath": "rummy.toml"}),
        )
        .await;
    assert!(first["projectId"].is_i64(), "{first}");
    assert_eq!(first.as_object().unwrap().len(), 1, "{first}");
    let again = client
        .ok(
            "init",
            json!({"name": "alpha", "projectRoot": root.join("sub/..")}),
        )
        .await;
    assert_eq!(again, first, "the same name is the same project");
    let other = client.init("beta", &app.project_root("beta")).await;
    assert_ne!(json!(other), first["projectId"]);
}

#[actix_web::test]
async fn init_requires_a_name_and_an_absolute_root() {
    let app = TestApp::start().await;
    let mut client = app.client().await;
    let root = app.project_root("gamma");
    let cases = [
        (json!({"projectRoot": root}), "name is required"),
        (json!({"name": "", "projectRoot": root}), "name is required"),
        (json!({"name": "gamma"}), "projectRoot is required"),
        (
            json!({"name": "gamma", "projectRoot": null}),
            "projectRoot is required",
        ),
    ];
    for (params, message) in cases {
        assert_eq!(
            client.err("init", params.clone()).await,
            (-32602, message.to_string()),
            "{params}"
        );
    }
    let (code, message) = client
        .err(
            "init",
            json!({"name": "gamma", "projectRoot": "relative/dir"}),
        )
        .await;
    assert_eq!(code, -32602);
    assert!(message.contains("projectRoot"), "{message}");
    let (code, _) = client.err("getRuns", json!({})).await;
    assert_eq!(code, -32001, "a failed init binds nothing");
}

#[actix_web::test]
async fn every_project_method_needs_init_first() {
    let app = TestApp::start().await;
    let mut client = app.client().await;
    let params = json!({"run": "x", "path": "a.txt", "name": "n", "model": "m", "prompt": "p"});
    let gated = [
        "get",
        "store",
        "getEntries",
        "startRun",
        "ask",
        "act",
        "run/resolve",
        "run/abort",
        "run/rename",
        "run/inject",
        "run/config",
        "getRuns",
        "getRun",
        "skill/add",
        "skill/remove",
        "getSkills",
        "listSkills",
        "persona/set",
        "listPersonas",
        "set",
        "rm",
        "sh",
    ];
    for method in gated {
        assert_eq!(
            client.err(method, params.clone()).await,
            (-32001, "Project not initialized.".to_string()),
            "{method}"
        );
    }
    for method in ["ping", "discover", "rpc/discover", "getModels"] {
        client.ok(method, json!({})).await;
    }
}
