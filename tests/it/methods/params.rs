//! Ill-typed and missing params, named in the -32602 message.

use serde_json::json;

use crate::support::TestApp;

#[actix_web::test]
async fn ill_typed_params_name_the_param() {
    let app = TestApp::start().await;
    let (mut client, root) = app.client_in_project("typed").await;
    client.add_model("grok").await;
    let run = client.start_run("grok").await;
    let cases = [
        (
            "init",
            json!({"name": 5, "projectRoot": root}),
            "name is required",
        ),
        (
            "init",
            json!({"name": "typed", "projectRoot": ["/"]}),
            "projectRoot is required",
        ),
        ("getModels", json!({"limit": "ten"}), "limit is required"),
        ("getModels", json!({"offset": -1}), "offset is required"),
        (
            "addModel",
            json!({"alias": "x", "actual": {"a": 1}}),
            "actual is required",
        ),
        ("removeModel", json!({"alias": false}), "alias is required"),
        ("getEntries", json!({"pattern": 5}), "pattern is required"),
        (
            "getEntries",
            json!({"run": run, "limit": 1.5}),
            "limit is required",
        ),
        (
            "get",
            json!({"path": 7, "persist": true}),
            "path is required",
        ),
        ("store", json!({"path": "a", "run": 7}), "run is required"),
        (
            "startRun",
            json!({"model": "grok", "temperature": "hot"}),
            "temperature is required",
        ),
        ("startRun", json!({"model": ["grok"]}), "model is required"),
        (
            "startRun",
            json!({"model": "grok", "contextLimit": "big"}),
            "contextLimit is required",
        ),
        ("getRuns", json!({"limit": "all"}), "limit is required"),
        ("getRun", json!({"run": 12}), "run is required"),
        (
            "run/config",
            json!({"run": run, "persona": 3}),
            "persona is required",
        ),
        (
            "run/rename",
            json!({"run": run, "name": 3}),
            "name is required",
        ),
        ("run/abort", json!({"run": null}), "run is required"),
        (
            "skill/add",
            json!({"run": run, "name": 1}),
            "name is required",
        ),
        ("getSkills", json!({"run": true}), "run is required"),
        (
            "persona/set",
            json!({"run": run, "text": 9}),
            "text is required",
        ),
    ];
    for (method, params, message) in cases {
        assert_eq!(
            client.err(method, params.clone()).await,
            (-32602, message.to_string()),
            "{method} {params}"
        );
    }
}
