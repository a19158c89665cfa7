//! Spend caps through the public protocol, with the scripted LLM reporting usage and the
//! server's spending clock fixed by the test: a run's cap pauses its loop before the call past
//! it (402, `usage/capReached`; what pausing keeps and what resumes it is `paused`) after one
//! 80 % warning; a person's daily
//! cap refuses a new `ask` with -32011 until the next UTC day; a project's cap counts every
//! person's calls; 20 concurrent loops pass a cap by at most the calls in flight; a price
//! changed mid-day charges later calls only; bad caps refuse the start naming the key (and
//! in the users file the person and the line), and a run's with -32602 saying what is wrong; two
//! instances on one PostgreSQL database hold one cap. No refused call reaches the model.

mod paused;

use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use rummy::hash_token;
use rummy::testing::fake_llm::{FakeLlm, Reply, Step, Usage, WhenExhausted};
use rummy::testing::ScratchDatabase;
use serde_json::{json, Value};

use crate::process::ServerProcess;
use crate::support::{eventually, project_root, try_settings, Client, TestApp, TEST_CONFIG_DIR};

/// The code of an `ask`/`act` refused at a cap.
const CAP_REACHED: i64 = -32011;

/// A reply reporting 90 prompt and 10 completion tokens (100 in all) and `cost` dollars.
fn costing(content: &str, cost: f64) -> Step {
    Step::Reply(Reply::new(content).with_usage(Usage {
        prompt_tokens: 90,
        cached_tokens: 0,
        completion_tokens: 10,
        cost,
    }))
}

/// A turn that learns something new (so the loop goes on), 100 tokens.
fn learning(slug: &str) -> Step {
    costing(
        &format!("<known path=\"known://{slug}\">Learned {slug}.</known><update>learning</update>"),
        0.0,
    )
}

/// A turn that ends its loop, 100 tokens costing `cost` dollars.
fn done(cost: f64) -> Step {
    costing("<summarize>Done.</summarize>", cost)
}

/// A users file in `dir`: ada administers everything; mo and olga work on `web`, mo with
/// `mo_caps` (a TOML inline table).
fn team(dir: &Path, mo_caps: &str) -> String {
    let person = |name: &str, role: &str, project: &str, caps: &str| {
        format!(
            "[[person]]\nname = \"{name}\"\ntoken_sha256 = \"{}\"\nrole = \"{role}\"\n\
             projects = [\"{project}\"]\ncaps = {caps}\n",
            hash_token(&format!("{name}-token"))
        )
    };
    let text = [
        person("ada", "admin", "*", "{}"),
        person("mo", "member", "web", mo_caps),
        person("olga", "member", "web", "{}"),
    ]
    .concat();
    let file = dir.join("users.toml");
    std::fs::write(&file, text).unwrap();
    file.display().to_string()
}

/// `name`'s client bound to `project`.
async fn member(app: &TestApp, name: &str, project: &str) -> Client {
    let mut client = Client::connect(&format!("ws://{}/?token={name}-token", app.addr())).await;
    client.init(project, &app.project_root(project)).await;
    client
}

async fn ask(client: &mut Client, params: Value) -> Value {
    let mut params = params;
    params["model"] = json!("fake");
    params["prompt"] = json!("Work on it.");
    client.call("ask", params).await
}

/// An `ask` that must complete; its run.
async fn ask_done(client: &mut Client) -> String {
    let reply = ask(client, json!({})).await;
    assert_eq!(reply["result"]["status"], json!(200), "{reply}");
    reply["result"]["run"].as_str().unwrap().to_owned()
}

/// An `ask` that must be refused at a cap; the error.
async fn ask_refused(client: &mut Client) -> Value {
    let reply = ask(client, json!({})).await;
    let error = reply["error"].clone();
    assert_eq!(error["code"], json!(CAP_REACHED), "{reply}");
    error
}

/// The notifications `method` received before the first `usage/capReached`, and that one.
async fn until_cap_reached(client: &mut Client, method: &str) -> (Vec<Value>, Value) {
    let mut seen = Vec::new();
    loop {
        let notification = client.next_notification().await;
        if notification["method"] == "usage/capReached" {
            return (seen, notification["params"].clone());
        }
        if notification["method"] == method {
            seen.push(notification["params"].clone());
        }
    }
}

#[actix_web::test]
async fn a_run_cap_stops_its_loop_before_the_call_past_it_after_one_warning() {
    let llm = FakeLlm::start([
        learning("a"),
        learning("b"),
        learning("c"),
        learning("d"),
        learning("e"),
        learning("f"),
    ]);
    let app = TestApp::with_llm(&llm, &[]).await;
    app.server.fix_clock("2026-06-01 10:00:00");
    let (mut client, _) = app.client_in_project("shop").await;

    let reply = ask(&mut client, json!({"caps": {"day_tokens": 500}})).await;
    let result = &reply["result"];
    assert_eq!(result["status"], json!(402), "{reply}");
    let run = result["run"].as_str().unwrap().to_owned();
    let error = result["error"].as_str().unwrap();
    assert!(
        error.starts_with(&format!(
            "the run cap of {run} (500 tokens per day) is reached: 500 tokens spent"
        )),
        "{error}"
    );
    assert!(error.ends_with("resets at 2026-06-02T00:00:00Z"), "{error}");
    assert_eq!(llm.requests().len(), 5, "the sixth call was never made");

    let (warnings, reached) = until_cap_reached(&mut client, "usage/capWarning").await;
    let cap = json!({"scope": "run", "subject": run, "period": "day", "unit": "tokens",
                     "limit": 500, "resets": "2026-06-02T00:00:00Z"});
    let with = |spent: i64, left: i64| {
        let mut view = cap.clone();
        view["spent"] = json!(spent);
        view["left"] = json!(left);
        view
    };
    assert_eq!(warnings, [with(400, 100)], "one warning, at 80 %");
    assert_eq!(reached, with(500, 0));
    assert_eq!(
        client.statuses(&run, "error://*").await,
        [],
        "a paused loop leaves the model no error to read when it resumes"
    );
    let state = client.ok("getRun", json!({"run": run})).await;
    assert_eq!(state["status"], json!(402));

    let again = ask(&mut client, json!({"run": run})).await;
    assert_eq!(again["error"]["code"], json!(CAP_REACHED), "{again}");
    assert_eq!(again["error"]["data"], with(500, 0));
    let raised = ask(
        &mut client,
        json!({"run": run, "caps": {"day_tokens": 600}}),
    )
    .await;
    assert_eq!(raised["result"]["status"], json!(402), "{raised}");
    assert_eq!(
        llm.requests().len(),
        6,
        "one more call under the raised cap"
    );
}

#[actix_web::test]
async fn a_run_s_cap_holds_its_sub_agents_calls_too() {
    let llm = FakeLlm::start([
        costing(
            "<delegate>Look into it.</delegate><update>delegated</update>",
            0.0,
        ),
        learning("child"),
        learning("never"),
    ]);
    let app = TestApp::with_llm(&llm, &[]).await;
    let (mut client, _) = app.client_in_project("shop").await;
    let reply = ask(
        &mut client,
        json!({"caps": {"day_tokens": 200}, "noRepo": true}),
    )
    .await;
    assert_eq!(reply["result"]["status"], json!(402), "{reply}");
    let parent = reply["result"]["run"].as_str().unwrap().to_owned();
    assert_eq!(
        llm.requests().len(),
        2,
        "the parent's turn and the child's first"
    );
    assert_eq!(
        client.statuses(&parent, "delegate://*").await,
        [("delegate://turn_1/Look%20into%20it.".to_owned(), 402)]
    );
    let runs = client.ok("getRuns", json!({})).await;
    let statuses: Vec<(Value, Value)> = runs
        .as_array()
        .unwrap()
        .iter()
        .map(|run| (run["status"].clone(), run["delegated_by"].clone()))
        .collect();
    assert_eq!(
        statuses,
        [(json!(500), json!(parent)), (json!(402), Value::Null)],
        "the child failed at its delegator's cap (a sub-agent never pauses), then the \
         delegator paused"
    );
}

#[actix_web::test]
async fn a_person_s_daily_cap_refuses_a_new_ask_until_the_next_utc_day() {
    let llm = FakeLlm::start([done(0.01), done(0.01), done(0.01)]);
    let dir = tempfile::tempdir().unwrap();
    let users = team(dir.path(), "{ day_dollars = 0.01 }");
    let app = TestApp::with_llm(&llm, &[("RUMMY_USERS_FILE", users.as_str())]).await;
    app.server.fix_clock("2026-06-01 23:00:00");
    let mut mo = member(&app, "mo", "web").await;

    ask_done(&mut mo).await;
    let refused = ask_refused(&mut mo).await;
    assert_eq!(
        refused["message"],
        json!(
            "the person cap of mo ($0.010000 per day) is reached: $0.010000 spent; it resets \
             at 2026-06-02T00:00:00Z"
        )
    );
    assert_eq!(
        refused["data"],
        json!({"scope": "person", "subject": "mo", "period": "day", "unit": "dollars",
               "limit": 0.01, "spent": 0.01, "left": 0.0, "resets": "2026-06-02T00:00:00Z"})
    );
    let caps = mo.ok("usage/caps", json!({})).await;
    assert_eq!(caps["person"], json!("mo"));
    assert_eq!(caps["now"], json!("2026-06-01T23:00:00Z"));
    assert_eq!(caps["caps"], json!([refused["data"]]));
    let (code, message) = mo.err("usage/caps", json!({"person": "olga"})).await;
    assert_eq!(code, -32602);
    assert!(message.contains("admin"), "{message}");
    let mut olga = member(&app, "olga", "web").await;
    let olga_s = ask_done(&mut olga).await;
    let (_, message) = mo.err("usage/caps", json!({"run": olga_s})).await;
    assert!(message.contains("another person's run"), "{message}");
    let mut ada = member(&app, "ada", "web").await;
    let mo_s = ada.ok("usage/caps", json!({"person": "mo"})).await;
    assert_eq!(
        mo_s["caps"],
        json!([refused["data"]]),
        "an admin sees anyone's"
    );

    app.server.fix_clock("2026-06-02 00:00:00");
    let caps = mo.ok("usage/caps", json!({})).await;
    assert_eq!(caps["caps"][0]["spent"], json!(0.0), "{caps}");
    ask_done(&mut mo).await;
    let (code, message) = mo
        .err(
            "ask",
            json!({"model": "fake", "prompt": "p", "caps": {"day_dollars": 0.02}}),
        )
        .await;
    assert_eq!(code, -32602);
    assert_eq!(
        message,
        "caps.day_dollars: a run's cap may not be above its starter's own ($0.010000 per day)"
    );
    assert_eq!(llm.requests().len(), 3, "no refused ask called the model");
}

#[actix_web::test]
async fn a_project_cap_counts_every_person_s_calls_in_that_project_only() {
    let llm = FakeLlm::start([done(0.0), done(0.0), done(0.0)]);
    let dir = tempfile::tempdir().unwrap();
    let users = team(dir.path(), "{}");
    std::fs::write(
        dir.path().join("caps.toml"),
        "[caps.projects.web]\nday_tokens = 150\n",
    )
    .unwrap();
    let config = dir.path().display().to_string();
    let env = [
        ("RUMMY_USERS_FILE", users.as_str()),
        ("RUMMY_ENV", "caps"),
        (TEST_CONFIG_DIR, config.as_str()),
    ];
    let app = TestApp::with_llm(&llm, &env).await;
    app.server.fix_clock("2026-06-01 10:00:00");
    let mut mo = member(&app, "mo", "web").await;
    let mut olga = member(&app, "olga", "web").await;

    ask_done(&mut mo).await;
    ask_done(&mut olga).await;
    for client in [&mut mo, &mut olga] {
        let refused = ask_refused(client).await;
        assert_eq!(refused["data"]["scope"], json!("project"), "{refused}");
        assert_eq!(refused["data"]["subject"], json!("web"));
        assert_eq!(refused["data"]["spent"], json!(200));
    }
    let warning = mo
        .until_notified("usage/capWarning", |cap| cap["scope"] == json!("project"))
        .await;
    assert_eq!(warning["params"]["spent"], json!(200), "{warning}");
    let mut ada_in_web = member(&app, "ada", "web").await;
    ask_refused(&mut ada_in_web).await;
    let mut ada = member(&app, "ada", "shop").await;
    ask_done(&mut ada).await;
    assert_eq!(llm.requests().len(), 3);
}

#[actix_web::test]
async fn twenty_concurrent_loops_pass_a_cap_by_at_most_the_calls_in_flight() {
    const LOOPS: usize = 20;
    const CAP_CALLS: usize = 10;
    let turns = Arc::new(AtomicUsize::new(0));
    let llm = FakeLlm::builder([])
        .when_exhausted(WhenExhausted::Respond(Arc::new(move |_| {
            let turn = turns.fetch_add(1, Ordering::Relaxed);
            let Step::Reply(reply) = learning(&format!("fact{turn}")) else {
                unreachable!("a reply")
            };
            Step::delayed(Duration::from_millis(20), reply)
        })))
        .start();
    let cap = (CAP_CALLS * 100).to_string();
    let app = TestApp::with_llm(
        &llm,
        &[
            ("RUMMY_CAP_DAY_TOKENS", cap.as_str()),
            ("RUMMY_MAX_TURNS", "50"),
            ("RUMMY_PROVIDER_CONCURRENCY", "20"),
        ],
    )
    .await;
    let (mut client, _) = app.client_in_project("shop").await;
    let mut asked = Vec::new();
    for _ in 0..LOOPS {
        let id = client
            .send("ask", json!({"model": "fake", "prompt": "Learn."}))
            .await;
        asked.push(id);
    }
    for id in asked {
        let reply = client.reply(&id).await;
        let capped =
            reply["result"]["status"] == json!(402) || reply["error"]["code"] == json!(CAP_REACHED);
        assert!(capped, "{reply}");
    }

    let report = client.ok("usage/report", json!({"by": "day"})).await;
    let calls = usize::try_from(report["total"]["calls"].as_i64().unwrap()).unwrap();
    assert_eq!(report["total"]["total_tokens"], json!(calls * 100));
    assert!(calls >= CAP_CALLS, "{calls} calls");
    assert!(
        calls < CAP_CALLS + LOOPS,
        "{calls} calls: past the cap only those in flight when it was reached, at most one \
         per other loop"
    );
    assert_eq!(llm.requests().len(), calls, "no refused call was made");
}

/// A turn that learns something new, 100 tokens, answered once the test releases it.
fn held(slug: &str) -> Step {
    let Step::Reply(reply) = learning(slug) else {
        unreachable!("a reply")
    };
    Step::Held(reply)
}

/// The sample `name` of the provider of `fake` (`rummy_llm_waiting`: the calls waiting for
/// one of its slots) on the server at `address`, as its `/metrics` says.
async fn provider_sample(address: &str, name: &str) -> usize {
    let mut response = awc::Client::new()
        .get(format!("http://{address}/metrics"))
        .send()
        .await
        .unwrap();
    let text = String::from_utf8(response.body().await.unwrap().to_vec()).unwrap();
    let prefix = format!("{name}{{provider=\"openai\"}} ");
    let value = text
        .lines()
        .find_map(|line| line.strip_prefix(&prefix))
        .unwrap_or_else(|| panic!("no {name} in {text}"));
    value.parse().unwrap()
}

/// Waits until `count` calls wait for a provider slot on the server at `address`.
async fn until_waiting(address: &str, count: usize) {
    eventually(&format!("{count} calls waiting for a slot"), async || {
        (provider_sample(address, "rummy_llm_waiting").await == count).then_some(())
    })
    .await;
}

#[actix_web::test]
async fn the_calls_in_flight_when_a_cap_is_reached_are_all_that_pass_it() {
    let llm = FakeLlm::start([held("a"), held("b"), held("c")]);
    let app = TestApp::with_llm(&llm, &[("RUMMY_CAP_DAY_TOKENS", "100")]).await;
    let (mut client, _) = app.client_in_project("shop").await;
    let mut asked = Vec::new();
    for _ in 0..3 {
        let id = client
            .send("ask", json!({"model": "fake", "prompt": "Learn."}))
            .await;
        asked.push(id);
    }
    llm.wait_for_requests(3).await;
    for _ in 0..3 {
        llm.release();
    }
    for id in asked {
        let reply = client.reply(&id).await;
        assert_eq!(reply["result"]["status"], json!(402), "{reply}");
    }
    let report = client.ok("usage/report", json!({"by": "day"})).await;
    assert_eq!(
        report["total"]["total_tokens"],
        json!(300),
        "the call that reached the cap and the two in flight then; none after"
    );
    assert_eq!(llm.requests().len(), 3);
}

#[actix_web::test]
async fn calls_waiting_for_a_provider_slot_when_a_cap_is_reached_are_never_made() {
    let llm = FakeLlm::start([held("a")]);
    let app = TestApp::with_llm(
        &llm,
        &[
            ("RUMMY_CAP_DAY_TOKENS", "100"),
            ("RUMMY_PROVIDER_CONCURRENCY", "1"),
        ],
    )
    .await;
    let (mut client, _) = app.client_in_project("shop").await;
    let mut asked = Vec::new();
    for _ in 0..3 {
        let id = client
            .send("ask", json!({"model": "fake", "prompt": "Learn."}))
            .await;
        asked.push(id);
    }
    llm.wait_for_requests(1).await;
    let address = app.addr().to_string();
    until_waiting(&address, 2).await;
    llm.release();
    for id in asked {
        let reply = client.reply(&id).await;
        assert_eq!(reply["result"]["status"], json!(402), "{reply}");
    }
    assert_eq!(
        llm.requests().len(),
        1,
        "the one call in flight reached the cap; the two behind its slot were refused"
    );
    let report = client.ok("usage/report", json!({"by": "day"})).await;
    assert_eq!(report["total"]["calls"], json!(1), "{report}");
    assert_eq!(report["total"]["total_tokens"], json!(100));
    assert_eq!(
        provider_sample(&address, "rummy_llm_errors_total").await,
        0,
        "a call refused at a cap is no error of the provider's"
    );
}

#[actix_web::test]
async fn a_price_changed_mid_day_charges_only_later_calls_against_a_cap() {
    let llm = FakeLlm::start([done(0.0), done(0.0), done(0.0), done(0.0)]);
    let app = TestApp::with_llm(&llm, &[("RUMMY_CAP_DAY_DOLLARS", "0.0005")]).await;
    app.server.fix_clock("2026-06-01 10:00:00");
    let (mut client, _) = app.client_in_project("shop").await;
    let price = |input: f64| json!({"alias": "fake", "actual": "openai/fake", "price": {"input": input, "output": 0}});
    client.ok("addModel", price(1.0)).await;
    ask_done(&mut client).await;
    client.ok("addModel", price(3.0)).await;
    ask_done(&mut client).await;

    let caps = client.ok("usage/caps", json!({})).await;
    assert_eq!(
        caps["caps"],
        json!([{"scope": "server", "subject": "", "period": "day", "unit": "dollars",
                "limit": 0.0005, "spent": 0.00036, "left": 0.00014,
                "resets": "2026-06-02T00:00:00Z"}]),
        "90 tokens at $1, then 90 at $3 per million"
    );
    ask_done(&mut client).await;
    let refused = ask_refused(&mut client).await;
    assert_eq!(refused["data"]["spent"], json!(0.00063));
    assert_eq!(llm.requests().len(), 3);
}

#[actix_web::test]
async fn bad_caps_refuse_the_start_naming_the_key_and_in_the_users_file_the_person_and_line() {
    let base = |extra: &[(&str, &str)]| {
        let mut env: HashMap<String, String> = HashMap::new();
        env.insert("RUMMY_HOME".into(), "/tmp/rummy-caps-never-used".into());
        for (key, value) in extra {
            env.insert((*key).into(), (*value).into());
        }
        env
    };
    let refused = |extra: &[(&str, &str)]| match try_settings(&base(extra)) {
        Ok(_) => panic!("{extra:?} accepted"),
        Err(error) => error.to_string(),
    };
    for (variable, value, named) in [
        (
            "RUMMY_CAP_DAY_DOLLARS",
            "-1",
            "caps.server.day_dollars (RUMMY_CAP_DAY_DOLLARS)",
        ),
        (
            "RUMMY_CAP_MONTH_DOLLARS",
            "NaN",
            "caps.server.month_dollars",
        ),
        (
            "RUMMY_CAP_DAY_TOKENS",
            "-5",
            "caps.server.day_tokens (RUMMY_CAP_DAY_TOKENS)",
        ),
        ("RUMMY_CAP_MONTH_TOKENS", "lots", "month_tokens"),
    ] {
        let error = refused(&[(variable, value)]);
        assert!(error.contains(named), "{variable}={value}: {error}");
    }
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().display().to_string();
    for (toml, named) in [
        (
            "[caps.projects.web]\nmonth_dollars = -2.0\n",
            "caps.projects.web.month_dollars",
        ),
        ("[caps.server]\nweek_tokens = 5\n", "week_tokens"),
        ("[caps.projects.web]\nday_euros = 5\n", "day_euros"),
    ] {
        std::fs::write(dir.path().join("caps.toml"), toml).unwrap();
        let error = refused(&[("RUMMY_ENV", "caps"), (TEST_CONFIG_DIR, config.as_str())]);
        assert!(error.contains(named), "{toml}: {error}");
    }
    for (caps, named) in [
        (
            "{ day_tokens = -5 }",
            "mo (line 12): caps.day_tokens must be a whole number of tokens, 0 or more (got -5)",
        ),
        (
            "{ week_tokens = 5 }",
            "mo (line 12): caps.week_tokens: unknown field `week_tokens`",
        ),
        (
            "{ day_dollars = \"5\" }",
            "mo (line 12): caps.day_dollars: invalid type: string \"5\", expected a number of \
             US dollars",
        ),
    ] {
        let users = team(dir.path(), caps);
        let home = tempfile::tempdir().unwrap();
        let home_path = home.path().display().to_string();
        let env = base(&[
            ("RUMMY_USERS_FILE", users.as_str()),
            ("RUMMY_HOME", home_path.as_str()),
            ("PORT", "0"),
        ]);
        let error = match rummy::app::start(try_settings(&env).unwrap()).await {
            Ok(_) => panic!("{caps} accepted"),
            Err(error) => format!("{error:#}"),
        };
        assert!(error.contains(named), "{caps}: {error}");
    }
}

#[actix_web::test]
async fn a_run_cap_of_the_wrong_kind_is_refused_saying_what_is_wrong() {
    let llm = FakeLlm::start([]);
    let app = TestApp::with_llm(&llm, &[]).await;
    let (mut client, _) = app.client_in_project("shop").await;
    for (caps, message) in [
        (
            json!({"day_tokens": 1.5}),
            "caps.day_tokens: invalid value: floating point `1.5`, expected a whole number of \
             tokens, 0 or more",
        ),
        (
            json!({"month_dollars": "5"}),
            "caps.month_dollars: invalid type: string \"5\", expected a number of US dollars, 0 \
             or more",
        ),
        (
            json!({"week_tokens": 5}),
            "caps.week_tokens: unknown field `week_tokens`, expected one of `day_tokens`, \
             `day_dollars`, `month_tokens`, `month_dollars`",
        ),
        (
            json!({"day_tokens": -5}),
            "caps.day_tokens must be a whole number of tokens, 0 or more (got -5)",
        ),
    ] {
        let (code, error) = client
            .err(
                "ask",
                json!({"model": "fake", "prompt": "p", "caps": caps.clone()}),
            )
            .await;
        assert_eq!((code, error.as_str()), (-32602, message), "{caps}");
    }
    assert_eq!(llm.requests().len(), 0);
}

#[actix_web::test]
#[ignore = "needs PostgreSQL: RUMMY_TEST_DATABASE_URL"]
async fn two_instances_on_one_database_hold_one_cap() {
    let database = ScratchDatabase::required();
    let llm = FakeLlm::start([done(0.0), done(0.0)]);
    let home = tempfile::tempdir().unwrap();
    let root = project_root(home.path());
    let env = [
        ("RUMMY_DATABASE_URL", database.url()),
        ("RUMMY_CAP_DAY_TOKENS", "100"),
    ];
    let first = ServerProcess::start_with(home.path(), &llm, &env).await;
    let second = ServerProcess::start_with(home.path(), &llm, &env).await;
    let mut one = first.client().await;
    one.init("shared", &root).await;
    let mut other = second.client().await;
    other.init("shared", &root).await;

    ask_done(&mut one).await;
    let refused = ask_refused(&mut other).await;
    assert_eq!(refused["data"]["scope"], json!("server"), "{refused}");
    assert_eq!(refused["data"]["spent"], json!(100));
    assert_eq!(llm.requests().len(), 1);
}

#[actix_web::test]
#[ignore = "needs PostgreSQL: RUMMY_TEST_DATABASE_URL"]
async fn two_instances_make_no_call_that_waited_for_a_slot_when_their_cap_was_reached() {
    let database = ScratchDatabase::required();
    let llm = FakeLlm::start([held("a"), held("b")]);
    let home = tempfile::tempdir().unwrap();
    let root = project_root(home.path());
    let env = [
        ("RUMMY_DATABASE_URL", database.url()),
        // One call's 100 tokens reach the cap, so each instance's waiting call is refused
        // by its own instance's record, whichever instance records first.
        ("RUMMY_CAP_DAY_TOKENS", "100"),
        ("RUMMY_PROVIDER_CONCURRENCY", "1"),
    ];
    let first = ServerProcess::start_with(home.path(), &llm, &env).await;
    let second = ServerProcess::start_with(home.path(), &llm, &env).await;
    let mut asked = Vec::new();
    for server in [&first, &second] {
        let mut client = server.client().await;
        client.init("shared", &root).await;
        let mut ids = Vec::new();
        for _ in 0..2 {
            let id = client
                .send("ask", json!({"model": "fake", "prompt": "Learn."}))
                .await;
            ids.push(id);
        }
        asked.push((client, ids));
    }
    llm.wait_for_requests(2).await;
    for server in [&first, &second] {
        until_waiting(&format!("127.0.0.1:{}", server.port), 1).await;
    }
    llm.release();
    llm.release();
    for (client, ids) in &mut asked {
        for id in ids.iter() {
            let reply = client.reply(id).await;
            assert_eq!(reply["result"]["status"], json!(402), "{reply}");
        }
    }
    assert_eq!(
        llm.requests().len(),
        2,
        "one call in flight per instance; the one behind each slot was refused"
    );
    let (client, _) = &mut asked[0];
    let report = client.ok("usage/report", json!({"by": "day"})).await;
    assert_eq!(report["total"]["total_tokens"], json!(200), "{report}");
}
