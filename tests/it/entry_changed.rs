//! `entry.changed`: every change a committed unit of work made to a run's entries reaches the
//! observers once, in order, whoever made it (the model's commands, a client's edit); a
//! command that fails and is rolled back reports nothing.

use std::sync::{Arc, Mutex};

use rummy::plugins::events::{Event, Hook, Observer};
use rummy::plugins::{Plugin, Registrar};
use serde_json::json;

use crate::support::TestApp;
use rummy::testing::fake_llm::{FakeLlm, Step};

type Changes = Arc<Mutex<Vec<(String, &'static str)>>>;

/// Records `(path, changeType)` of each `entry.changed`.
struct ChangeLog(Changes);

impl Plugin for ChangeLog {
    fn name(&self) -> &'static str {
        "change_log"
    }

    fn register(self: Box<Self>, registrar: &mut Registrar<'_>) {
        registrar.observer(*self);
    }
}

impl Observer for ChangeLog {
    fn hooks(&self) -> &[Hook] {
        &[Hook::EntryChanged]
    }

    fn observe(&self, event: &Event<'_>) {
        if let Event::EntryChanged { entry, change, .. } = event {
            self.0
                .lock()
                .unwrap()
                .push((entry.path.to_owned(), change.as_str()));
        }
    }
}

/// The changes seen to paths starting with `prefix`, emptying the log.
fn drain(log: &Changes, prefix: &str) -> Vec<(String, &'static str)> {
    let mut log = log.lock().unwrap();
    let changes = log.drain(..).filter(|(path, _)| path.starts_with(prefix));
    changes.collect()
}

fn change(path: &str, change: &'static str) -> (String, &'static str) {
    (path.to_owned(), change)
}

#[actix_web::test]
async fn a_loop_and_a_client_change_entries_and_each_change_is_observed_once() {
    let llm = FakeLlm::start([
        Step::reply("<set path=\"known://fact\">the sky is blue</set><update>noted</update>"),
        Step::reply("<get path=\"known://fact\"/><update>reading</update>"),
        Step::reply("<set path=\"known://fact\" fidelity=\"archive\"/><update>archived</update>"),
        Step::reply("<rm path=\"known://fact\"/><summarize>done</summarize>"),
    ]);
    let log = Changes::default();
    let observer = ChangeLog(Arc::clone(&log));
    let app = TestApp::with_llm_and_tools(&llm, &[], |plugins| plugins.plugin(observer)).await;
    let (mut client, _) = app.client_in_project("changes").await;
    let result = client
        .ok("act", json!({"model": "fake", "prompt": "keep a fact"}))
        .await;
    assert_eq!(result["status"], json!(200), "{result}");
    let run = result["run"].as_str().unwrap().to_owned();
    assert_eq!(
        drain(&log, "known://"),
        [
            change("known://fact", "upsert"),
            change("known://fact", "promote"),
            change("known://fact", "demote"),
            change("known://fact", "remove"),
        ]
    );
    client
        .ok(
            "set",
            json!({"run": run, "path": "known://note", "body": "x"}),
        )
        .await;
    assert_eq!(drain(&log, "known://"), [change("known://note", "upsert")]);
    let (code, _) = client
        .err(
            "set",
            json!({"run": run, "path": "/etc/passwd", "body": "x"}),
        )
        .await;
    assert_eq!(code, -32602);
    assert_eq!(drain(&log, ""), [], "a refused command changes nothing");
}
