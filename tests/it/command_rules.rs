//! "Allow always" (issue 41): a person accepts a command with `always`, which stores their
//! rule in the project; a later command of a loop of theirs that the rule matches is not
//! asked about — accepted by the server as them where the project runs commands on the
//! server (`run/action` accept saying the rule), marked `allowed` in the loop's outcome for
//! the client that runs it elsewhere. Rules are listed and revoked per person, and a command
//! with a shell operator is never allowed by a glob.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::access::users;
use crate::support::{user_message, Client, TestApp};
use rummy::testing::fake_llm::{FakeLlm, Step};

/// The model proposes `command`, then summarizes once its outcome is back.
fn proposing(command: &str) -> [Step; 2] {
    [
        Step::reply(format!("<sh>{command}</sh><update>running it</update>")),
        Step::reply("<summarize>ran it</summarize>"),
    ]
}

/// Accepts the proposal at `path` of `run` with `always`; the run's answer.
async fn accept_always(client: &mut Client, run: &str, path: &str, always: Value) -> Value {
    client
        .ok(
            "run/resolve",
            json!({"run": run, "resolution": {"path": path, "action": "accept", "output": "ok", "always": always}}),
        )
        .await
}

/// `prompt` acted on in `run` (a new run when `None`): the loop's outcome.
async fn act(client: &mut Client, run: Option<&str>, prompt: &str) -> Value {
    let mut params = json!({"model": "fake", "prompt": prompt});
    if let Some(run) = run {
        params["run"] = json!(run);
    }
    client.ok("act", params).await
}

fn rules_of(listed: &Value) -> Vec<(Option<String>, String)> {
    listed["rules"]
        .as_array()
        .unwrap()
        .iter()
        .map(|rule| {
            (
                rule["person"].as_str().map(str::to_owned),
                rule["pattern"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

#[actix_web::test]
async fn where_the_server_runs_commands_an_allowed_command_is_accepted_by_the_server_as_its_person()
{
    let mut steps = Vec::from(proposing("echo hello one"));
    steps.extend(proposing("echo hello two > two.txt"));
    steps.extend(proposing("echo   hello   three"));
    let llm = FakeLlm::start(steps);
    let app = TestApp::with_llm(
        &llm,
        &[
            ("RUMMY_RUN_COMMANDS", "server"),
            (
                "RUMMY_SANDBOX_LAUNCHER",
                env!("CARGO_BIN_EXE_rummy-sandbox"),
            ),
        ],
    )
    .await;
    let (mut client, root) = app.client_in_project("allowing").await;
    let (run, path) = client.act_until_proposal("say hello").await;
    let done = accept_always(&mut client, &run, &path, json!(true)).await;
    assert_eq!(done["status"], json!(200), "{done}");
    let listed = client.ok("rules/list", json!({})).await;
    assert_eq!(rules_of(&listed), [(None, "echo hello *".to_owned())]);
    let rule = listed["rules"][0]["id"].clone();

    let asked = act(&mut client, Some(&run), "say it again").await;
    assert_eq!(
        asked["status"],
        json!(202),
        "a command with a shell operator is asked about: {asked}"
    );
    client
        .ok(
            "run/resolve",
            json!({"run": run, "resolution": {"path": asked["proposed"][0]["path"], "action": "accept"}}),
        )
        .await;
    assert!(root.join("two.txt").exists(), "accepted, it ran");

    let allowed = act(&mut client, Some(&run), "and once more").await;
    assert_eq!(allowed["status"], json!(200), "not asked: {allowed}");
    let accepted = client
        .until_notified("run/action", |params| params["rule"].is_object())
        .await;
    assert_eq!(
        accepted["params"]["rule"],
        json!({"rule": rule, "pattern": "echo hello *", "person": null})
    );
    assert_eq!(accepted["params"]["action"], json!("accept"));
    assert_eq!(accepted["params"]["status"], json!(200));
    let requests = llm.requests();
    assert!(
        user_message(&requests[requests.len() - 1]).contains("hello three"),
        "the command ran on the server and the loop went on with its output"
    );
}

#[actix_web::test]
async fn where_clients_run_commands_an_allowed_command_is_marked_for_them_and_operators_never() {
    let mut steps = Vec::from(proposing("cargo test --all"));
    steps.extend(proposing("cargo  test tests/it -- acp::"));
    // Rejected, the run stops: no summary follows.
    steps.push(proposing("cargo test * ; rm -rf /")[0].clone());
    steps.push(proposing("cargo build")[0].clone());
    let llm = FakeLlm::start(steps);
    let app = TestApp::with_llm(&llm, &[]).await;
    let (mut client, _) = app.client_in_project("marking").await;
    let (run, path) = client.act_until_proposal("test it").await;
    accept_always(&mut client, &run, &path, json!(true)).await;
    let listed = client.ok("rules/list", json!({})).await;
    let rule = listed["rules"][0]["id"].clone();
    assert_eq!(rules_of(&listed), [(None, "cargo test *".to_owned())]);

    let allowed = act(&mut client, Some(&run), "again").await;
    assert_eq!(allowed["status"], json!(202), "{allowed}");
    assert_eq!(
        allowed["proposed"][0]["allowed"],
        json!({"rule": rule, "pattern": "cargo test *", "person": null})
    );
    let path = allowed["proposed"][0]["path"].clone();
    client
        .ok(
            "run/resolve",
            json!({"run": run, "resolution": {"path": path, "action": "accept", "output": "ok"}}),
        )
        .await;

    let chained = act(&mut client, Some(&run), "and then").await;
    assert_eq!(chained["status"], json!(202), "{chained}");
    assert!(
        chained["proposed"][0].get("allowed").is_none(),
        "a command with an operator is never allowed by a glob: {chained}"
    );
    let path = chained["proposed"][0]["path"].clone();
    client
        .ok(
            "run/resolve",
            json!({"run": run, "resolution": {"path": path, "action": "reject"}}),
        )
        .await;
    let other = act(&mut client, Some(&run), "build it").await;
    assert!(other["proposed"][0].get("allowed").is_none(), "{other}");
}

#[actix_web::test]
async fn always_is_for_an_accepted_command_with_a_pattern_and_nothing_is_resolved_otherwise() {
    let mut steps = Vec::from(proposing("make all"));
    steps.push(Step::reply(
        "<set path=\"a.txt\">hello</set><update>writing</update>",
    ));
    let llm = FakeLlm::start(steps);
    let app = TestApp::with_llm(&llm, &[]).await;
    let (mut client, _) = app.client_in_project("refusing").await;
    let (run, path) = client.act_until_proposal("build").await;
    for (resolution, wanted) in [
        (
            json!({"path": path, "action": "accept", "always": "*"}),
            "bad command pattern '*'",
        ),
        (
            json!({"path": path, "action": "accept", "always": "  "}),
            "bad command pattern",
        ),
        (
            json!({"path": path, "action": "reject", "always": true}),
            "'always' goes with an accepted command",
        ),
    ] {
        let (code, message) = client
            .err("run/resolve", json!({"run": run, "resolution": resolution}))
            .await;
        assert_eq!(code, -32602, "{message}");
        assert!(message.contains(wanted), "{message}");
    }
    assert_eq!(
        client.statuses(&run, "sh://**").await[0].1,
        202,
        "still pending"
    );
    assert_eq!(rules_of(&client.ok("rules/list", json!({})).await), []);
    accept_always(&mut client, &run, &path, json!("make *")).await;
    let edit = act(&mut client, Some(&run), "now edit").await;
    let (code, message) = client
        .err(
            "run/resolve",
            json!({"run": run, "resolution": {"path": edit["proposed"][0]["path"], "action": "accept", "always": true}}),
        )
        .await;
    assert_eq!(code, -32602);
    assert!(message.contains("is not a command"), "{message}");
    assert_eq!(
        rules_of(&client.ok("rules/list", json!({})).await),
        [(None, "make *".to_owned())]
    );
}

/// mo and bo work on `web`, olga on `ops`, ada administers everything.
async fn team(llm: &FakeLlm, dir: &Path) -> (TestApp, PathBuf) {
    let people = users(&[
        ("mo", "mo-token", "member", &["web"]),
        ("bo", "bo-token", "member", &["web"]),
        ("olga", "olga-token", "member", &["ops"]),
        ("ada", "ada-token", "admin", &["*"]),
    ]);
    let file = dir.join("users.toml");
    std::fs::write(&file, people).unwrap();
    let file_text = file.display().to_string();
    let app = TestApp::with_llm(
        llm,
        &[
            ("RUMMY_AUTH_TOKEN", "shared-token"),
            ("RUMMY_USERS_FILE", file_text.as_str()),
        ],
    )
    .await;
    let root = app.project_root("web");
    (app, root)
}

async fn person(app: &TestApp, token: &str, root: &Path) -> Client {
    let mut client = Client::connect(&format!("ws://{}/?token={token}", app.addr())).await;
    client.init("web", root).await;
    client
}

#[actix_web::test]
async fn a_rule_is_its_persons_own_listed_to_them_and_admins_and_revoked_by_them_or_an_admin() {
    let mut steps = Vec::from(proposing("npm test --watch"));
    steps.extend([0, 1, 2].map(|_| proposing("npm test")[0].clone()));
    let llm = FakeLlm::start(steps);
    let dir = tempfile::tempdir().unwrap();
    let (app, root) = team(&llm, dir.path()).await;
    let mut mo = person(&app, "mo-token", &root).await;
    let mut bo = person(&app, "bo-token", &root).await;
    let mut ada = person(&app, "ada-token", &root).await;
    let (run, path) = mo.act_until_proposal("test").await;
    accept_always(&mut mo, &run, &path, json!(true)).await;
    let mine = mo.ok("rules/list", json!({"project": "web"})).await;
    assert_eq!(
        rules_of(&mine),
        [(Some("mo".to_owned()), "npm test *".to_owned())]
    );
    assert_eq!(mine["rules"][0]["madeBy"], json!("mo"));
    let rule = mine["rules"][0]["id"].as_i64().unwrap();
    assert_eq!(rules_of(&bo.ok("rules/list", json!({})).await), []);
    assert_eq!(rules_of(&ada.ok("rules/list", json!({})).await).len(), 1);

    let bos = act(&mut bo, None, "test too").await;
    assert!(
        bos["proposed"][0].get("allowed").is_none(),
        "mo's rule is not bo's: {bos}"
    );
    let (code, message) = bo.err("rules/revoke", json!({"id": rule})).await;
    assert_eq!(code, -32005, "{message}");
    assert!(message.contains("mo's"), "{message}");
    let mut olga = Client::connect(&format!("ws://{}/?token=olga-token", app.addr())).await;
    for (method, params) in [
        ("rules/list", json!({"project": "web"})),
        ("rules/revoke", json!({"id": rule})),
    ] {
        let (code, message) = olga.err(method, params).await;
        assert_eq!(code, -32005, "{method}: {message}");
        assert!(
            !message.contains("mo"),
            "another project's rule names nobody: {message}"
        );
    }
    let (code, message) = bo.err("rules/revoke", json!({"id": rule + 100})).await;
    assert_eq!(
        (code, message),
        (-32602, format!("no command rule {}", rule + 100))
    );

    let allowed = act(&mut mo, Some(&run), "again").await;
    assert_eq!(allowed["proposed"][0]["allowed"]["person"], json!("mo"));
    mo.ok(
        "run/resolve",
        json!({"run": run, "resolution": {"path": allowed["proposed"][0]["path"], "action": "reject"}}),
    )
    .await;
    assert_eq!(
        ada.ok("rules/revoke", json!({"id": rule})).await,
        json!({"revoked": rule})
    );
    assert_eq!(rules_of(&mo.ok("rules/list", json!({})).await), []);
    let asked = act(&mut mo, Some(&run), "and again").await;
    assert!(
        asked["proposed"][0].get("allowed").is_none(),
        "a revoked rule allows nothing: {asked}"
    );
}
