//! The cancel races and a second acceptance across two instances on one PostgreSQL
//! database (`races.rs`'s `two_instances`): a `run/cancel` sent to the instance that does not
//! run the loop is executed by the one that does, whoever comes first wins, the other is
//! answered clearly, and nothing revives.

use serde_json::json;

use super::cancel::prompted;
use super::{refused, resolution, run_status, two_instances, PROPOSING};
use rummy::testing::fake_llm::Step;

#[actix_web::test]
#[ignore = "needs PostgreSQL: RUMMY_TEST_DATABASE_URL"]
async fn across_instances_a_cancel_drops_the_prompt_queued_from_one_and_the_other_s_loop_goes_on() {
    let mut two = two_instances(
        vec![Step::held("<summarize>a's answer</summarize>")],
        vec![],
    )
    .await;
    let run = two.a.start_run("fake").await;
    let a_asks = prompted(&mut two.a, &run, "a's question").await;
    two.a_llm.wait_for_requests(1).await;
    let b_asks = prompted(&mut two.b, &run, "b's question").await;
    assert_eq!(
        two.b.ok("run/cancel", json!({"run": run})).await,
        json!({"run": run, "cancelled": [2], "withdrawn": []})
    );
    let dropped = two.b.reply(&b_asks).await;
    assert_eq!(dropped["result"]["status"], json!(499), "{dropped}");
    two.a_llm.release();
    let answered = two.a.reply(&a_asks).await;
    assert_eq!(answered["result"]["status"], json!(200), "{answered}");
    assert!(two.b_llm.requests().is_empty(), "b's prompt never ran");
    assert_eq!(two.a_llm.requests().len(), 1);
}

#[actix_web::test]
#[ignore = "needs PostgreSQL: RUMMY_TEST_DATABASE_URL"]
async fn across_instances_a_cancel_sent_to_one_stops_the_loop_running_on_the_other_and_an_abort_after_it_finds_it_stopped(
) {
    let mut two = two_instances(vec![Step::Hang], vec![]).await;
    let run = two.a.start_run("fake").await;
    let a_asks = prompted(&mut two.a, &run, "a's question").await;
    two.a_llm.wait_for_requests(1).await;
    assert_eq!(
        two.b.ok("run/cancel", json!({"run": run})).await["cancelled"],
        json!([]),
        "nothing of b's connection runs"
    );
    assert_eq!(
        two.b.ok("run/cancel", json!({"run": run, "loop": 1})).await,
        json!({"run": run, "cancelled": [1], "withdrawn": []})
    );
    let stopped = two.a.reply(&a_asks).await;
    assert_eq!(stopped["result"]["status"], json!(499), "{stopped}");
    two.a_llm.wait_for_dropped(1).await;
    two.a.ok("run/abort", json!({"run": run})).await;
    assert_eq!(
        two.a.ok("run/cancel", json!({"run": run})).await["cancelled"],
        json!([])
    );
    assert_eq!(run_status(&mut two.b, &run).await, json!(499));
    assert_eq!(two.a_llm.requests().len(), 1, "nothing revived the run");
    assert!(two.b_llm.requests().is_empty());
}

#[actix_web::test]
#[ignore = "needs PostgreSQL: RUMMY_TEST_DATABASE_URL"]
async fn across_instances_a_cancel_first_withdraws_the_proposal_the_other_instance_accepts() {
    let mut two = two_instances(vec![Step::reply(PROPOSING)], vec![]).await;
    let (run, path) = two.a.act_until_proposal("deploy").await;
    assert_eq!(
        two.b.ok("run/cancel", json!({"run": run, "loop": 1})).await,
        json!({"run": run, "cancelled": [1], "withdrawn": [path]})
    );
    for client in [&mut two.a, &mut two.b] {
        let (code, message, data) =
            refused(client, "run/resolve", resolution(&run, &path, "accept")).await;
        assert_eq!(code, -32602, "{message}");
        assert!(message.ends_with("was cancelled"), "{message}");
        assert_eq!(
            data,
            json!({"run": run, "path": path, "status": 499, "action": "cancel", "by": null})
        );
    }
    assert_eq!(run_status(&mut two.a, &run).await, json!(499));
    assert_eq!(two.a_llm.requests().len(), 1);
    assert!(two.b_llm.requests().is_empty(), "nothing revived the run");
}

#[actix_web::test]
#[ignore = "needs PostgreSQL: RUMMY_TEST_DATABASE_URL"]
async fn across_instances_a_resolution_first_resumes_the_run_and_the_resolver_s_cancel_stops_it() {
    let mut two = two_instances(vec![Step::reply(PROPOSING)], vec![Step::Hang]).await;
    let (run, path) = two.a.act_until_proposal("deploy").await;
    let accepting = two
        .b
        .send("run/resolve", resolution(&run, &path, "accept"))
        .await;
    two.b_llm.wait_for_requests(1).await;
    assert_eq!(
        two.a.ok("run/cancel", json!({"run": run})).await["cancelled"],
        json!([]),
        "the loop that goes on is b's: a's proposal was resolved"
    );
    assert_eq!(
        two.b.ok("run/cancel", json!({"run": run})).await["cancelled"],
        json!([2])
    );
    let reply = two.b.reply(&accepting).await;
    assert_eq!(reply["result"]["status"], json!(499), "{reply}");
    let (code, message, data) =
        refused(&mut two.a, "run/resolve", resolution(&run, &path, "reject")).await;
    assert_eq!(code, -32602, "{message}");
    assert!(message.ends_with("it was accepted"), "{message}");
    assert_eq!(data["action"], json!("accept"));
    assert_eq!(run_status(&mut two.a, &run).await, json!(499));
}

#[actix_web::test]
#[ignore = "needs PostgreSQL: RUMMY_TEST_DATABASE_URL"]
async fn across_instances_a_cancel_after_the_loop_ended_changes_nothing() {
    let mut two = two_instances(vec![Step::reply("<summarize>done</summarize>")], vec![]).await;
    let run = two.a.start_run("fake").await;
    let answered = two
        .a
        .ok(
            "ask",
            json!({"model": "fake", "prompt": "question", "run": run}),
        )
        .await;
    assert_eq!(answered["status"], json!(200));
    assert_eq!(
        two.b.ok("run/cancel", json!({"run": run, "loop": 1})).await,
        json!({"run": run, "cancelled": [], "withdrawn": []})
    );
    assert_eq!(run_status(&mut two.b, &run).await, json!(200));
}

#[actix_web::test]
#[ignore = "needs PostgreSQL: RUMMY_TEST_DATABASE_URL"]
async fn across_instances_a_second_acceptance_is_told_the_first_won_with_its_data() {
    let mut two = two_instances(
        vec![
            Step::reply(PROPOSING),
            Step::held("<summarize>deployed</summarize>"),
        ],
        vec![],
    )
    .await;
    let (run, path) = two.a.act_until_proposal("deploy").await;
    let accepting = two
        .a
        .send("run/resolve", resolution(&run, &path, "accept"))
        .await;
    two.a_llm.wait_for_requests(2).await;
    let (code, message, data) =
        refused(&mut two.b, "run/resolve", resolution(&run, &path, "accept")).await;
    assert_eq!(code, -32602, "{message}");
    assert_eq!(
        message,
        format!("{path} of run '{run}' is no longer pending: it was accepted")
    );
    assert_eq!(
        data,
        json!({"run": run, "path": path, "status": 200, "action": "accept", "by": null})
    );
    two.a_llm.release();
    let reply = two.a.reply(&accepting).await;
    assert_eq!(reply["result"]["status"], json!(200), "{reply}");
    assert!(
        two.b_llm.requests().is_empty(),
        "the second acceptance ran nothing"
    );
    assert_eq!(two.a_llm.requests().len(), 2);
}

#[actix_web::test]
#[ignore = "needs PostgreSQL: RUMMY_TEST_DATABASE_URL"]
async fn across_instances_an_abort_first_leaves_a_cancel_sent_to_the_other_nothing_to_stop() {
    let mut two = two_instances(vec![Step::Hang], vec![]).await;
    let run = two.a.start_run("fake").await;
    let a_asks = prompted(&mut two.a, &run, "a's question").await;
    two.a_llm.wait_for_requests(1).await;
    two.b.ok("run/abort", json!({"run": run})).await;
    let stopped = two.a.reply(&a_asks).await;
    assert_eq!(stopped["result"]["status"], json!(499), "{stopped}");
    assert_eq!(
        two.b.ok("run/cancel", json!({"run": run, "loop": 1})).await,
        json!({"run": run, "cancelled": [], "withdrawn": []})
    );
    assert_eq!(run_status(&mut two.a, &run).await, json!(499));
    assert_eq!(two.a_llm.requests().len(), 1, "nothing revived the run");
    assert!(two.b_llm.requests().is_empty());
}

/// Rounds of the race sent at once, so that both orders and the interleavings between them
/// come up (the acceptance's loop claimed on b while a's abort settles among them).
const AT_ONCE_ROUNDS: usize = 6;

#[actix_web::test]
#[ignore = "needs PostgreSQL: RUMMY_TEST_DATABASE_URL"]
async fn across_instances_an_abort_and_an_acceptance_sent_at_once_leave_one_winner_and_no_revival()
{
    let mut two = two_instances(
        (0..AT_ONCE_ROUNDS)
            .map(|_| Step::reply(PROPOSING))
            .collect(),
        (0..AT_ONCE_ROUNDS).map(|_| Step::Hang).collect(),
    )
    .await;
    for round in 0..AT_ONCE_ROUNDS {
        let (run, path) = two.a.act_until_proposal("deploy").await;
        let aborting = two.a.send("run/abort", json!({"run": run})).await;
        let accepting = two
            .b
            .send("run/resolve", resolution(&run, &path, "accept"))
            .await;
        let aborted = two.a.reply(&aborting).await;
        assert_eq!(aborted["result"], json!({"status": "ok"}), "{aborted}");
        let accepted = two.b.reply(&accepting).await;
        let winner = match accepted.get("error") {
            Some(error) => {
                assert_eq!(error["code"], json!(-32602), "round {round}: {accepted}");
                assert_eq!(error["data"]["action"], json!("abort"), "{accepted}");
                "abort"
            }
            None => {
                assert_eq!(
                    accepted["result"]["status"],
                    json!(499),
                    "round {round}: the abort stopped the resumed loop: {accepted}"
                );
                "accept"
            }
        };
        for client in [&mut two.a, &mut two.b] {
            assert_eq!(run_status(client, &run).await, json!(499), "round {round}");
            let (code, message, data) =
                refused(client, "run/resolve", resolution(&run, &path, "reject")).await;
            assert_eq!(code, -32602, "{message}");
            assert_eq!(data["action"], json!(winner), "round {round}: {message}");
        }
    }
    assert_eq!(two.a_llm.requests().len(), AT_ONCE_ROUNDS);
}
