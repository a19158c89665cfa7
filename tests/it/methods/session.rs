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
        "getProjects",
        "getModels",
        "getPeople",
        "getMcpServers",
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
        "run/cancel",
        "run/rename",
        "run/inject",
        "run/resume",
        "run/config",
        "run/mcp",
        "getRuns",
        "getRun",
        "run/fork",
        "run/replay",
        "rules/list",
        "rules/revoke",
        "run/watch",
        "run/unwatch",
        "inbox",
        "inbox/dismiss",
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
        "remember",
        "recall",
        "memory/list",
        "memory/search",
        "memory/set",
        "memory/delete",
        "memory/server/set",
        "memory/server/delete",
        "memory/switch",
        "memory/session",
        "memory/session/set",
        "project/config",
        "usage/report",
        "usage/caps",
        "webhooks/add",
        "webhooks/list",
        "webhooks/remove",
        "webhooks/deliveries",
        "run/changes",
        "run/revert",
        "model/test",
        "projects/folders",
        "projects/create",
        "people/add",
        "people/update",
        "people/remove",
        "people/token",
        "caps/set",
        "caps/clear",
        "caps/list",
        "admin/changes",
        "tokens/mint",
        "tokens/list",
        "tokens/revoke",
        "keys/set",
        "keys/list",
        "keys/remove",
        "keys/required",
        "hostCredentials/set",
        "hostCredentials/list",
        "hostCredentials/remove",
        "mcpCredentials/set",
        "mcpCredentials/list",
        "mcpCredentials/remove",
        "mcp/add",
        "mcp/remove",
        "mcp/restart",
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
    assert!(init_params.contains_key("client"), "{init_params:?}");
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
        "run/output",
        "ui/render",
        "ui/notify",
        "usage/capReached",
        "usage/capWarning",
        "run/presence",
        "inbox/changed",
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
            json!({"name": "alpha", "projectRoot": root, "configPath": 7}),
        )
        .await;
    assert!(first["projectId"].is_i64(), "{first}");
    assert_eq!(first["commands"], json!("client"), "where its commands run");
    assert_eq!(first.as_object().unwrap().len(), 2, "{first}");
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
        "run/cancel",
        "run/rename",
        "run/inject",
        "run/config",
        "getRuns",
        "getRun",
        "run/fork",
        "run/replay",
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

#[actix_web::test]
async fn with_projects_dirs_init_accepts_only_roots_inside_them() {
    let projects = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    std::fs::create_dir(projects.path().join("shop")).unwrap();
    std::os::unix::fs::symlink(outside.path(), projects.path().join("sneaky")).unwrap();
    let llm = rummy::testing::fake_llm::FakeLlm::start([]);
    let dirs = projects.path().to_str().unwrap();
    let app = TestApp::with_llm(&llm, &[("RUMMY_PROJECTS_DIR", dirs)]).await;
    let parent = projects.path().parent().unwrap().display().to_string();
    // Each refused root, and the root the refusal names: the client's own, `..` resolved.
    for (refused_root, named) in [
        ("/".to_string(), "/".to_string()),
        ("/etc".to_string(), "/etc".to_string()),
        (
            outside.path().display().to_string(),
            outside.path().display().to_string(),
        ),
        (format!("{dirs}/shop/../.."), parent),
        (format!("{dirs}/sneaky"), format!("{dirs}/sneaky")),
        (
            format!("{dirs}/sneaky/inner"),
            format!("{dirs}/sneaky/inner"),
        ),
    ] {
        let mut client = app.client().await;
        let reply = client
            .call("init", json!({"name": "shop", "projectRoot": refused_root}))
            .await;
        assert_eq!(
            reply["error"]["code"],
            json!(-32005),
            "{refused_root}: {reply}"
        );
        assert_eq!(
            reply["error"]["message"],
            json!(format!(
                "projectRoot {named} is not inside a directory this server keeps projects in"
            ))
        );
        let unbound = client.call("getRuns", json!({})).await;
        assert_eq!(
            unbound["error"]["code"],
            json!(-32001),
            "nothing bound: {unbound}"
        );
    }
    let mut client = app.client().await;
    let shop = format!("{dirs}/shop");
    let bound = client
        .ok("init", json!({"name": "shop", "projectRoot": shop}))
        .await;
    assert!(bound["projectId"].is_i64(), "{bound}");
    assert_eq!(client.ok("getRuns", json!({})).await, json!([]));
    let fresh = format!("{dirs}/not/yet/cloned");
    client
        .ok("init", json!({"name": "fresh", "projectRoot": fresh}))
        .await;
}
