//! What resolving the last proposal does (PROTOCOL Part A.6, the seed SPEC's table):
//! a rejection stops the run; accepting after `<summarize>` completes it without asking the
//! model again; accepting after `<update>` resumes it, and so does an error. Every case counts the LLM calls: the fake answers 500 to any call beyond
//! its script, which would also fail the run.

use serde_json::json;

use super::alias;
use crate::support::{user_message, TestApp};
use rummy::testing::fake_llm::{FakeLlm, Step, WhenExhausted};

/// What the model said with its proposal, how the client resolves it, what follows.
struct Case {
    reply: &'static str,
    action: &'static str,
    resumes: bool,
}

const CASES: [Case; 5] = [
    Case {
        reply: "<sh>make</sh><summarize>built, once make runs</summarize>",
        action: "accept",
        resumes: false,
    },
    Case {
        reply: "<sh>make</sh><update>building</update>",
        action: "accept",
        resumes: true,
    },
    Case {
        reply: "<sh>make</sh><update>building</update>",
        action: "reject",
        resumes: false,
    },
    Case {
        reply: "<sh>make</sh><summarize>built, once make runs</summarize>",
        action: "reject",
        resumes: false,
    },
    Case {
        reply: "<sh>make</sh><update>building</update>",
        action: "error",
        resumes: true,
    },
];

#[actix_web::test]
async fn resolving_the_last_proposal_completes_stops_or_resumes_the_run() {
    for case in CASES {
        assert_resolution(case).await;
    }
}

/// The seed table's last row: accept after neither `<update>` nor `<summarize>` → the run
/// goes on ("running — healer decides").
#[actix_web::test]
async fn accepting_after_no_status_resumes_the_run() {
    assert_resolution(Case {
        reply: "<sh>make</sh>",
        action: "accept",
        resumes: true,
    })
    .await;
}

async fn assert_resolution(case: Case) {
    let what = format!("{} after {:?}", case.action, case.reply);
    let llm = FakeLlm::builder([
        Step::reply(case.reply),
        Step::reply("<summarize>make finished</summarize>"),
    ])
    .when_exhausted(WhenExhausted::Error(500))
    .start();
    let app = TestApp::with_llm(&llm, &[]).await;
    let (mut client, _) = app.client_in_project("resolve").await;
    let proposed = client
        .ok("act", json!({"model": "fake", "prompt": "build it"}))
        .await;
    assert_eq!(proposed["status"], json!(202), "{what}: {proposed}");
    let run = alias(&proposed);
    let path = proposed["proposed"][0]["path"].clone();
    let resolved = client
        .ok(
            "run/resolve",
            json!({"run": run, "resolution": {"path": path, "action": case.action, "output": "make: ok"}}),
        )
        .await;
    let reason = if case.action == "reject" {
        "rejected"
    } else {
        "done"
    };
    assert_eq!(
        resolved,
        json!({"run": run, "status": 200, "reason": reason}),
        "{what}"
    );
    let requests = llm.requests();
    if case.resumes {
        assert_eq!(requests.len(), 2, "{what}: the model goes on");
        assert!(
            user_message(&requests[1]).contains("make: ok"),
            "{what}: the model sees the output"
        );
    } else {
        assert_eq!(requests.len(), 1, "{what}: the model is not called again");
    }
    let detail = client.ok("getRun", json!({"run": run})).await;
    assert_eq!(detail["status"], json!(200), "{what}");
}
