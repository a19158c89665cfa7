//! The model catalogue: `getModels`, `addModel`, `removeModel`.

use serde_json::json;

use crate::support::TestApp;

#[actix_web::test]
async fn models_are_listed_by_alias_and_paged() {
    let app = TestApp::start().await;
    let mut client = app.client().await;
    assert_eq!(client.ok("getModels", json!({})).await, json!([]));
    for (alias, actual) in [
        ("zeta", "ollama/z"),
        ("alpha", "openai/a"),
        ("mid", "x.ai/m"),
    ] {
        let added = client
            .ok("addModel", json!({"alias": alias, "actual": actual}))
            .await;
        assert_eq!(added["alias"], json!(alias));
        assert!(added["id"].is_i64(), "{added}");
    }
    let all = client.ok("getModels", json!({})).await;
    assert_eq!(
        all,
        json!([
            {"alias": "alpha", "actual": "openai/a", "provider": "openai", "keySet": false, "context_length": null, "price": {"input": 0.0, "cached_input": 0.0, "output": 0.0}},
            {"alias": "mid", "actual": "x.ai/m", "provider": "xai", "keySet": false, "context_length": null, "price": {"input": 0.0, "cached_input": 0.0, "output": 0.0}},
            {"alias": "zeta", "actual": "ollama/z", "provider": "ollama", "keySet": false, "context_length": null, "price": {"input": 0.0, "cached_input": 0.0, "output": 0.0}},
        ])
    );
    let page = client
        .ok("getModels", json!({"limit": 1, "offset": 1}))
        .await;
    assert_eq!(page, json!([all[1]]));
    let tail = client.ok("getModels", json!({"offset": 2})).await;
    assert_eq!(tail, json!([all[2]]));
    let head = client.ok("getModels", json!({"limit": 2})).await;
    assert_eq!(head, json!([all[0], all[1]]));
}

#[actix_web::test]
async fn add_model_updates_in_place_and_keeps_the_context_length() {
    let app = TestApp::start().await;
    let mut client = app.client().await;
    let first = client
        .ok(
            "addModel",
            json!({"alias": "potato", "actual": "openai/potato-3000", "contextLength": 16000}),
        )
        .await;
    let updated = client
        .ok(
            "addModel",
            json!({"alias": "potato", "actual": "openai/potato-4000"}),
        )
        .await;
    assert_eq!(updated, first, "an update keeps the row id");
    let models = client.ok("getModels", json!({})).await;
    assert_eq!(
        models,
        json!([{"alias": "potato", "actual": "openai/potato-4000", "provider": "openai", "keySet": false, "context_length": 16000, "price": {"input": 0.0, "cached_input": 0.0, "output": 0.0}}])
    );
    client
        .ok(
            "addModel",
            json!({"alias": "potato", "actual": "openai/potato-4000", "contextLength": 32000}),
        )
        .await;
    let models = client.ok("getModels", json!({})).await;
    assert_eq!(models[0]["context_length"], json!(32000));
}

#[actix_web::test]
async fn add_model_requires_alias_and_actual() {
    let app = TestApp::start().await;
    let mut client = app.client().await;
    let cases = [
        (json!({"actual": "openai/x"}), "alias is required"),
        (json!({"alias": "x"}), "actual is required"),
        (
            json!({"alias": "", "actual": "openai/x"}),
            "alias is required",
        ),
        (
            json!({"alias": "x", "actual": "openai/x", "contextLength": "big"}),
            "contextLength is required",
        ),
    ];
    for (params, message) in cases {
        assert_eq!(
            client.err("addModel", params.clone()).await,
            (-32602, message.to_string()),
            "{params}"
        );
    }
    assert_eq!(client.ok("getModels", json!({})).await, json!([]));
}

#[actix_web::test]
async fn a_price_is_given_to_add_model_as_get_models_shows_it() {
    let app = TestApp::start().await;
    let mut client = app.client().await;
    let price = json!({"input": 3.0, "cached_input": 0.3, "output": 15.0});
    client
        .ok(
            "addModel",
            json!({"alias": "p", "actual": "openai/p", "price": price}),
        )
        .await;
    let models = client.ok("getModels", json!({})).await;
    assert_eq!(models[0]["price"], price);
    client
        .ok(
            "addModel",
            json!({"alias": "q", "actual": "openai/q", "price": models[0]["price"]}),
        )
        .await;
    let models = client.ok("getModels", json!({})).await;
    assert_eq!(
        models[1]["price"], price,
        "what getModels shows, addModel takes"
    );
    for (price, message) in [
        (
            json!({"input": 3, "cachedInput": 0.3, "output": 15}),
            "price.cachedInput: unknown field `cachedInput`, expected one of `input`, \
             `cached_input`, `output`",
        ),
        (json!({"output": 15}), "price.input is required"),
    ] {
        let refused = client
            .err(
                "addModel",
                json!({"alias": "r", "actual": "openai/r", "price": price}),
            )
            .await;
        assert_eq!(refused, (-32602, message.to_owned()));
    }
}

#[actix_web::test]
async fn remove_model_is_ok_whether_or_not_the_alias_exists() {
    let app = TestApp::start().await;
    let mut client = app.client().await;
    client.add_model("gone").await;
    client.add_model("kept").await;
    let removed = client.ok("removeModel", json!({"alias": "gone"})).await;
    assert_eq!(removed, json!({"status": "ok"}));
    let again = client.ok("removeModel", json!({"alias": "gone"})).await;
    assert_eq!(again, json!({"status": "ok"}));
    let models = client.ok("getModels", json!({})).await;
    assert_eq!(models.as_array().unwrap().len(), 1);
    assert_eq!(models[0]["alias"], json!("kept"));
    assert_eq!(
        client.err("removeModel", json!({})).await,
        (-32602, "alias is required".to_string())
    );
}

#[actix_web::test]
async fn model_aliases_cannot_hold_whitespace() {
    let app = TestApp::start().await;
    let mut client = app.client().await;
    for alias in ["two words", "tab\there", " padded"] {
        let (code, message) = client
            .err("addModel", json!({"alias": alias, "actual": "openai/x"}))
            .await;
        assert_eq!(code, -32602, "{alias:?}: {message}");
    }
    assert_eq!(client.ok("getModels", json!({})).await, json!([]));
}
