//! The web console in a real browser: Debian's chromium, headless, driven by Playwright for
//! Python (`tests/console/browse.py`, pinned by `tests/console/requirements.txt`) against
//! this server and a scripted model that answers by the prompt it is given. A member signs
//! in, asks from the page and watches the run finish live, reads at 1,280 px a runs list
//! whose summaries are a paragraph long (no cell broken or wrapped, each summary cut short
//! with an ellipsis and whole in its title), continues a run, approves an edit
//! (the file changes on disk), approves a command always (its pattern shown; an admin's page
//! on the run redraws at once and says who accepted it; the member keeps the rule, the admin
//! revokes it, each after a confirmation), approves one that runs on the server with
//! a double click (the card says "running…" at once and never offers it again, the command
//! runs once; another page's approval meanwhile is refused and says so on its card) and
//! watches its output stream in, injects into a slow run which the admin's page aborts (the
//! member's page says so at once), continues it and cancels that prompt,
//! survives a dropped connection whose missed notifications come back by `run/replay`,
//! writes, finds and erases a fact of memory, reads the usage page, opens a run whose model
//! reply is hostile HTML and 1 MB long and finds it inert, and signs out, after which the
//! old cookie is refused; a viewer sees no control that changes anything and has a forged
//! call refused and a paused run without Resume; an admin sees the models, the people (no
//! token) and the MCP servers, one with a long start error cut short on one line, adds a
//! webhook (its secret shown once and copied), reads two runs paused at their run cap,
//! resumes one whose cap still stands (refused, in words), raises the person cap that
//! paused the other from the Admin page (it goes on and finishes), reads the webhook's delivery of that finish and
//! removes the webhook. A
//! second test reads runs as a person does: titled by their first prompt, with what was
//! asked, statuses and durations in words, local times with the UTC time on hover, the
//! answer on top rendered as markdown and a command as a collapsed step that says who
//! approved it and how it ended. A third reads a reply in the run page as the model writes
//! it (part of it shown before the whole, then the reply as recorded). A
//! fourth signs in and asks through the real nginx configured by `docker/nginx.conf`,
//! the call taking the server's token cap past 80 %, which the page says, and watches a
//! reply come in through it a few words at a time.
//! Screenshots of the pages go to `target/console-screenshots`.
//!
//! They need chromium (apt) and the venv tests/console/.venv, which `tests/run.sh` makes,
//! and the second nginx: they are `#[ignore]`d, so that a plain `cargo test` lists them as
//! ignored instead of counting them as passed, and run.sh runs them (`--ignored`). Run
//! without them, they fail and say why.

mod admin_mcp;
mod first_run;
mod mcp_credentials;
mod oidc;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rummy::testing::fake_llm::{FakeLlm, Reply, Step, Usage, WhenExhausted};
use serde_json::{json, Value};

use crate::access::users;
use crate::proxy::Nginx;
use crate::support::{llm_env, Client, TestApp};

const NEEDS: &str = "needs Debian's chromium and Playwright in tests/console/.venv \
                     (tests/console/requirements.txt): tests/run.sh installs both";

/// A model reply that would run script, load an image, or link to script if it were HTML
/// or markdown rendered carelessly (raw HTML, a `javascript:` link, an image whose load
/// fails into script), with markdown that is fine (bold words, an https link), then a
/// megabyte of text.
fn hostile_reply() -> String {
    format!(
        "<script>window.pwned = true</script> <img src=x onerror=\"window.pwned = true\"> \
         <a href=\"javascript:window.pwned = true\">click me</a> <b>raw</b>\n\n\
         **bold words** [evil](javascript:window.pwned=true) \
         ![pic](x\" onerror=\"window.pwned=true) ![img](https://example.com/x.png) \
         [a site](https://example.com/)\n\n{}\n\
         <summarize>hostile</summarize>",
        "A".repeat(1_000_000)
    )
}

/// What the scripted model does for a run whose prompt has this marker: the first request
/// of the run takes `first`, later ones (after a resolution) `then`.
struct Answer {
    marker: &'static str,
    first: fn() -> Step,
    then: fn() -> Step,
}

fn summary(text: &'static str) -> Step {
    Step::reply(format!("<summarize>{text}</summarize>"))
}

/// Summaries a paragraph long, with a path and an id no line could hold part of.
const LONG_SUMMARIES: [&str; 2] = [
    "Looked through the whole request path from the WebSocket upgrade down to the store: \
     the session actor hands every frame to the envelope, the dispatch checks the grant, \
     and src/db/queries/memory/recall.rs answers the search; nothing there holds a lock \
     across an await, so the slowness reported in ticket stub_17959091093127 must come \
     from the client's own retry loop, which waits twice as long after every failure.",
    "Compared the two configurations line by line and found that the production one sets \
     RUMMY_MEMORY_RECALL_TOKENS to zero, which turns recall off entirely, while staging \
     keeps the default; the difference explains why the same question recalls facts on \
     staging and nothing in production, and setting it back fixes it.",
];

/// A server command no machine has, whose start error (the admin page shows it) is long.
fn missing_mcp_command() -> String {
    format!(
        "/nonexistent/{}mcp-server-that-is-not-installed",
        "a-directory-with-a-long-name/".repeat(5)
    )
}

/// A turn that goes on after 1,010 tokens, past the 1,000-token run cap the paused runs have.
fn spending() -> Step {
    Step::Reply(Reply::new("<update>spending</update>").with_usage(Usage {
        prompt_tokens: 1000,
        completion_tokens: 10,
        cached_tokens: 0,
        cost: 0.0,
    }))
}

/// An answer in markdown: a heading, bold words, a list, a code block and a link.
const MARKDOWN_ANSWER: &str = "# Result\nThe answer is **four**:\n\n- two\n- plus two\n\n\
                               ```\n2 + 2 = 4\n```\n\n[Arithmetic](https://example.com/)";

/// The answers, newest prompt first where one run holds two (`3 + 3` continues `2 + 2`).
/// The answer to "tell me slowly", a few words at a time.
const SLOW_ANSWER: &str = "Slowly, then: the reply comes in a few words at a time, through \
whatever stands between the model and the page, and the page shows each piece as it comes.";

fn slowly() -> Step {
    Step::Paced(
        Reply::new(format!("<summarize>{SLOW_ANSWER}</summarize>")),
        Duration::from_millis(40),
    )
}

const ANSWERS: &[Answer] = &[
    Answer {
        marker: "tell me slowly",
        first: slowly,
        then: slowly,
    },
    Answer {
        marker: "Show your work, in markdown",
        first: || summary(MARKDOWN_ANSWER),
        then: || summary(MARKDOWN_ANSWER),
    },
    Answer {
        marker: "spend the budget",
        first: spending,
        then: || summary("spent"),
    },
    Answer {
        marker: "spend it all",
        first: spending,
        then: || summary("spent"),
    },
    Answer {
        marker: "write a long report",
        first: || summary(LONG_SUMMARIES[0]),
        then: || summary(LONG_SUMMARIES[0]),
    },
    Answer {
        marker: "write another long report",
        first: || summary(LONG_SUMMARIES[1]),
        then: || summary(LONG_SUMMARIES[1]),
    },
    Answer {
        marker: "say something nasty",
        first: || Step::reply(hostile_reply()),
        then: || summary("hostile"),
    },
    Answer {
        marker: "run echo hello",
        first: || Step::reply("<sh>echo hello</sh><update>running it</update>"),
        then: || summary("not run"),
    },
    Answer {
        marker: "fix the greeting",
        first: || {
            Step::reply("<set path=\"greeting.txt\">s/wrold/world/</set><update>fixing it</update>")
        },
        then: || summary("greeting fixed"),
    },
    Answer {
        marker: "stream some lines",
        first: || {
            Step::reply(
                "<sh>for i in 1 2 3; do echo line$i; sleep 1; done</sh><update>streaming</update>",
            )
        },
        then: || summary("streamed"),
    },
    Answer {
        marker: "take your time",
        first: || {
            Step::delayed(
                Duration::from_secs(60),
                Reply::new("<summarize>late</summarize>"),
            )
        },
        then: || {
            Step::delayed(
                Duration::from_secs(60),
                Reply::new("<summarize>late</summarize>"),
            )
        },
    },
    Answer {
        marker: "count slowly",
        // Turn 2 thinks long enough for the page to see it begin and the test to hold back
        // what follows.
        first: || Step::delayed(Duration::from_secs(2), Reply::new("<update>one</update>")),
        then: || {
            Step::delayed(
                Duration::from_secs(5),
                Reply::new("<summarize>counted</summarize>"),
            )
        },
    },
    Answer {
        marker: "3 + 3",
        first: || summary("six"),
        then: || summary("six"),
    },
    Answer {
        marker: "2 + 2",
        // Exact usage: 1010 tokens, which the proxy test's token cap takes past 80 %.
        first: || {
            Step::delayed(
                Duration::from_secs(4),
                Reply::new("<summarize>four</summarize>").with_usage(Usage {
                    prompt_tokens: 1000,
                    completion_tokens: 10,
                    cached_tokens: 0,
                    cost: 0.0,
                }),
            )
        },
        then: || summary("four"),
    },
];

/// The scripted model: each request answered by the first marker its messages hold.
fn scripted_model() -> FakeLlm {
    let seen: Arc<Mutex<HashMap<&'static str, usize>>> = Arc::default();
    FakeLlm::builder([])
        .when_exhausted(WhenExhausted::Respond(Arc::new(move |request: &Value| {
            let text = request["messages"].to_string();
            let Some(answer) = ANSWERS.iter().find(|answer| text.contains(answer.marker)) else {
                return summary("ok");
            };
            let mut seen = seen.lock().unwrap();
            let times = seen.entry(answer.marker).or_default();
            *times += 1;
            if *times == 1 {
                (answer.first)()
            } else {
                (answer.then)()
            }
        })))
        .start()
}

/// Chromium and the venv's python, or the test fails saying what is missing.
fn browser() -> (&'static str, PathBuf) {
    let chromium = ["/usr/bin/chromium", "/usr/bin/chromium-browser"]
        .into_iter()
        .find(|path| Path::new(path).exists())
        .expect(NEEDS);
    let python = tests_dir().join(".venv/bin/python");
    assert!(python.exists(), "{NEEDS}");
    (chromium, python)
}

fn tests_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/console")
}

fn shots() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("target/console-screenshots")
}

/// A server with a users file of a member, a viewer and an admin of project `web` (the viewer
/// and the admin also of `ops`), an MCP
/// server that cannot start ([`missing_mcp_command`]), and `extra` settings.
async fn team_server(llm: &FakeLlm, extra: &[(&str, &str)]) -> (TestApp, tempfile::TempDir) {
    let home = tempfile::tempdir().unwrap();
    std::fs::write(
        home.path().join("mcp.toml"),
        format!(
            "[[server]]\nname = \"docs\"\ncommand = {:?}\n",
            missing_mcp_command()
        ),
    )
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("users.toml");
    std::fs::write(
        &file,
        users(&[
            ("mo", "mo-token", "member", &["web"]),
            ("vera", "vera-token", "viewer", &["web", "ops"]),
            ("ada", "ada-token", "admin", &["*"]),
        ]),
    )
    .unwrap();
    let file = file.display().to_string();
    let mut env = llm_env(llm);
    env.extend_from_slice(&[
        ("RUMMY_AUTH_TOKEN", "shared-token"),
        ("RUMMY_USERS_FILE", file.as_str()),
        ("RUMMY_APPLY_EDITS", "server"),
        ("RUMMY_PRICE_fake", "3,0.3,15"),
        (
            "RUMMY_SANDBOX_LAUNCHER",
            env!("CARGO_BIN_EXE_rummy-sandbox"),
        ),
    ]);
    env.extend_from_slice(extra);
    (TestApp::start_in(home, &env, |plugins| plugins).await, dir)
}

/// Runs `browse.py <scenario>` with `env` against the console at `url`; fails the test
/// with the script's output when a check did not hold.
pub(crate) async fn browse(scenario: &str, url: String, env: &[(&str, String)]) {
    let (chromium, python) = browser();
    let output = tokio::process::Command::new(python)
        .arg("browse.py")
        .arg(scenario)
        .current_dir(tests_dir())
        .env("RUMMY_CONSOLE", url)
        .env("CHROMIUM", chromium)
        .env("SHOTS", shots())
        .envs(env.iter().map(|(name, value)| (name, value)))
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(Duration::from_secs(300), output)
        .await
        .expect("the browser finished within 5 minutes")
        .unwrap();
    assert!(
        output.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

#[actix_web::test]
#[ignore = "needs Debian's chromium and Playwright in tests/console/.venv: tests/run.sh installs both"]
async fn a_member_a_viewer_and_an_admin_use_the_console_in_chromium() {
    let llm = scripted_model();
    let (app, _users) = team_server(&llm, &[("RUMMY_CAP_DAY_DOLLARS", "100")]).await;
    let root = app.project_root("web");
    std::fs::write(root.join("greeting.txt"), "Hello, wrold!\n").unwrap();
    let mut operator = Client::connect(&format!("ws://{}/?token=shared-token", app.addr())).await;
    operator.init("web", &root).await;
    operator
        .ok("project/config", json!({"commands": "server"}))
        .await;
    let mut started = Vec::new();
    for (mode, prompt, status) in [
        ("ask", "write a long report", 200),
        ("ask", "write another long report", 200),
        ("ask", "say something nasty", 200),
        ("act", "run echo hello", 202),
        ("act", "fix the greeting", 202),
        ("act", "stream some lines", 202),
    ] {
        let outcome = operator
            .ok(mode, json!({"model": "fake", "prompt": prompt}))
            .await;
        assert_eq!(outcome["status"], json!(status), "{outcome}");
        started.push(outcome["run"].as_str().unwrap().to_string());
    }
    let paused = paused_runs(&app).await;

    browse(
        "team",
        format!("http://{}/ui/", app.addr()),
        &[
            ("MO", "mo-token".into()),
            ("VERA", "vera-token".into()),
            ("ADA", "ada-token".into()),
            ("HOSTILE_RUN", started[2].clone()),
            ("WAITING_RUN", started[3].clone()),
            ("EDIT_RUN", started[4].clone()),
            ("STREAM_RUN", started[5].clone()),
            (
                "LONG_SUMMARIES",
                serde_json::to_string(&LONG_SUMMARIES).unwrap(),
            ),
            ("MCP_ERROR_HOLDS", missing_mcp_command()),
            ("PAUSED_RUN", paused[0].clone()),
            ("RESUMABLE_RUN", paused[1].clone()),
        ],
    )
    .await;
    // The operator's connection read nothing while the browser worked, so the server may
    // have dropped it as silent (past `client_timeout_secs`): a new one reads the outcome.
    drop(operator);
    let mut operator = Client::connect(&format!("ws://{}/?token=shared-token", app.addr())).await;
    operator.init("web", &root).await;

    assert_eq!(
        std::fs::read_to_string(root.join("greeting.txt")).unwrap(),
        "Hello, world!\n",
        "the edit approved in the page is applied"
    );
    let waiting = operator.ok("getRun", json!({"run": started[3]})).await;
    let command = waiting["context"]["history"]
        .as_array()
        .unwrap()
        .iter()
        .find(|entry| entry["scheme"] == json!("sh"))
        .cloned()
        .unwrap();
    assert_eq!(
        command["status"],
        json!(200),
        "the command approved always ran: {command}"
    );
    let rules = operator.ok("rules/list", json!({})).await;
    assert_eq!(
        rules,
        json!({"rules": []}),
        "the rule made in the page was revoked in it"
    );
    let streamed = operator.ok("getRun", json!({"run": started[5]})).await;
    let commands: Vec<&Value> = streamed["context"]["history"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|entry| entry["scheme"] == json!("sh"))
        .collect();
    assert_eq!(commands.len(), 1, "one command: {commands:?}");
    assert_eq!(commands[0]["status"], json!(200), "run: {commands:?}");
    for page in [
        "sign-in",
        "projects",
        "runs",
        "runs-phone",
        "run",
        "run-edit",
        "run-output",
        "run-dark",
        "run-viewer",
        "memory",
        "usage",
        "admin",
        "webhooks",
        "run-paused",
    ] {
        assert!(shots().join(format!("{page}.png")).exists(), "{page}.png");
    }
}

#[actix_web::test]
#[ignore = "needs Debian's chromium and Playwright in tests/console/.venv: tests/run.sh installs both"]
async fn runs_read_as_titled_conversations_in_chromium() {
    let llm = scripted_model();
    let (app, _users) = team_server(&llm, &[]).await;
    let root = app.project_root("web");
    let mut operator = Client::connect(&format!("ws://{}/?token=shared-token", app.addr())).await;
    operator.init("web", &root).await;
    operator
        .ok("project/config", json!({"commands": "server"}))
        .await;
    let mut started = Vec::new();
    for (mode, prompt, status) in [
        ("ask", "What is 2 + 2?\nShow your work, in markdown.", 200),
        ("act", "run echo hello\nand tell me.", 202),
    ] {
        let outcome = operator
            .ok(mode, json!({"model": "fake", "prompt": prompt}))
            .await;
        assert_eq!(outcome["status"], json!(status), "{outcome}");
        started.push(outcome["run"].as_str().unwrap().to_string());
    }
    browse(
        "readable",
        format!("http://{}/ui/", app.addr()),
        &[
            ("MO", "mo-token".into()),
            ("WAITING_RUN", started[1].clone()),
        ],
    )
    .await;
    for page in ["runs-readable", "run-conversation", "run-steps"] {
        assert!(shots().join(format!("{page}.png")).exists(), "{page}.png");
    }
}

/// Two runs of project `ops` paused at a cap of 1,000 tokens a day; their aliases. The
/// operator's is paused at its own run cap; ada's at her person cap, set through `caps/set`,
/// which browse.py raises from the Admin page (and so resumes it).
async fn paused_runs(app: &TestApp) -> [String; 2] {
    let root = app.project_root("ops");
    let mut operator = Client::connect(&format!("ws://{}/?token=shared-token", app.addr())).await;
    operator.init("ops", &root).await;
    let outcome = operator
        .ok(
            "ask",
            json!({"model": "fake", "prompt": "spend the budget", "caps": {"day_tokens": 1000}}),
        )
        .await;
    assert_eq!(outcome["status"], json!(402), "{outcome}");
    let first = outcome["run"].as_str().unwrap().to_string();
    operator
        .ok(
            "caps/set",
            json!({"scope": "person", "subject": "ada", "caps": {"day_tokens": 1000}}),
        )
        .await;
    let mut ada = Client::connect(&format!("ws://{}/?token=ada-token", app.addr())).await;
    ada.init("ops", &root).await;
    let outcome = ada
        .ok("ask", json!({"model": "fake", "prompt": "spend it all"}))
        .await;
    assert_eq!(outcome["status"], json!(402), "{outcome}");
    assert_eq!(outcome["cap"]["scope"], json!("person"), "{outcome}");
    [first, outcome["run"].as_str().unwrap().to_string()]
}

#[actix_web::test]
#[ignore = "needs Debian's chromium, Playwright in tests/console/.venv and nginx: tests/run.sh installs them"]
async fn the_console_works_through_the_shipped_nginx_config() {
    let llm = scripted_model();
    let (app, _users) = team_server(&llm, &[("RUMMY_CAP_DAY_TOKENS", "1200")]).await;
    let root = app.project_root("web");
    let mut operator = Client::connect(&format!("ws://{}/?token=shared-token", app.addr())).await;
    operator.init("web", &root).await;
    let nginx = Nginx::start(app.addr().port()).await;
    browse(
        "proxy",
        format!("http://127.0.0.1:{}/ui/", nginx.port),
        &[
            ("MO", "mo-token".into()),
            ("SLOW_WORDS", SLOW_ANSWER.into()),
        ],
    )
    .await;
}

#[actix_web::test]
#[ignore = "needs Debian's chromium and Playwright in tests/console/.venv: tests/run.sh installs both"]
async fn a_runs_changed_files_are_shown_and_a_revert_goes_through_approval_in_chromium() {
    let llm = FakeLlm::start([
        Step::reply("<set path=\"greeting.txt\">s/wrold/world/</set><update>fixing</update>"),
        Step::reply("<summarize>greeting fixed</summarize>"),
    ]);
    let (app, _users) = team_server(&llm, &[]).await;
    let root = app.project_root("web");
    std::fs::write(root.join("greeting.txt"), "Hello, wrold!\n").unwrap();
    let mut operator = Client::connect(&format!("ws://{}/?token=shared-token", app.addr())).await;
    operator.init("web", &root).await;
    let (run, path) = operator.act_until_proposal("fix the greeting").await;
    let done = operator
        .ok(
            "run/resolve",
            json!({"run": run, "resolution": {"path": path, "action": "accept"}}),
        )
        .await;
    assert_eq!(done["status"], json!(200), "{done}");
    let greeting = || std::fs::read_to_string(root.join("greeting.txt")).unwrap();
    assert_eq!(greeting(), "Hello, world!\n");
    browse(
        "changes",
        format!("http://{}/ui/", app.addr()),
        &[("MO", "mo-token".into()), ("CHANGES_RUN", run)],
    )
    .await;
    assert_eq!(
        greeting(),
        "Hello, wrold!\n",
        "the revert was approved and applied"
    );
    assert!(shots().join("run-changes.png").exists());
}

#[actix_web::test]
#[ignore = "needs Debian's chromium and Playwright in tests/console/.venv: tests/run.sh installs both"]
async fn the_inbox_is_counted_in_the_tab_title_and_new_items_notified_once_asked() {
    let llm = scripted_model();
    let (app, _users) = team_server(&llm, &[]).await;
    let root = app.project_root("web");
    let mut operator = Client::connect(&format!("ws://{}/?token=shared-token", app.addr())).await;
    operator.init("web", &root).await;
    let waiting = operator
        .ok("act", json!({"model": "fake", "prompt": "run echo hello"}))
        .await;
    assert_eq!(waiting["status"], json!(202), "{waiting}");
    browse(
        "inbox",
        format!("http://{}/ui/", app.addr()),
        &[("MO", "mo-token".into())],
    )
    .await;
}

#[actix_web::test]
#[ignore = "needs Debian's chromium and Playwright in tests/console/.venv: tests/run.sh installs both"]
async fn a_reply_is_read_in_the_run_page_as_the_model_writes_it() {
    let words = format!(
        "{}and that is all.",
        "The model writes this reply a few words at a time, ".repeat(5)
    );
    let llm = FakeLlm::start([
        Step::reply("<summarize>Ready.</summarize>"),
        Step::Paced(
            Reply::new(format!("<summarize>{words}</summarize>")),
            Duration::from_millis(40),
        ),
    ]);
    let (app, _users) = team_server(&llm, &[]).await;
    let root = app.project_root("web");
    let mut operator = Client::connect(&format!("ws://{}/?token=shared-token", app.addr())).await;
    operator.init("web", &root).await;
    let outcome = operator
        .ok("ask", json!({"model": "fake", "prompt": "are you ready?"}))
        .await;
    let run = outcome["run"].as_str().unwrap().to_string();
    browse(
        "live",
        format!("http://{}/ui/", app.addr()),
        &[
            ("MO", "mo-token".into()),
            ("LIVE_RUN", run),
            ("LIVE_WORDS", words),
        ],
    )
    .await;
    assert_eq!(llm.requests().len(), 2, "one call for the continued run");
}

/// A member mints tokens from the Tokens page, each shown once; revokes one; the admin
/// revokes the other: both then open nothing, and the audit says who revoked each.
#[actix_web::test]
#[ignore = "needs Debian's chromium and Playwright in tests/console/.venv: tests/run.sh installs both"]
async fn personal_tokens_are_minted_shown_once_and_revoked_in_chromium() {
    let llm = scripted_model();
    let (app, users) = team_server(&llm, &[]).await;
    let out = users.path().join("tokens.json");
    browse(
        "tokens",
        format!("http://{}/ui/", app.addr()),
        &[
            ("MO", "mo-token".into()),
            ("ADA", "ada-token".into()),
            ("TOKENS_OUT", out.display().to_string()),
        ],
    )
    .await;
    let minted: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    for name in ["laptop", "ci"] {
        let token = minted[name].as_str().unwrap();
        let refused = awc::Client::new()
            .ws(format!("ws://{}/", app.addr()))
            .bearer_auth(token)
            .connect()
            .await;
        assert!(
            matches!(&refused, Err(awc::error::WsClientError::InvalidResponseStatus(status)) if status.as_u16() == 401),
            "{name} still opens the server"
        );
    }
    let mut operator = Client::connect(&format!("ws://{}/?token=shared-token", app.addr())).await;
    let changes = operator.ok("admin/changes", json!({})).await;
    let revokers: Vec<(&str, &str)> = changes["changes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|change| change["action"] == "tokens/revoke")
        .map(|change| {
            (
                change["by"].as_str().unwrap(),
                change["detail"]["name"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(revokers, [("ada", "ci"), ("mo", "laptop")]);
}

#[actix_web::test]
#[ignore = "needs Debian's chromium and Playwright in tests/console/.venv: tests/run.sh installs both"]
async fn a_person_sets_their_provider_key_in_the_keys_page_and_never_sees_it_again() {
    const KEY: &str = "sk-console-3e9b1c7a5d";
    let llm = FakeLlm::start([summary("Done.")]);
    let (app, _users) = team_server(&llm, &[("OPENAI_API_KEY", "sk-the-servers")]).await;
    let root = app.project_root("web");
    let mut mo = Client::connect(&format!("ws://{}/?token=mo-token", app.addr())).await;
    mo.init("web", &root).await;
    browse(
        "keys",
        format!("http://{}/ui/", app.addr()),
        &[
            ("MO", "mo-token".into()),
            ("ADA", "ada-token".into()),
            ("KEY", KEY.into()),
        ],
    )
    .await;
    let listed = mo.ok("keys/list", json!({})).await;
    let providers: Vec<&str> = listed["keys"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|key| key["provider"].as_str())
        .collect();
    assert_eq!(providers, ["openai"], "{listed}");
    assert_eq!(
        mo.ok("keys/required", json!({})).await["required"],
        json!(true)
    );
    let outcome = mo
        .ok("ask", json!({"model": "fake", "prompt": "whose key?"}))
        .await;
    assert_eq!(outcome["status"], json!(200), "{outcome}");
    let carried = llm.recorded()[0].header("authorization").map(str::to_owned);
    assert_eq!(
        carried,
        Some(format!("Bearer {KEY}")),
        "the key the page set"
    );
}
