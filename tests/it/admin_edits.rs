//! Admins change what the server shares from a client (the console's Admin page): the
//! people of the users file (`people/*`: the file edited in place, its comments kept, in
//! effect at once on open connections), spend caps at run time (`caps/*`, in `caps`), each
//! change audited (`admin/changes`, never a token). Only admins may; bad input gets -32602
//! saying why.

use rummy::hash_token;
use rummy::testing::fake_llm::FakeLlm;
use serde_json::{json, Value};

use crate::support::{Client, TestApp};

mod caps;
mod mcp;
mod people;
mod prices;

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
pub(super) async fn server(
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
pub(super) async fn connect(app: &TestApp, token: &str) -> Client {
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
    let (app, file, _dir) = server(&llm, &[("RUMMY_RPC_LOG", "full")]).await;
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
    drop((ada, mo, olga));
    let TestApp { server, home, .. } = app;
    server.stop().await;
    crate::tokens::nowhere_in(home.path(), &[&token, &new_token]);
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
