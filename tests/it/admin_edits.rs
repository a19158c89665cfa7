//! Admins change what the server shares from a client (the console's Admin page): the
//! people of the users file (`people/*`: the file edited in place, its comments kept, in
//! effect at once on open connections), spend caps at run time (`caps/*`: kept in the store,
//! replacing the configured cap of the same period and unit, holding at once and after a
//! restart, and a raised one resuming the loop it paused), each change audited
//! (`admin/changes`, never a token). Only admins may; bad input gets -32602 saying why.

use rummy::hash_token;
use rummy::testing::fake_llm::{FakeLlm, Reply, Step, Usage};
use serde_json::{json, Value};

use crate::support::{Client, TestApp};

/// A users file with comments: ada administers everything, mo works on `web`.
fn commented_team() -> String {
    format!(
        "# The team of this server.\n\n# Ada leads.\n[[person]]\nname = \"ada\"   # the lead\n\
         token_sha256 = \"{}\"\nrole = \"admin\"  # viewer | member | admin\nprojects = [\"*\"]\n\n\
         # Mo works on the web.\n[[person]]\nname = \"mo\"\ntoken_sha256 = \"{}\"\n\
         role = \"member\"\nprojects = [\"web\"]\n",
        hash_token("ada-token"),
        hash_token("mo-token")
    )
}

/// A server whose users file is `commented_team` (its path returned, in the directory
/// returned), with `extra` set.
async fn server(
    llm: &FakeLlm,
    extra: &[(&str, &str)],
) -> (TestApp, std::path::PathBuf, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("users.toml");
    std::fs::write(&file, commented_team()).unwrap();
    let path = file.display().to_string();
    let mut env = vec![("RUMMY_USERS_FILE", path.as_str())];
    env.extend_from_slice(extra);
    (TestApp::with_llm(llm, &env).await, file, dir)
}

/// A client with `token`, bound to `web`.
async fn connect(app: &TestApp, token: &str) -> Client {
    let mut client = Client::connect(&format!("ws://{}/?token={token}", app.addr())).await;
    client.init("web", &app.project_root("web")).await;
    client
}

/// A method's params, made when it is called.
type Params = fn() -> Value;

/// Every admin method of this page, with params it would take.
const PEOPLE_METHODS: [(&str, Params); 8] = [
    ("people/add", || json!({"name": "zed", "role": "viewer"})),
    ("people/update", || json!({"name": "mo", "role": "admin"})),
    ("people/remove", || json!({"name": "ada"})),
    ("people/token", || json!({"name": "ada"})),
    (
        "caps/set",
        || json!({"scope": "server", "caps": {"day_tokens": 1}}),
    ),
    ("caps/clear", || json!({"scope": "server"})),
    ("caps/list", || json!({})),
    ("admin/changes", || json!({})),
];

#[actix_web::test]
async fn only_admins_change_people_and_caps_and_every_method_is_listed() {
    let llm = FakeLlm::start([]);
    let (app, file, _dir) = server(&llm, &[]).await;
    let mut mo = connect(&app, "mo-token").await;
    let catalogue = mo.ok("discover", json!({})).await;
    for (method, params) in PEOPLE_METHODS {
        assert_eq!(
            catalogue["methods"][method]["role"],
            json!("admin"),
            "{method}"
        );
        let (code, message) = mo.err(method, params()).await;
        assert_eq!(code, -32005, "{method}: {message}");
        assert_eq!(
            message,
            format!("mo is a member; '{method}' needs the admin role.")
        );
    }
    assert_eq!(std::fs::read_to_string(&file).unwrap(), commented_team());
    let mut ada = connect(&app, "ada-token").await;
    assert_eq!(ada.ok("caps/list", json!({})).await, json!({"caps": []}));
    assert_eq!(
        ada.ok("admin/changes", json!({})).await,
        json!({"changes": []})
    );
}

#[actix_web::test]
async fn an_admin_adds_changes_and_removes_people_the_file_keeping_its_comments() {
    let llm = FakeLlm::start([]);
    let (app, file, _dir) = server(&llm, &[]).await;
    let mut ada = connect(&app, "ada-token").await;
    let mut mo = connect(&app, "mo-token").await;

    let added = ada
        .ok(
            "people/add",
            json!({"name": "olga", "role": "viewer", "projects": ["web"]}),
        )
        .await;
    let token = added["token"].as_str().unwrap().to_owned();
    assert_eq!(token.len(), 64, "{added}");
    assert_eq!(
        added,
        json!({"name": "olga", "role": "viewer", "projects": ["web"], "token": token})
    );
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(
        text.starts_with(&commented_team()),
        "the file as it was, then olga: {text}"
    );
    assert!(
        text.contains(&hash_token(&token)) && !text.contains(&token),
        "{text}"
    );
    let mut olga = connect(&app, &token).await;
    let (code, message) = olga.err("startRun", json!({"model": "fake"})).await;
    assert_eq!(
        (code, message.as_str()),
        (
            -32005,
            "olga is a viewer; 'startRun' needs the member role."
        )
    );

    let updated = ada
        .ok(
            "people/update",
            json!({"name": "olga", "role": "admin", "projects": ["web", "api-*"]}),
        )
        .await;
    assert_eq!(
        updated,
        json!({"name": "olga", "role": "admin", "projects": ["web", "api-*"]})
    );
    olga.ok("getPeople", json!({})).await;
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(
        text.contains("role = \"admin\"  # viewer | member | admin"),
        "{text}"
    );
    assert!(
        text.contains("# Mo works on the web.\n[[person]]"),
        "{text}"
    );

    let renewed = ada.ok("people/token", json!({"name": "olga"})).await;
    let new_token = renewed["token"].as_str().unwrap().to_owned();
    assert_ne!(new_token, token);
    let old = awc::Client::new()
        .ws(format!("ws://{}/?token={token}", app.addr()))
        .connect()
        .await;
    assert!(old.is_err(), "the old token opens nothing");
    connect(&app, &new_token)
        .await
        .ok("getPeople", json!({}))
        .await;

    assert_eq!(
        ada.ok("people/remove", json!({"name": "mo"})).await,
        json!({"removed": "mo"})
    );
    let (code, message) = mo.err("getRuns", json!({})).await;
    assert_eq!(
        (code, message.as_str()),
        (-32005, "mo is no longer a user of this server.")
    );
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(
        !text.contains("name = \"mo\"") && !text.contains("Mo works"),
        "{text}"
    );
    assert!(
        text.starts_with("# The team of this server.\n\n# Ada leads.\n"),
        "{text}"
    );
    let people = ada.ok("getPeople", json!({})).await;
    let names: Vec<&str> = people
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["ada", "olga"]);

    let changes = ada.ok("admin/changes", json!({})).await;
    let seen: Vec<(&str, &str, &str)> = changes["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["by"].as_str().unwrap(),
                c["action"].as_str().unwrap(),
                c["subject"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        seen,
        [
            ("ada", "people/remove", "mo"),
            ("ada", "people/token", "olga"),
            ("ada", "people/update", "olga"),
            ("ada", "people/add", "olga"),
        ]
    );
    assert_eq!(
        changes["changes"][2]["detail"],
        json!({"role": "admin", "projects": ["web", "api-*"]})
    );
    let said = changes.to_string();
    for secret in [
        &token,
        &new_token,
        &hash_token(&token),
        &hash_token(&new_token),
    ] {
        assert!(
            !said.contains(secret.as_str()),
            "no token or hash in the audit"
        );
    }
}

#[actix_web::test]
async fn bad_changes_are_refused_saying_why_and_the_file_stays_as_it_was() {
    let llm = FakeLlm::start([]);
    let (app, file, _dir) = server(&llm, &[]).await;
    let mut ada = connect(&app, "ada-token").await;
    let cases = [
        (
            "people/add",
            json!({"name": "mo", "role": "viewer"}),
            -32004,
            "mo is already a person of the users file.",
        ),
        (
            "people/add",
            json!({"name": "al ice", "role": "viewer"}),
            -32602,
            "person name \"al ice\"",
        ),
        (
            "people/add",
            json!({"name": "al", "role": "owner"}),
            -32602,
            "role must be viewer, member or admin (got \"owner\")",
        ),
        (
            "people/add",
            json!({"name": "al", "role": "member", "projects": ["a[b"]}),
            -32602,
            "project pattern \"a[b\"",
        ),
        (
            "people/add",
            json!({"name": "al", "role": "member", "token": "x"}),
            -32602,
            "token",
        ),
        (
            "people/update",
            json!({"name": "mo"}),
            -32602,
            "people/update needs role, projects or both",
        ),
        (
            "people/update",
            json!({"name": "zed", "role": "admin"}),
            -32602,
            "zed is not a person of the users file.",
        ),
        (
            "people/remove",
            json!({"name": "zed"}),
            -32602,
            "zed is not a person of the users file.",
        ),
        ("people/token", json!({}), -32602, "name"),
        (
            "caps/set",
            json!({"scope": "run", "subject": "x", "caps": {"day_tokens": 5}}),
            -32602,
            "a run's caps are given by ask or act",
        ),
        (
            "caps/set",
            json!({"scope": "server", "subject": "x", "caps": {"day_tokens": 5}}),
            -32602,
            "the server's caps take no subject",
        ),
        (
            "caps/set",
            json!({"scope": "project", "caps": {"day_tokens": 5}}),
            -32602,
            "a project's caps need its name",
        ),
        (
            "caps/set",
            json!({"scope": "person", "subject": "a b", "caps": {"day_tokens": 5}}),
            -32602,
            "a person's caps need their name",
        ),
        (
            "caps/set",
            json!({"scope": "server", "caps": {}}),
            -32602,
            "caps names no cap",
        ),
        (
            "caps/set",
            json!({"scope": "server", "caps": {"day_dollars": -1.0}}),
            -32602,
            "caps.day_dollars must be a number of US dollars, 0 or more (got -1)",
        ),
        (
            "caps/set",
            json!({"scope": "server", "caps": {"week_tokens": 5}}),
            -32602,
            "unknown field `week_tokens`",
        ),
        (
            "caps/set",
            json!({"scope": "server", "caps": {"day_tokens": 1.5}}),
            -32602,
            "a whole number of tokens",
        ),
        (
            "admin/changes",
            json!({"limit": 0}),
            -32602,
            "limit must be 1 to 200 (got 0)",
        ),
    ];
    for (method, params, expected_code, expected) in cases {
        let (code, message) = ada.err(method, params.clone()).await;
        assert_eq!(code, expected_code, "{method} {params}: {message}");
        assert!(
            message.contains(expected),
            "{method} {params}: {message:?} lacks {expected:?}"
        );
    }
    assert_eq!(std::fs::read_to_string(&file).unwrap(), commented_team());
    assert_eq!(ada.ok("caps/list", json!({})).await, json!({"caps": []}));
    assert_eq!(
        ada.ok("admin/changes", json!({})).await,
        json!({"changes": []})
    );
}

#[actix_web::test]
async fn without_a_users_file_there_are_no_people_to_change_and_the_setting_is_named() {
    let app = TestApp::start().await;
    let mut operator = app.client().await;
    let (code, message) = operator
        .err("people/add", json!({"name": "olga", "role": "viewer"}))
        .await;
    assert_eq!(code, -32602);
    assert!(message.contains("set RUMMY_USERS_FILE"), "{message}");
}

/// A turn of 100 tokens that learns something, so its loop goes on.
fn learning(slug: &str) -> Step {
    Step::Reply(
        Reply::new(format!(
            "<known path=\"known://{slug}\">Learned {slug}.</known><update>learning</update>"
        ))
        .with_usage(Usage {
            prompt_tokens: 90,
            cached_tokens: 0,
            completion_tokens: 10,
            cost: 0.0,
        }),
    )
}

/// Waits for the `run/outcome` of `run` with `status`; its params.
async fn outcome(client: &mut Client, run: &str, status: i64) -> Value {
    client
        .until_notified("run/outcome", |params| {
            params["run"] == run && params["status"] == status
        })
        .await["params"]
        .clone()
}

#[actix_web::test]
async fn a_stored_cap_holds_at_once_survives_a_restart_and_raising_it_resumes_the_paused_run() {
    let llm = FakeLlm::start([
        learning("a"),
        learning("b"),
        learning("c"),
        Step::reply("<summarize>Done.</summarize>"),
    ]);
    let (app, _, _dir) = server(&llm, &[("RUMMY_CAP_DAY_TOKENS", "100000")]).await;
    app.server.fix_clock("2026-06-01 10:00:00");
    let mut ada = connect(&app, "ada-token").await;
    let mut mo = connect(&app, "mo-token").await;

    let set = ada
        .ok(
            "caps/set",
            json!({"scope": "person", "subject": "mo", "caps": {"day_tokens": 200}}),
        )
        .await;
    assert_eq!(
        set,
        json!({"scope": "person", "subject": "mo", "caps": {"day_tokens": 200}})
    );
    let caps = mo.ok("usage/caps", json!({})).await;
    let person: Vec<&Value> = caps["caps"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["scope"] == "person")
        .collect();
    assert_eq!(person.len(), 1, "{caps}");
    assert_eq!(person[0]["limit"], json!(200));
    let reply = mo
        .call("ask", json!({"model": "fake", "prompt": "Work on it."}))
        .await;
    assert_eq!(reply["result"]["status"], json!(402), "{reply}");
    assert_eq!(reply["result"]["cap"]["scope"], json!("person"), "{reply}");
    let run = reply["result"]["run"].as_str().unwrap().to_owned();
    assert_eq!(
        llm.requests().len(),
        2,
        "the call past the stored cap never made"
    );

    let app = app.restart().await;
    app.server.fix_clock("2026-06-01 10:00:00");
    let mut ada = connect(&app, "ada-token").await;
    let mut mo = connect(&app, "mo-token").await;
    let listed = ada.ok("caps/list", json!({})).await;
    assert_eq!(
        listed["caps"][0]["caps"],
        json!({"day_tokens": 200}),
        "{listed}"
    );
    assert_eq!(listed["caps"][0]["setBy"], json!("ada"), "{listed}");
    let stored = mo.ok("getRun", json!({"run": run})).await;
    assert_eq!(
        stored["status"],
        json!(402),
        "still paused after the restart"
    );

    ada.ok(
        "caps/set",
        json!({"scope": "person", "subject": "mo", "caps": {"day_tokens": 300}}),
    )
    .await;
    let acted = mo
        .until_notified("run/action", |acted| acted["action"] == "resume")
        .await;
    assert_eq!(
        acted["params"]["by"],
        json!("ada"),
        "resumed by the admin who raised the cap"
    );
    let paused = outcome(&mut mo, &run, 402).await;
    assert_eq!(paused["cap"]["limit"], json!(300), "{paused}");
    assert_eq!(llm.requests().len(), 3);

    let cleared = ada
        .ok("caps/clear", json!({"scope": "person", "subject": "mo"}))
        .await;
    assert_eq!(
        cleared,
        json!({"scope": "person", "subject": "mo", "cleared": true})
    );
    outcome(&mut mo, &run, 200).await;
    assert_eq!(
        llm.requests().len(),
        4,
        "the configured caps hold again, and leave room"
    );
    let changes = ada.ok("admin/changes", json!({})).await;
    let actions: Vec<&str> = changes["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["action"].as_str().unwrap())
        .collect();
    assert_eq!(actions, ["caps/clear", "caps/set", "caps/set"]);
}

#[actix_web::test]
async fn a_stored_server_cap_replaces_the_configured_one_of_its_period_and_unit_only() {
    let llm = FakeLlm::start([learning("a"), learning("b"), learning("c")]);
    let (app, _, _dir) = server(&llm, &[("RUMMY_CAP_DAY_TOKENS", "100")]).await;
    app.server.fix_clock("2026-06-01 10:00:00");
    let mut ada = connect(&app, "ada-token").await;
    ada.ok(
        "caps/set",
        json!({"scope": "server", "caps": {"day_tokens": 300, "month_tokens": 200}}),
    )
    .await;
    let caps = ada.ok("usage/caps", json!({})).await;
    let server: Vec<(Value, Value)> = caps["caps"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["scope"] == "server")
        .map(|c| (c["period"].clone(), c["limit"].clone()))
        .collect();
    assert_eq!(
        server,
        [(json!("day"), json!(300)), (json!("month"), json!(200))],
        "{caps}"
    );
    let reply = ada
        .call("ask", json!({"model": "fake", "prompt": "Work on it."}))
        .await;
    assert_eq!(reply["result"]["status"], json!(402), "{reply}");
    assert_eq!(reply["result"]["cap"]["period"], json!("month"), "{reply}");
    assert_eq!(llm.requests().len(), 2);
}

#[actix_web::test]
#[ignore = "needs PostgreSQL: RUMMY_TEST_DATABASE_URL"]
async fn a_cap_set_on_one_instance_holds_on_another_and_raising_it_resumes_the_loop_there() {
    let database = rummy::testing::ScratchDatabase::required();
    let llm = FakeLlm::start([
        learning("a"),
        learning("b"),
        Step::reply("<summarize>Done.</summarize>"),
    ]);
    let home = tempfile::tempdir().unwrap();
    let root = crate::support::project_root(home.path());
    let env = [
        ("RUMMY_DATABASE_URL", database.url()),
        ("RUMMY_LEASE_TTL_SECS", "3"),
    ];
    let first = crate::process::ServerProcess::start_with(home.path(), &llm, &env).await;
    let second = crate::process::ServerProcess::start_with(home.path(), &llm, &env).await;
    let mut on_first = first.client().await;
    on_first.init("shared", &root).await;
    let mut on_second = second.client().await;
    on_second.init("shared", &root).await;

    on_first
        .ok(
            "caps/set",
            json!({"scope": "server", "caps": {"day_tokens": 100}}),
        )
        .await;
    crate::support::eventually("the other instance to hold the cap", async || {
        let caps = on_second.ok("usage/caps", json!({})).await;
        let held =
            caps["caps"].as_array().unwrap().iter().any(|cap| {
                cap["scope"] == "server" && cap["period"] == "day" && cap["limit"] == 100
            });
        held.then_some(())
    })
    .await;
    let reply = on_second
        .call("ask", json!({"model": "fake", "prompt": "Work on it."}))
        .await;
    assert_eq!(reply["result"]["status"], json!(402), "{reply}");
    assert_eq!(reply["result"]["cap"]["scope"], json!("server"), "{reply}");
    let run = reply["result"]["run"].as_str().unwrap().to_owned();
    assert_eq!(llm.requests().len(), 1);

    on_first
        .ok(
            "caps/set",
            json!({"scope": "server", "caps": {"day_tokens": 100000}}),
        )
        .await;
    outcome(&mut on_second, &run, 200).await;
    assert_eq!(llm.requests().len(), 3);
}
