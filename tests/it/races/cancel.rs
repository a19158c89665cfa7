//! `run/cancel` (issue 41): a person stops their own work on a run — the prompt they queued,
//! the loop they run, the proposals their loop waits on — while what others queued goes on;
//! another's loop only for whoever may abort the run. Its races with abort, resolve and the
//! loop's own end, both orders, from two clients: the first wins, the other gets a clear
//! answer, nothing revives. Held deterministically by the scripted model; the one race that
//! only timing decides runs several times, its invariant checked each time.

use serde_json::{json, Value};

use super::{people, refused, resolution, run_status, PROPOSING};
use crate::support::{Client, TestApp};
use rummy::testing::fake_llm::{FakeLlm, Step};

/// Sends `ask` of `prompt` on `run` and waits until its loop is queued (its `run/action`,
/// told in the unit of work that queues it); the request's id.
pub(super) async fn prompted(client: &mut Client, run: &str, prompt: &str) -> Value {
    let id = client
        .send(
            "ask",
            json!({"model": "fake", "prompt": prompt, "run": run}),
        )
        .await;
    client
        .until_notified("run/action", |params| {
            params["action"] == json!("prompt") && params["message"] == json!(prompt)
        })
        .await;
    id
}

/// The `run/action` of a cancel `client` is told of next, without its `seq`.
async fn told_cancel(client: &mut Client) -> Value {
    let mut told = client
        .until_notified("run/action", |params| params["action"] == json!("cancel"))
        .await["params"]
        .clone();
    told.as_object_mut().unwrap().remove("seq");
    told
}

fn ended(reply: &Value, status: i64) {
    assert_eq!(reply["result"]["status"], json!(status), "{reply}");
}

/// ann and bo, members, on one run that ann started.
async fn ann_and_bo(llm: &FakeLlm) -> (TestApp, Client, Client, String) {
    let (app, mut clients) = people(llm, &[("ann", "member"), ("bo", "member")]).await;
    let bo = clients.pop().unwrap();
    let mut ann = clients.pop().unwrap();
    let run = ann.start_run("fake").await;
    (app, ann, bo, run)
}

#[actix_web::test]
async fn a_cancel_drops_the_caller_s_prompt_queued_behind_another_s_which_goes_on() {
    let llm = FakeLlm::start([Step::held("<summarize>ann's answer</summarize>")]);
    let (_app, mut ann, mut bo, run) = ann_and_bo(&llm).await;
    let anns = prompted(&mut ann, &run, "ann's question").await;
    llm.wait_for_requests(1).await;
    let bos = prompted(&mut bo, &run, "bo's question").await;
    let cancelled = bo.ok("run/cancel", json!({"run": run})).await;
    assert_eq!(
        cancelled,
        json!({"run": run, "cancelled": [2], "withdrawn": []})
    );
    let dropped = bo.reply(&bos).await;
    ended(&dropped, 499);
    assert_eq!(dropped["result"]["reason"], json!("aborted"));
    assert_eq!(
        told_cancel(&mut ann).await,
        json!({"run": run, "action": "cancel", "by": "bo", "cancelled": [2]})
    );
    llm.release();
    ended(&ann.reply(&anns).await, 200);
    assert_eq!(llm.requests().len(), 1, "bo's prompt never ran");
    assert_eq!(run_status(&mut ann, &run).await, json!(200));
}

#[actix_web::test]
async fn a_cancel_stops_the_caller_s_running_loop_and_the_run_goes_on_with_the_next_queued() {
    let llm = FakeLlm::start([
        Step::Hang,
        Step::reply("<summarize>bo's answer</summarize>"),
    ]);
    let (_app, mut ann, mut bo, run) = ann_and_bo(&llm).await;
    let anns = prompted(&mut ann, &run, "ann's question").await;
    llm.wait_for_requests(1).await;
    let bos = prompted(&mut bo, &run, "bo's question").await;
    let cancelled = ann.ok("run/cancel", json!({"run": run})).await;
    assert_eq!(
        cancelled,
        json!({"run": run, "cancelled": [1], "withdrawn": []})
    );
    ended(&ann.reply(&anns).await, 499);
    ended(&bo.reply(&bos).await, 200);
    let requests = llm.requests();
    assert_eq!(requests.len(), 2);
    assert!(crate::support::user_message(&requests[1]).contains("bo's question"));
    assert_eq!(run_status(&mut bo, &run).await, json!(200));
}

#[actix_web::test]
async fn a_cancel_withdraws_what_the_caller_s_loop_proposed_and_a_resolution_after_it_is_told_so() {
    let llm = FakeLlm::start([Step::reply(PROPOSING)]);
    let (_app, mut ann, mut bo, run) = ann_and_bo(&llm).await;
    let proposed = ann
        .ok(
            "act",
            json!({"model": "fake", "prompt": "deploy", "run": run}),
        )
        .await;
    assert_eq!(proposed["status"], json!(202), "{proposed}");
    let path = proposed["proposed"][0]["path"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(
        bo.ok("run/cancel", json!({"run": run})).await,
        json!({"run": run, "cancelled": [], "withdrawn": []}),
        "nothing of bo's is in flight: a clear answer, nothing stopped"
    );
    assert_eq!(
        ann.ok("run/cancel", json!({"run": run})).await,
        json!({"run": run, "cancelled": [1], "withdrawn": [path]})
    );
    let (code, message, data) =
        refused(&mut bo, "run/resolve", resolution(&run, &path, "accept")).await;
    assert_eq!(code, -32602, "{message}");
    assert_eq!(
        message,
        format!(
            "{path} of run '{run}' is no longer pending: the loop that proposed it was cancelled by ann"
        )
    );
    assert_eq!(
        data,
        json!({"run": run, "path": path, "status": 499, "action": "cancel", "by": "ann"})
    );
    assert_eq!(run_status(&mut bo, &run).await, json!(499));
    assert_eq!(bo.statuses(&run, "sh://**").await, vec![(path, 499)]);
    assert_eq!(llm.requests().len(), 1, "nothing revived the run");
}

#[actix_web::test]
async fn a_cancel_after_the_caller_s_acceptance_stops_the_loop_it_queued() {
    let llm = FakeLlm::start([Step::reply(PROPOSING), Step::Hang]);
    let (_app, mut ann, mut bo, run) = ann_and_bo(&llm).await;
    let (_, path) = {
        let proposed = ann
            .ok(
                "act",
                json!({"model": "fake", "prompt": "deploy", "run": run}),
            )
            .await;
        let path = proposed["proposed"][0]["path"]
            .as_str()
            .unwrap()
            .to_string();
        (proposed, path)
    };
    let accepting = ann
        .send("run/resolve", resolution(&run, &path, "accept"))
        .await;
    llm.wait_for_requests(2).await;
    assert_eq!(
        bo.ok("run/cancel", json!({"run": run})).await["cancelled"],
        json!([]),
        "the loop that goes on is ann's, not bo's"
    );
    assert_eq!(
        ann.ok("run/cancel", json!({"run": run})).await,
        json!({"run": run, "cancelled": [2], "withdrawn": []})
    );
    ended(&ann.reply(&accepting).await, 499);
    llm.wait_for_dropped(1).await;
    let (code, message, data) =
        refused(&mut bo, "run/resolve", resolution(&run, &path, "reject")).await;
    assert_eq!(code, -32602, "{message}");
    assert!(message.ends_with("it was accepted by ann"), "{message}");
    assert_eq!(data["status"], json!(200));
    assert_eq!(run_status(&mut bo, &run).await, json!(499));
}

#[actix_web::test]
async fn another_s_loop_is_cancelled_only_by_someone_who_may_abort_the_run() {
    let llm = FakeLlm::start([Step::Hang]);
    let (_app, mut clients) = people(
        &llm,
        &[("ann", "member"), ("bo", "member"), ("cy", "viewer")],
    )
    .await;
    let mut cy = clients.pop().unwrap();
    let mut bo = clients.pop().unwrap();
    let mut ann = clients.pop().unwrap();
    let run = ann.start_run("fake").await;
    let anns = prompted(&mut ann, &run, "ann's question").await;
    llm.wait_for_requests(1).await;
    let (code, message) = cy.err("run/cancel", json!({"run": run, "loop": 1})).await;
    assert_eq!(code, -32005, "{message}");
    assert_eq!(
        message,
        format!(
            "loop 1 of run '{run}' was started by ann; only someone who may abort the run \
             cancels another's loop"
        )
    );
    assert_eq!(
        cy.ok("run/cancel", json!({"run": run})).await["cancelled"],
        json!([]),
        "a viewer may cancel what they started, which is nothing"
    );
    let (code, message) = bo.err("run/cancel", json!({"run": run, "loop": 7})).await;
    assert_eq!(
        (code, message),
        (-32602, format!("run '{run}' has no loop 7"))
    );
    assert_eq!(
        bo.ok("run/cancel", json!({"run": run, "loop": 1})).await,
        json!({"run": run, "cancelled": [1], "withdrawn": []})
    );
    ended(&ann.reply(&anns).await, 499);
    assert_eq!(
        told_cancel(&mut ann).await,
        json!({"run": run, "action": "cancel", "by": "bo", "cancelled": [1]})
    );
}

#[actix_web::test]
async fn on_a_server_without_people_a_connection_cancels_the_loops_it_started() {
    let llm = FakeLlm::start([
        Step::Hang,
        Step::reply("<summarize>the other's answer</summarize>"),
    ]);
    let app = TestApp::with_llm(&llm, &[]).await;
    let (mut mine, root) = app.client_in_project("alone").await;
    let mut other = app.client().await;
    other.init("alone", &root).await;
    let run = mine.start_run("fake").await;
    let my_ask = prompted(&mut mine, &run, "my question").await;
    llm.wait_for_requests(1).await;
    let others = prompted(&mut other, &run, "the other question").await;
    assert_eq!(
        mine.ok("run/cancel", json!({"run": run})).await,
        json!({"run": run, "cancelled": [1], "withdrawn": []})
    );
    ended(&mine.reply(&my_ask).await, 499);
    ended(&other.reply(&others).await, 200);
    assert_eq!(llm.requests().len(), 2, "the other connection's prompt ran");
}

#[actix_web::test]
async fn cancel_and_abort_race_the_first_wins_and_nothing_revives() {
    let llm = FakeLlm::start([Step::Hang, Step::Hang, Step::Hang]);
    let (_app, mut ann, mut bo, run) = ann_and_bo(&llm).await;
    // The abort first: ann's loop is stopped by it, her cancel finds nothing of hers.
    let anns = prompted(&mut ann, &run, "first question").await;
    llm.wait_for_requests(1).await;
    assert_eq!(
        bo.ok("run/abort", json!({"run": run})).await,
        json!({"status": "ok"})
    );
    ended(&ann.reply(&anns).await, 499);
    assert_eq!(
        ann.ok("run/cancel", json!({"run": run})).await["cancelled"],
        json!([])
    );
    assert_eq!(run_status(&mut ann, &run).await, json!(499));
    // The cancel first: ann's loop stops, bo's queued one runs; an abort then stops that.
    let anns = prompted(&mut ann, &run, "second question").await;
    llm.wait_for_requests(2).await;
    let bos = prompted(&mut bo, &run, "bo's question").await;
    assert_eq!(
        ann.ok("run/cancel", json!({"run": run})).await["cancelled"],
        json!([2])
    );
    ended(&ann.reply(&anns).await, 499);
    llm.wait_for_requests(3).await;
    ann.ok("run/abort", json!({"run": run})).await;
    ended(&bo.reply(&bos).await, 499);
    assert_eq!(run_status(&mut bo, &run).await, json!(499));
    assert_eq!(llm.requests().len(), 3, "nothing ran after the abort");
}

#[actix_web::test]
async fn a_cancel_after_the_loop_ended_changes_nothing_and_one_before_stops_it() {
    let llm = FakeLlm::start([
        Step::reply("<summarize>done</summarize>"),
        Step::held("<summarize>too late</summarize>"),
    ]);
    let (_app, mut ann, _bo, run) = ann_and_bo(&llm).await;
    let answered = ann
        .ok(
            "ask",
            json!({"model": "fake", "prompt": "first", "run": run}),
        )
        .await;
    assert_eq!(answered["status"], json!(200));
    assert_eq!(
        ann.ok("run/cancel", json!({"run": run})).await,
        json!({"run": run, "cancelled": [], "withdrawn": []})
    );
    assert_eq!(run_status(&mut ann, &run).await, json!(200));
    let asking = prompted(&mut ann, &run, "second").await;
    llm.wait_for_requests(2).await;
    assert_eq!(
        ann.ok("run/cancel", json!({"run": run})).await["cancelled"],
        json!([2])
    );
    ended(&ann.reply(&asking).await, 499);
    llm.release();
    llm.wait_for_dropped(1).await;
    assert_eq!(run_status(&mut ann, &run).await, json!(499));
}

/// How many times the race of a cancel with the loop's own end is run.
const END_RACES: usize = 6;

#[actix_web::test]
async fn a_cancel_racing_the_loop_s_end_either_stops_it_or_finds_it_ended_never_both() {
    let llm = FakeLlm::start((0..END_RACES).map(|_| Step::held("<summarize>done</summarize>")));
    let (_app, mut ann, _bo, _) = ann_and_bo(&llm).await;
    for round in 0..END_RACES {
        let run = ann.start_run("fake").await;
        let asking = prompted(&mut ann, &run, "question").await;
        llm.wait_for_requests(round + 1).await;
        llm.release();
        let cancelling = ann.send("run/cancel", json!({"run": run})).await;
        let cancelled = ann.reply(&cancelling).await["result"]["cancelled"].clone();
        let status = ann.reply(&asking).await["result"]["status"].clone();
        let stored = run_status(&mut ann, &run).await;
        match status.as_i64() {
            Some(200) => assert_eq!((cancelled, stored), (json!([]), json!(200))),
            Some(499) => assert_eq!((cancelled, stored), (json!([1]), json!(499))),
            other => panic!("round {round}: the ask ended {other:?}"),
        }
    }
}

#[actix_web::test]
async fn a_cancel_while_the_caller_s_accepted_command_runs_on_the_server_stops_the_run_after_it() {
    let llm = FakeLlm::start([Step::reply(format!(
        "<sh>{}</sh><update>running</update>",
        super::WAITING_COMMAND
    ))]);
    let app = super::commands_server(&llm).await;
    let (mut ann, root) = app.client_in_project("commands").await;
    let (run, path) = ann.act_until_proposal("run it").await;
    let accepting = ann
        .send("run/resolve", resolution(&run, &path, "accept"))
        .await;
    ann.until_notified("run/output", |params| params["text"] == json!("waiting\n"))
        .await;
    assert_eq!(
        ann.ok("run/cancel", json!({"run": run})).await,
        json!({"run": run, "cancelled": [1], "withdrawn": []}),
        "a proposal being carried out is not withdrawn"
    );
    assert_eq!(
        run_status(&mut ann, &run).await,
        json!(499),
        "the run waits for nothing more"
    );
    std::fs::write(root.join("go"), "").unwrap();
    let accepted = ann.reply(&accepting).await;
    ended(&accepted, 499);
    assert_eq!(super::runs_of_the_command(&root), 1);
    assert_eq!(ann.statuses(&run, "sh://**").await, vec![(path, 200)]);
    assert_eq!(run_status(&mut ann, &run).await, json!(499));
    assert_eq!(llm.requests().len(), 1, "the run did not resume");
}
