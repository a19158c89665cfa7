//! A model's price set from a client (`addModel`, the console's Models page) is audited
//! with who set it and what it became, a provider's key only as whether one was given; a
//! model removed (`removeModel`) is audited with who removed it.

use rummy::testing::fake_llm::FakeLlm;
use serde_json::json;

use super::{connect, server};

#[actix_web::test]
async fn each_price_set_is_in_the_audit_with_who_set_it_and_no_key() {
    let llm = FakeLlm::start([]);
    let (app, _, _dir) = server(&llm, &[]).await;
    let mut ada = connect(&app, "ada-token").await;
    let key = "sk-never-in-the-audit-1234";
    for params in [
        json!({"alias": "cheap", "actual": "cheap-1", "contextLength": 8192,
               "price": {"input": 2.0, "output": 10.0}}),
        json!({"alias": "cheap", "actual": "cheap-1", "contextLength": 8192,
               "price": {"input": 3.0, "cached_input": 1.5, "output": 12.0}}),
        json!({"alias": "keyed", "actual": "gpt-x", "provider": "openai", "apiKey": key}),
    ] {
        ada.ok("addModel", params).await;
    }

    let changes = ada.ok("admin/changes", json!({})).await;
    let seen: Vec<(&str, &str, &str)> = changes["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|change| {
            (
                change["by"].as_str().unwrap(),
                change["action"].as_str().unwrap(),
                change["subject"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        seen,
        [
            ("ada", "addModel", "keyed"),
            ("ada", "addModel", "cheap"),
            ("ada", "addModel", "cheap"),
        ]
    );
    assert_eq!(
        changes["changes"][1]["detail"],
        json!({"actual": "cheap-1", "contextLength": 8192,
               "price": {"input": 3.0, "cached_input": 1.5, "output": 12.0}})
    );
    assert_eq!(
        changes["changes"][2]["detail"]["price"],
        json!({"input": 2.0, "cached_input": 2.0, "output": 10.0}),
        "the price it had before"
    );
    let keyed = &changes["changes"][0]["detail"];
    assert_eq!(
        (&keyed["provider"], &keyed["keySet"], &keyed["price"]),
        (&json!("openai"), &json!(true), &json!(null)),
        "{keyed}"
    );
    assert!(!changes.to_string().contains(key), "{changes}");

    ada.ok("removeModel", json!({"alias": "cheap"})).await;
    ada.ok("removeModel", json!({"alias": "never-added"})).await;
    let changes = ada.ok("admin/changes", json!({})).await;
    let newest = &changes["changes"][0];
    assert_eq!(
        (&newest["by"], &newest["action"], &newest["subject"]),
        (&json!("ada"), &json!("removeModel"), &json!("cheap")),
        "{changes}"
    );
    assert_eq!(
        changes["changes"].as_array().unwrap().len(),
        4,
        "a removal of nothing is not a change: {changes}"
    );
}
