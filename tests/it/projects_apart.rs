//! Projects apart: no project's root is, holds or lies inside another's, however a client
//! names it and whoever asks; a root that later leads elsewhere (a symlink put in its way)
//! reads and writes nothing there.

use std::path::PathBuf;

use rummy::hash_token;
use rummy::testing::fake_llm::{FakeLlm, Step};
use serde_json::json;

use crate::support::{Client, TestApp};

const ADA: &str = "ada-token";
const TIM: &str = "tim-token";
const SECRET: &str = "BETA-SECRET-4417";

/// ada administers everything; tim is a member who may create `team-*` projects.
fn people() -> String {
    [("ada", ADA, "admin", "*"), ("tim", TIM, "member", "team-*")]
        .iter()
        .map(|(name, token, role, projects)| {
            format!(
                "[[person]]\nname = \"{name}\"\ntoken_sha256 = \"{}\"\nrole = \"{role}\"\n\
                 projects = [\"{projects}\"]\n",
                hash_token(token)
            )
        })
        .collect()
}

/// A team server keeping projects in `projects/`, applying accepted edits itself, with
/// ada's project `beta` (holding a secret and a folder) already opened.
struct Team {
    app: TestApp,
    _dir: tempfile::TempDir,
    projects: PathBuf,
    beta: PathBuf,
}

async fn team(llm: &FakeLlm) -> Team {
    let dir = tempfile::tempdir().unwrap();
    let projects = dir.path().join("projects");
    let beta = projects.join("beta");
    std::fs::create_dir_all(beta.join("inner")).unwrap();
    std::fs::write(beta.join("secret.txt"), SECRET).unwrap();
    let users = dir.path().join("users.toml");
    std::fs::write(&users, people()).unwrap();
    let app = TestApp::with_llm(
        llm,
        &[
            ("RUMMY_PROJECTS_DIR", projects.to_str().unwrap()),
            ("RUMMY_USERS_FILE", users.to_str().unwrap()),
            ("RUMMY_APPLY_EDITS", "server"),
        ],
    )
    .await;
    let mut ada = connect(&app, ADA).await;
    ada.init("beta", &beta).await;
    Team {
        app,
        _dir: dir,
        projects,
        beta,
    }
}

async fn connect(app: &TestApp, token: &str) -> Client {
    Client::connect(&format!("ws://{}/?token={token}", app.addr())).await
}

/// `init` of `name` at `root` must be refused with `code`, bind nothing and name no other
/// project; returns the message.
async fn refused(app: &TestApp, token: &str, name: &str, root: &str, code: i64) -> String {
    let mut client = connect(app, token).await;
    let reply = client
        .call("init", json!({"name": name, "projectRoot": root}))
        .await;
    assert_eq!(reply["error"]["code"], json!(code), "{root}: {reply}");
    let message = reply["error"]["message"].as_str().unwrap().to_string();
    assert!(
        root.contains("beta") || !message.contains("beta"),
        "a refusal names no other project: {message}"
    );
    let unbound = client.call("getEntries", json!({"pattern": "*"})).await;
    assert_eq!(
        unbound["error"]["code"],
        json!(-32001),
        "{root}: nothing bound"
    );
    message
}

#[actix_web::test]
async fn a_member_cannot_take_another_projects_root_however_it_is_named() {
    let llm = FakeLlm::start([]);
    let team = team(&llm).await;
    let dirs = team.projects.display().to_string();
    let base = team.projects.file_name().unwrap().to_str().unwrap();
    std::os::unix::fs::symlink(&team.beta, team.projects.join("link")).unwrap();
    let outside = team._dir.path().join("outside");
    std::fs::create_dir(&outside).unwrap();
    std::os::unix::fs::symlink(&team.beta, outside.join("back-in")).unwrap();
    let overlapping = [
        format!("{dirs}/beta"),
        format!("{dirs}/beta/"),
        format!("{dirs}/./beta"),
        format!("{dirs}//beta"),
        format!("{dirs}/beta/inner"),
        format!("{dirs}/beta/not/yet"),
        format!("{dirs}/link"),
        format!("{dirs}/link/inner"),
        format!("{dirs}/team-x/../beta"),
        format!("{dirs}/team-x/../../{base}/beta"),
        format!("{dirs}/team-x/../link/inner/.."),
        outside.join("back-in").display().to_string(),
    ];
    for root in &overlapping {
        let message = refused(&team.app, TIM, "team-x", root, -32005).await;
        assert_eq!(
            message,
            format!("projectRoot {root} overlaps the root of another project; project roots may not overlap")
        );
    }
    for root in [dirs.clone(), format!("{dirs}/beta/.."), "/".to_string()] {
        let message = refused(&team.app, TIM, "team-x", &root, -32005).await;
        assert!(
            message.contains("not inside a directory"),
            "{root}: {message}"
        );
    }
    refused(&team.app, TIM, "team-x", "beta", -32602).await;
    for root in [format!("{dirs}/beta/inner"), format!("{dirs}/link")] {
        refused(&team.app, ADA, "gamma", &root, -32005).await;
    }

    let mut tim = connect(&team.app, TIM).await;
    tim.init("team-x", &team.projects.join("beta2")).await;
    tim.init("team-y", &team.projects.join("team-y/not/yet"))
        .await;
    refused(&team.app, ADA, "outer", &format!("{dirs}/team-y"), -32005).await;
    let mut ada = connect(&team.app, ADA).await;
    ada.init("beta", &team.beta).await;
    assert_eq!(
        ada.ok("getRuns", json!({})).await,
        json!([]),
        "beta itself still opens at its own root"
    );
}

#[actix_web::test]
async fn without_projects_dirs_roots_still_do_not_overlap() {
    let app = TestApp::start().await;
    let beta = app.project_root("beta");
    let mut operator = app.client().await;
    operator.init("beta", &beta).await;
    for root in [
        beta.clone(),
        beta.join("src"),
        beta.parent().unwrap().to_path_buf(),
        PathBuf::from("/"),
    ] {
        let mut client = app.client().await;
        let (code, message) = client
            .err("init", json!({"name": "other", "projectRoot": root}))
            .await;
        assert_eq!(code, -32005, "{}: {message}", root.display());
    }
    let alias = app.home().join("alias");
    std::os::unix::fs::symlink(&beta, &alias).unwrap();
    let mut client = app.client().await;
    assert_eq!(
        client.init("beta", &alias).await,
        operator.init("beta", &beta).await,
        "a root is stored resolved: beta opens through a link to it"
    );
}

/// Everything `getEntries` shows of `run`, as text.
async fn entries(client: &mut Client, run: &str) -> String {
    client
        .ok("getEntries", json!({"run": run, "pattern": "**"}))
        .await
        .to_string()
}

#[actix_web::test]
async fn a_root_that_later_leads_into_another_project_reads_and_writes_nothing_there() {
    let llm = FakeLlm::start([
        Step::reply("<set path=\"planted.txt\">mine now</set><update>writing</update>"),
        Step::reply("<summarize>done</summarize>"),
        Step::reply("<summarize>done</summarize>"),
    ]);
    let team = team(&llm).await;
    let root = team.projects.join("team-x");
    let mut tim = connect(&team.app, TIM).await;
    tim.init("team-x", &root).await;
    let proposed = tim
        .ok(
            "act",
            json!({"model": "fake", "prompt": "plant it", "noRepo": true}),
        )
        .await;
    assert_eq!(proposed["status"], json!(202), "{proposed}");
    let run = proposed["run"].as_str().unwrap().to_string();
    let path = proposed["proposed"][0]["path"].clone();

    std::os::unix::fs::symlink(&team.beta, &root).unwrap();
    let resolved = tim
        .call(
            "run/resolve",
            json!({"run": run, "resolution": {"path": path, "action": "accept"}}),
        )
        .await;
    assert!(
        !team.beta.join("planted.txt").exists(),
        "an accepted edit never lands in beta: {resolved}"
    );

    let calls = llm.requests().len();
    let asked = tim
        .call(
            "ask",
            json!({"model": "fake", "prompt": "what is in secret.txt?", "run": run}),
        )
        .await;
    assert!(!asked.to_string().contains(SECRET), "{asked}");
    assert_eq!(
        llm.requests().len(),
        calls,
        "no scan of beta reached a model"
    );
    let seen = tim
        .call("get", json!({"run": run, "path": "secret.txt"}))
        .await;
    assert!(!seen.to_string().contains(SECRET), "{seen}");
    assert!(!entries(&mut tim, &run).await.contains(SECRET));

    let mut again = connect(&team.app, TIM).await;
    let (code, message) = again
        .err("init", json!({"name": "team-x", "projectRoot": root}))
        .await;
    assert_eq!(
        code, -32005,
        "{message}: its old spelling now leads into beta"
    );
}
