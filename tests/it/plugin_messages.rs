//! What a plugin process is told (docs/src/plugins-at-run-time.md), by
//! `tests/plugins/record.py`, which keeps every message: runs by their alias and projects
//! by their name and root, never the store's ids; events never carry the model's words
//! (an `update` or a `summarize`, stored at a path made of its text, is named by scheme,
//! turn and id); and an `entry.recording` filter that answers a changed command refuses it.

use rummy::testing::fake_llm::{FakeLlm, Step};
use serde_json::{json, Value};

use crate::plugin_processes::{entries, program};
use crate::support::{eventually, TestApp};

/// `python3 tests/plugins/record.py` with `args`, as a `RUMMY_PLUGIN_<NAME>` line.
fn record(args: &str) -> String {
    format!("python3 {} {args}", program("record.py"))
}

/// The messages of `method` among those `record.py` kept, their params.
fn of(seen: &Value, method: &str) -> Vec<Value> {
    seen.as_array()
        .unwrap()
        .iter()
        .filter(|pair| pair[0] == method)
        .map(|pair| pair[1].clone())
        .collect()
}

#[actix_web::test]
async fn a_plugin_is_told_runs_by_alias_projects_by_name_and_root_and_no_model_words() {
    let llm = FakeLlm::start([
        Step::reply("<note>hello</note><update>Tool aonly done so far</update>"),
        Step::reply("<summarize>Every quietword counted</summarize>"),
    ]);
    let line = record("");
    let app = TestApp::with_llm(&llm, &[("RUMMY_PLUGIN_RECORD", line.as_str())]).await;
    let (mut client, root) = app.client_in_project("told").await;
    let root = std::fs::canonicalize(root).unwrap().display().to_string();
    let result = client
        .ok("ask", json!({"model": "fake", "prompt": "note it"}))
        .await;
    assert_eq!(result["status"], json!(200), "{result}");
    let alias = result["run"].as_str().unwrap().to_owned();
    assert_eq!(
        entries(&app, &mut client, &alias, "note://*").await[0].1,
        200,
        "a filter that answers the command unchanged refuses nothing"
    );
    let seen = eventually("the loop's end told", async || {
        let seen = client.ok("record/seen", json!({})).await;
        let events = of(&seen, "event");
        let ended = events.iter().any(|event| event["hook"] == "ask.completed");
        ended.then_some(seen)
    })
    .await;
    let place = json!({"run": alias, "project": "told", "root": root});
    let told: Vec<Value> = ["tool/call", "section/render", "filter/apply", "event"]
        .iter()
        .flat_map(|method| of(&seen, method))
        .collect();
    for params in &told {
        let context = params.get("context").unwrap_or(params);
        for key in ["run", "project", "root"] {
            if let Some(value) = context.get(key).filter(|value| !value.is_null()) {
                assert_eq!(value, &place[key], "{key} in {params}");
            }
        }
    }
    let call = &of(&seen, "tool/call")[0];
    assert_eq!(
        (&call["run"], &call["project"], &call["root"], &call["body"]),
        (
            &place["run"],
            &place["project"],
            &place["root"],
            &json!("hello")
        )
    );
    let section = &of(&seen, "section/render")[0];
    assert_eq!(
        (&section["run"], &section["root"]),
        (&place["run"], &place["root"])
    );
    let events = of(&seen, "event");
    let turn_started = events
        .iter()
        .find(|event| event["hook"] == "turn.started")
        .unwrap();
    assert_eq!(
        (
            &turn_started["run"],
            &turn_started["project"],
            &turn_started["root"]
        ),
        (&place["run"], &place["project"], &place["root"])
    );

    let created = |scheme: &str| {
        events
            .iter()
            .find(|event| event["hook"] == "entry.created" && event["scheme"] == scheme)
            .cloned()
            .unwrap_or(Value::Null)
    };
    for scheme in ["update", "summarize"] {
        let event = created(scheme);
        assert!(event["id"].is_i64(), "{scheme}: {event}");
        assert!(event["turn"].is_i64(), "{scheme}: {event}");
        assert!(event.get("path").is_none(), "{scheme}: {event}");
    }
    let changed = events
        .iter()
        .filter(|event| event["hook"] == "entry.changed" && event["scheme"] == "update")
        .collect::<Vec<_>>();
    assert!(!changed.is_empty(), "{events:?}");
    assert!(changed.iter().all(|event| event.get("path").is_none()));
    let note = events
        .iter()
        .find(|event| event["hook"] == "entry.created" && event.get("path").is_some())
        .unwrap();
    assert_eq!(note["path"], "note://turn_1/hello");
    for event in &events {
        let text = event.to_string();
        assert!(
            !text.contains("aonly") && !text.contains("quietword"),
            "an event carries the model's words: {text}"
        );
    }
}

#[actix_web::test]
async fn an_entry_recording_filter_that_rewrites_a_command_refuses_it() {
    let llm = FakeLlm::start([
        Step::reply("<sh>rm -rf build</sh><update>cleaning</update>"),
        Step::reply("<summarize>could not clean</summarize>"),
    ]);
    let line = record("--rewrite");
    let app = TestApp::with_llm(&llm, &[("RUMMY_PLUGIN_RECORD", line.as_str())]).await;
    let (mut client, _) = app.client_in_project("rewrites").await;
    let result = client
        .ok("act", json!({"model": "fake", "prompt": "clean up"}))
        .await;
    assert_eq!(result["status"], json!(200), "{result}");
    let run = result["run"].as_str().unwrap();
    let refused = entries(&app, &mut client, run, "sh://*").await;
    assert_eq!(refused.len(), 1, "{refused:?}");
    assert_eq!(refused[0].1, 403, "{refused:?}");
    assert_eq!(
        refused[0].2,
        "The plugin record refused this command: it answered a changed command, which a \
         plugin cannot make."
    );
    assert_eq!(llm.requests().len(), 2, "the loop went on");
}
