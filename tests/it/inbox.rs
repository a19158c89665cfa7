//! A person's inbox (issue 41, people in the run): what waits for them across their
//! projects — runs waiting on proposals they may resolve, and the runs they asked for that
//! a cap stopped, that failed or that finished —, newest first, by role and project;
//! dismissed until the run has something new; gone when resolved otherwise; told live
//! (`inbox/changed`) to the connections that asked.

use serde_json::{json, Value};

use crate::access::users;
use crate::support::{learning_100_tokens, Client, TestApp};
use rummy::testing::fake_llm::{FakeLlm, Step};
use rummy::testing::today_at;

const SHARED: &str = "shared-token";
const PROPOSING: &str = "<sh>make deploy</sh><update>deploying</update>";
const DONE: &str = "<summarize>done</summarize>";

/// `(project, run, why)` of each item of `page`, in order.
fn items(page: &Value) -> Vec<(String, String, String)> {
    page["items"]
        .as_array()
        .unwrap_or_else(|| panic!("no items in {page}"))
        .iter()
        .map(|item| {
            let text = |key: &str| item[key].as_str().unwrap().to_owned();
            (text("project"), text("run"), text("why"))
        })
        .collect()
}

fn item(project: &str, run: &str, why: &str) -> (String, String, String) {
    (project.into(), run.into(), why.into())
}

/// A server with the shared token and a team: mo works on `web`, vera views it, ada
/// administers everything, olga works on `ops`.
async fn team_server(llm: &FakeLlm) -> (TestApp, tempfile::TempDir) {
    team_server_with(llm, &[]).await
}

/// [`team_server`] with `extra` set.
async fn team_server_with(llm: &FakeLlm, extra: &[(&str, &str)]) -> (TestApp, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("users.toml");
    let people = users(&[
        ("mo", "mo-token", "member", &["web"]),
        ("vera", "vera-token", "viewer", &["web"]),
        ("ada", "ada-token", "admin", &["*"]),
        ("olga", "olga-token", "member", &["ops"]),
    ]);
    std::fs::write(&file, people).unwrap();
    let file = file.display().to_string();
    let mut env = vec![
        ("RUMMY_AUTH_TOKEN", SHARED),
        ("RUMMY_USERS_FILE", file.as_str()),
    ];
    env.extend_from_slice(extra);
    let app = TestApp::with_llm(llm, &env).await;
    (app, dir)
}

/// A connection of the person holding `token`, bound to `project`.
async fn person_in(app: &TestApp, token: &str, project: &str) -> Client {
    let mut client = Client::connect(&format!("ws://{}/?token={token}", app.addr())).await;
    client.init(project, &app.project_root(project)).await;
    client
}

#[actix_web::test]
async fn an_inbox_holds_what_waits_for_its_person_by_role_and_project() {
    let llm = FakeLlm::start([Step::reply(PROPOSING), Step::reply(DONE)]);
    let (app, _dir) = team_server(&llm).await;
    let mut admin = person_in(&app, SHARED, "web").await;
    admin.add_model("fake").await;
    let mut mo = person_in(&app, "mo-token", "web").await;
    let (waiting, _) = mo.act_until_proposal("deploy").await;
    let mut olga = person_in(&app, "olga-token", "ops").await;
    let finished = olga
        .ok("ask", json!({"model": "fake", "prompt": "what runs?"}))
        .await["run"]
        .as_str()
        .unwrap()
        .to_owned();
    let mut vera = person_in(&app, "vera-token", "web").await;
    let mut ada = person_in(&app, "ada-token", "web").await;

    let mo_inbox = mo.ok("inbox", json!({})).await;
    assert_eq!(items(&mo_inbox), vec![item("web", &waiting, "approval")]);
    let listed = &mo_inbox["items"][0];
    assert_eq!(listed["title"], json!("deploy"));
    assert_eq!(listed["status"], json!(202));
    assert!(listed["since"].as_i64().unwrap() > 0, "{listed}");
    assert_eq!(mo_inbox["next"], Value::Null);
    assert_eq!(
        items(&olga.ok("inbox", json!({})).await),
        vec![item("ops", &finished, "finished")],
        "olga sees her finished run and not web's approval"
    );
    assert_eq!(
        items(&vera.ok("inbox", json!({})).await),
        vec![],
        "a viewer resolves nothing and started nothing"
    );
    assert_eq!(
        items(&ada.ok("inbox", json!({})).await),
        vec![item("web", &waiting, "approval")],
        "an admin may resolve anywhere; olga's finished run is hers"
    );
    assert_eq!(
        items(&admin.ok("inbox", json!({})).await),
        vec![item("web", &waiting, "approval")],
        "the operator's inbox holds the approvals and the operator's own runs"
    );
}

#[actix_web::test]
async fn an_item_goes_when_resolved_elsewhere_or_dismissed_and_every_watcher_is_told() {
    let llm = FakeLlm::start([Step::reply(PROPOSING)]);
    let (app, _dir) = team_server(&llm).await;
    let mut admin = person_in(&app, SHARED, "web").await;
    admin.add_model("fake").await;
    let mut mo = person_in(&app, "mo-token", "web").await;
    let (run, path) = mo.act_until_proposal("deploy").await;
    let mut ada = person_in(&app, "ada-token", "ops").await;
    let mut olga = person_in(&app, "olga-token", "ops").await;
    assert_eq!(
        items(&ada.ok("inbox", json!({})).await),
        vec![item("web", &run, "approval")]
    );
    olga.ok("inbox", json!({})).await;

    mo.ok(
        "run/resolve",
        json!({"run": run, "resolution": {"path": path, "action": "reject"}}),
    )
    .await;
    let changed = ada
        .until_notified("inbox/changed", |params| params["run"] == run)
        .await;
    assert_eq!(changed["params"]["project"], json!("web"), "{changed}");
    assert!(
        items(&ada.ok("inbox", json!({})).await).is_empty(),
        "an approval given by someone else leaves ada's inbox (bound to another project)"
    );
    let page = mo.ok("inbox", json!({})).await;
    assert_eq!(items(&page), vec![item("web", &run, "finished")]);
    let id = page["items"][0]["id"].as_str().unwrap().to_owned();

    let mut mo_elsewhere = person_in(&app, "mo-token", "web").await;
    let (code, message) = olga.err("inbox/dismiss", json!({"id": id})).await;
    assert_eq!(code, -32602, "another person's item: {message}");
    mo_elsewhere.ok("inbox/dismiss", json!({"id": id})).await;
    let told = mo
        .until_notified("inbox/changed", |params| params["dismissed"] == id)
        .await;
    assert_eq!(told["params"], json!({"dismissed": id}));
    assert!(items(&mo.ok("inbox", json!({})).await).is_empty());
    olga.ok("ping", json!({})).await;
    assert!(
        olga.pending_notifications()
            .iter()
            .all(|notification| notification["method"] != "inbox/changed"),
        "olga may not open web: told nothing of it"
    );
    let (code, _) = mo.err("inbox/dismiss", json!({"id": id})).await;
    assert_eq!(code, -32602, "dismissed already");
}

#[actix_web::test]
async fn the_operator_s_inbox_pages_newest_first_and_refuses_bad_input() {
    let llm = FakeLlm::start([]);
    let app = TestApp::with_llm(&llm, &[]).await;
    let (mut client, _) = app.client_in_project("solo").await;
    let mut runs = Vec::new();
    for prompt in ["one", "two", "three"] {
        let answer = client
            .ok("ask", json!({"model": "fake", "prompt": prompt}))
            .await;
        runs.push(answer["run"].as_str().unwrap().to_owned());
    }
    let first = client.ok("inbox", json!({"limit": 2})).await;
    assert_eq!(
        items(&first),
        vec![
            item("solo", &runs[2], "finished"),
            item("solo", &runs[1], "finished")
        ]
    );
    let next = first["next"].as_str().unwrap().to_owned();
    let rest = client.ok("inbox", json!({"before": next})).await;
    assert_eq!(items(&rest), vec![item("solo", &runs[0], "finished")]);
    assert_eq!(rest["next"], Value::Null);

    client
        .ok(
            "ask",
            json!({"model": "fake", "prompt": "more", "run": runs[0]}),
        )
        .await;
    let again = client.ok("inbox", json!({})).await;
    assert_eq!(
        items(&again)[0],
        item("solo", &runs[0], "finished"),
        "a run continued and finished again is the newest"
    );

    for (params, what) in [
        (json!({"before": "yesterday"}), "a bad cursor"),
        (json!({"before": "12"}), "a cursor without its run"),
        (json!({"limit": 0}), "no items"),
        (json!({"limit": 1000}), "too many"),
        (json!({"limit": "ten"}), "a limit that is no number"),
    ] {
        let (code, message) = client.err("inbox", params).await;
        assert_eq!(code, -32602, "{what}: {message}");
    }
    for id in ["", "nope", "1.x", "999999.0"] {
        let (code, message) = client.err("inbox/dismiss", json!({"id": id})).await;
        assert_eq!(code, -32602, "{id}: {message}");
    }
}

#[actix_web::test]
async fn a_run_that_failed_and_one_a_cap_stopped_wait_in_their_starter_s_inbox_and_it_is_told() {
    let llm = FakeLlm::start([
        Step::error(500),
        learning_100_tokens("a"),
        learning_100_tokens("b"),
    ]);
    let (app, _dir) = team_server_with(&llm, &[("RUMMY_CAP_DAY_TOKENS", "200")]).await;
    app.server.fix_clock(&today_at("00:00:01"));
    let mut admin = person_in(&app, SHARED, "web").await;
    admin.add_model("fake").await;
    let mut mo = person_in(&app, "mo-token", "web").await;
    let mut vera = person_in(&app, "vera-token", "web").await;
    assert!(items(&mo.ok("inbox", json!({})).await).is_empty());

    let failed = mo
        .ok("ask", json!({"model": "fake", "prompt": "fail"}))
        .await;
    assert_eq!(failed["status"], json!(500), "{failed}");
    let failed = failed["run"].as_str().unwrap().to_owned();
    let told = mo
        .until_notified("inbox/changed", |params| params["run"] == failed)
        .await;
    assert_eq!(told["params"]["project"], json!("web"), "{told}");
    assert_eq!(
        items(&mo.ok("inbox", json!({})).await),
        vec![item("web", &failed, "failed")]
    );

    let capped = mo
        .ok("ask", json!({"model": "fake", "prompt": "work on it"}))
        .await;
    assert_eq!(capped["status"], json!(402), "{capped}");
    let capped = capped["run"].as_str().unwrap().to_owned();
    mo.until_notified("inbox/changed", |params| params["run"] == capped)
        .await;
    let page = mo.ok("inbox", json!({})).await;
    assert_eq!(
        items(&page),
        vec![
            item("web", &capped, "capped"),
            item("web", &failed, "failed")
        ]
    );
    assert_eq!(
        (&page["items"][0]["status"], &page["items"][1]["status"]),
        (&json!(402), &json!(500))
    );
    assert!(
        items(&vera.ok("inbox", json!({})).await).is_empty(),
        "another person's stopped runs are not hers to see to"
    );
    assert_eq!(llm.requests().len(), 3, "the call past the cap never made");
}
