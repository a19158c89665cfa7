//! The races of the verbs with a run's queue (issue 41): an injection with the end of the
//! loop it joins (the message is in that loop or starts the next, never lost, never twice),
//! an abort between a loop's queueing and its claim (the loop never runs a turn), and a
//! second acceptance of one proposal (the first wins, the second is told whose).

use serde_json::{json, Value};

use super::cancel::prompted;
use super::{people, refused, resolution, run_status, PROPOSING};
use crate::support::{user_message, Client};
use rummy::testing::fake_llm::{FakeLlm, Step};

/// How many of the run's prompts are `message`.
async fn times_prompted(client: &mut Client, run: &str, message: &str) -> usize {
    let prompts = client
        .ok(
            "getEntries",
            json!({"run": run, "pattern": "prompt://*", "body": message}),
        )
        .await;
    prompts.as_array().unwrap().len()
}

/// Whether a request after the first asked the model about `message`.
fn model_saw(llm: &FakeLlm, after: usize, message: &str) -> bool {
    llm.requests()
        .iter()
        .skip(after)
        .any(|request| user_message(request).contains(message))
}

/// Waits for the `count`th `run/outcome` of `run` from now, and returns it.
async fn outcomes(client: &mut Client, run: &str, count: usize) -> Value {
    let mut last = Value::Null;
    for _ in 0..count {
        last = client
            .until_notified("run/outcome", |params| params["run"] == json!(run))
            .await;
    }
    last["params"].clone()
}

#[actix_web::test]
async fn a_message_injected_as_the_loop_ends_is_taken_in_once_whichever_comes_first() {
    let llm = FakeLlm::start([
        Step::held("<summarize>first answer</summarize>"),
        Step::reply("<summarize>took the hint</summarize>"),
        Step::reply("<summarize>second answer</summarize>"),
        Step::reply("<summarize>took the other hint</summarize>"),
    ]);
    let (_app, mut clients) = people(&llm, &[("ann", "member"), ("bo", "member")]).await;
    let mut bo = clients.pop().unwrap();
    let mut ann = clients.pop().unwrap();
    let run = ann.start_run("fake").await;
    // The injection first: it joins the loop, which ends without another turn; the loop
    // queued as it ends takes the message in.
    let asking = prompted(&mut ann, &run, "first").await;
    llm.wait_for_requests(1).await;
    let joined = bo
        .ok("run/inject", json!({"run": run, "message": "a hint"}))
        .await;
    assert_eq!(joined["injected"], json!("next_turn"), "{joined}");
    llm.release();
    assert_eq!(ann.reply(&asking).await["result"]["status"], json!(200));
    outcomes(&mut bo, &run, 2).await;
    assert_eq!(times_prompted(&mut ann, &run, "a hint").await, 1);
    assert!(model_saw(&llm, 1, "a hint"), "the message was taken in");
    assert_eq!(llm.requests().len(), 2);
    // The end first: the message runs a loop of its own.
    let answered = ann
        .ok(
            "ask",
            json!({"model": "fake", "prompt": "second", "run": run}),
        )
        .await;
    assert_eq!(answered["status"], json!(200));
    let ran = bo
        .ok("run/inject", json!({"run": run, "message": "another hint"}))
        .await;
    assert_eq!(ran["status"], json!(200), "{ran}");
    assert_eq!(times_prompted(&mut ann, &run, "another hint").await, 1);
    assert!(model_saw(&llm, 3, "another hint"));
    assert_eq!(llm.requests().len(), 4);
}

/// How many times the race of an injection with the loop's end is run.
const INJECT_RACES: usize = 5;

#[actix_web::test]
async fn a_message_injected_while_the_loop_ends_is_never_lost_and_never_taken_twice() {
    let script = (0..INJECT_RACES).flat_map(|_| {
        [
            Step::held("<summarize>answer</summarize>"),
            Step::reply("<summarize>took it</summarize>"),
        ]
    });
    let llm = FakeLlm::start(script);
    let (_app, mut clients) = people(&llm, &[("ann", "member"), ("bo", "member")]).await;
    let mut bo = clients.pop().unwrap();
    let mut ann = clients.pop().unwrap();
    for round in 0..INJECT_RACES {
        let run = ann.start_run("fake").await;
        let asking = prompted(&mut ann, &run, "question").await;
        llm.wait_for_requests(2 * round + 1).await;
        llm.release();
        let injected = bo
            .call("run/inject", json!({"run": run, "message": "hint"}))
            .await;
        assert_eq!(ann.reply(&asking).await["result"]["status"], json!(200));
        if injected["result"]["injected"] == json!("next_turn") {
            // Joined: the loop queued as the joined loop ended takes it in.
            outcomes(&mut bo, &run, 2).await;
        } else {
            assert_eq!(injected["result"]["status"], json!(200), "{injected}");
        }
        assert_eq!(llm.requests().len(), 2 * round + 2, "round {round}");
        assert_eq!(times_prompted(&mut ann, &run, "hint").await, 1);
        assert!(model_saw(&llm, 2 * round + 1, "hint"), "round {round}");
    }
}

#[actix_web::test]
async fn an_abort_between_a_loop_s_queueing_and_its_claim_drops_it_before_any_turn() {
    let llm = FakeLlm::start([Step::held("<summarize>never</summarize>")]);
    let (_app, mut clients) = people(&llm, &[("ann", "member"), ("bo", "member")]).await;
    let mut bo = clients.pop().unwrap();
    let mut ann = clients.pop().unwrap();
    let run = ann.start_run("fake").await;
    let anns = prompted(&mut ann, &run, "ann's question").await;
    llm.wait_for_requests(1).await;
    let bos = prompted(&mut bo, &run, "bo's question").await;
    ann.ok("run/abort", json!({"run": run})).await;
    let dropped = bo.reply(&bos).await;
    assert_eq!(dropped["result"]["status"], json!(499), "{dropped}");
    assert_eq!(ann.reply(&anns).await["result"]["status"], json!(499));
    llm.wait_for_dropped(1).await;
    assert_eq!(llm.requests().len(), 1, "bo's loop never ran a turn");
    assert_eq!(run_status(&mut bo, &run).await, json!(499));
    let loops = bo.ok("getRun", json!({"run": run})).await["loops"].clone();
    assert!(
        loops
            .as_array()
            .unwrap()
            .iter()
            .all(|lp| lp["status"] == json!(499)),
        "{loops}"
    );
}

#[actix_web::test]
async fn a_second_acceptance_of_one_proposal_is_told_who_accepted_it_first() {
    let llm = FakeLlm::start([
        Step::reply(PROPOSING),
        Step::held("<summarize>deployed</summarize>"),
    ]);
    let (_app, mut clients) = people(&llm, &[("ann", "member"), ("bo", "member")]).await;
    let mut bo = clients.pop().unwrap();
    let mut ann = clients.pop().unwrap();
    let (run, path) = ann.act_until_proposal("deploy").await;
    let accepting = ann
        .send("run/resolve", resolution(&run, &path, "accept"))
        .await;
    llm.wait_for_requests(2).await;
    let (code, message, data) =
        refused(&mut bo, "run/resolve", resolution(&run, &path, "accept")).await;
    assert_eq!(code, -32602, "{message}");
    assert_eq!(
        message,
        format!("{path} of run '{run}' is no longer pending: it was accepted by ann")
    );
    assert_eq!(
        data,
        json!({"run": run, "path": path, "status": 200, "action": "accept", "by": "ann"})
    );
    llm.release();
    assert_eq!(ann.reply(&accepting).await["result"]["status"], json!(200));
    assert_eq!(llm.requests().len(), 2, "the second acceptance ran nothing");
}
