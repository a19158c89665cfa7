//! A plugin process's life (docs/src/plugins-at-run-time.md): each start is a process group
//! (and a pids cgroup where the server has them) killed as one tree, so nothing it started
//! outlives a restart after a failure, its disabling, an admin's `plugins/restart` or the
//! server's stop (the tests' graceful stop, and a `rummy` process's SIGTERM); the stop tells
//! it `shutdown` first; and a slow plugin's own timeout (its
//! manifest's or its file's) keeps its calls from failing.

use std::path::Path;

use rummy::testing::fake_llm::{FakeLlm, Step};
use serde_json::json;

use crate::plugin_processes::{entries, program, status_of};
use crate::process::ServerProcess;
use crate::support::{eventually, Client, TestApp};

/// One start of `tests/plugins/tree.sh`: the shell and the `sleep` it left in the
/// background.
#[derive(Debug, Clone, Copy)]
struct Tree {
    shell: u32,
    sleep: u32,
}

/// The starts `tree.sh` noted in `log`, once there are `count`.
async fn started(log: &Path, count: usize) -> Vec<Tree> {
    eventually("the plugin's starts", async || {
        let text = std::fs::read_to_string(log).ok()?;
        let trees: Vec<Tree> = text
            .lines()
            .filter_map(|line| {
                let mut words = line.strip_prefix("started ")?.split(' ');
                Some(Tree {
                    shell: words.next()?.parse().ok()?,
                    sleep: words.next()?.parse().ok()?,
                })
            })
            .collect();
        (trees.len() == count).then_some(trees)
    })
    .await
}

/// The process group and state of `pid`, from `/proc/<pid>/stat` (`None`: no such process).
fn group_and_state(pid: u32) -> Option<(u32, char)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let mut fields = stat.rsplit_once(')')?.1.split_whitespace();
    let state = fields.next()?.chars().next()?;
    let group = fields.nth(1)?.parse().ok()?;
    Some((group, state))
}

/// The living processes (not zombies) whose process group is `group`.
fn living_in_group(group: u32) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            group_and_state(*pid).is_some_and(|(its, state)| its == group && state != 'Z')
        })
        .collect()
}

fn alive(pid: u32) -> bool {
    group_and_state(pid).is_some_and(|(_, state)| state != 'Z')
}

/// Waits until nothing of `tree` lives: neither its shell, nor its `sleep`, nor anything in
/// its process group.
async fn gone(tree: Tree, after: &str) {
    eventually(&format!("nothing of the plugin left {after}"), async || {
        let left = !alive(tree.shell) && !alive(tree.sleep);
        (left && living_in_group(tree.shell).is_empty()).then_some(())
    })
    .await;
}

/// A tree running now: its `sleep` alive in the shell's process group.
fn running(tree: Tree) {
    assert!(alive(tree.shell), "{tree:?}");
    assert_eq!(
        group_and_state(tree.sleep).map(|(group, _)| group),
        Some(tree.shell),
        "the plugin leads a process group of its own: {tree:?}"
    );
}

/// Asks once; the `<hang>` call is a 502 (the plugin timed out), and the loop completes.
async fn ask_hanging(app: &TestApp, client: &mut Client) {
    let result = client
        .ok("ask", json!({"model": "fake", "prompt": "try"}))
        .await;
    assert_eq!(result["status"], json!(200), "{result}");
    let run = result["run"].as_str().unwrap();
    let hung = entries(app, client, run, "hang://*").await;
    assert_eq!(hung[0].1, 502, "{hung:?}");
}

#[actix_web::test]
async fn a_plugin_leaves_no_process_behind_when_restarted_disabled_or_stopped() {
    let asks = (0..2).flat_map(|_| {
        [
            Step::reply("<hang>x</hang><update>trying</update>"),
            Step::reply("<summarize>done</summarize>"),
        ]
    });
    let llm = FakeLlm::start(asks);
    let logs = tempfile::tempdir().unwrap();
    let log = logs.path().join("tree.log");
    let line = format!("sh {} {}", program("tree.sh"), log.display());
    let env = [
        ("RUMMY_PLUGIN_TREE", line.as_str()),
        ("RUMMY_PLUGINS_MAX_FAILURES", "2"),
        ("RUMMY_PLUGINS_TIMEOUT_MS", "300"),
    ];
    let app = TestApp::with_llm(&llm, &env).await;
    let (mut client, _) = app.client_in_project("trees").await;
    let first = started(&log, 1).await[0];
    running(first);

    ask_hanging(&app, &mut client).await;
    gone(first, "after its failure").await;
    let second = started(&log, 2).await[1];
    running(second);

    ask_hanging(&app, &mut client).await;
    gone(second, "once disabled").await;
    assert_eq!(status_of(&mut client, "tree").await["state"], "disabled");

    let restarted = client.ok("plugins/restart", json!({"name": "tree"})).await;
    assert_eq!(
        (&restarted["state"], &restarted["failures"]),
        (&json!("running"), &json!(0)),
        "{restarted}"
    );
    let third = started(&log, 3).await[2];
    running(third);
    assert_eq!(status_of(&mut client, "tree").await["state"], "running");

    let again = client.ok("plugins/restart", json!({"name": "tree"})).await;
    assert_eq!(again["state"], "running", "{again}");
    gone(third, "after an admin's restart").await;
    let fourth = started(&log, 4).await[3];
    running(fourth);

    app.server.stop().await;
    gone(fourth, "after the server stopped").await;
    let noted = std::fs::read_to_string(&log).unwrap();
    assert_eq!(
        noted.lines().filter(|line| *line == "shutdown").count(),
        2,
        "told to shut down before its restart and before the stop:\n{noted}"
    );
    assert!(noted.ends_with("shutdown\n"), "{noted}");
}

#[actix_web::test]
async fn a_rummy_process_stopped_by_sigterm_leaves_no_plugin_process_behind() {
    let llm = FakeLlm::start([]);
    let home = tempfile::tempdir().unwrap();
    let log = home.path().join("tree.log");
    let line = format!("sh {} {}", program("tree.sh"), log.display());
    let env = [("RUMMY_PLUGIN_TREE", line.as_str())];
    let server = ServerProcess::start_with(home.path(), &llm, &env).await;
    let tree = started(&log, 1).await[0];
    running(tree);
    let stopped = server.stop_with("-TERM");
    assert!(stopped.success(), "{stopped}");
    gone(tree, "after SIGTERM").await;
    let noted = std::fs::read_to_string(&log).unwrap();
    assert!(noted.ends_with("shutdown\n"), "{noted}");
}

#[actix_web::test]
async fn plugins_restart_is_an_admins_and_names_a_plugin_that_started() {
    let llm = FakeLlm::start([]);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("users.toml");
    let people = crate::access::users(&[("mo", "mo-token", "member", &["web"])]);
    std::fs::write(&file, people).unwrap();
    let (file, log) = (file.display().to_string(), dir.path().join("tree.log"));
    let line = format!("sh {} {}", program("tree.sh"), log.display());
    let env = [
        ("RUMMY_AUTH_TOKEN", "shared-token"),
        ("RUMMY_USERS_FILE", file.as_str()),
        ("RUMMY_PLUGIN_TREE", line.as_str()),
        ("RUMMY_PLUGIN_OFF", line.as_str()),
        ("RUMMY_PLUGINS_DISABLED", "off"),
    ];
    let app = TestApp::with_llm(&llm, &env).await;
    let connect =
        async |token: &str| Client::connect(&format!("ws://{}/?token={token}", app.addr())).await;
    let mut mo = connect("mo-token").await;
    let (code, _) = mo.err("plugins/restart", json!({"name": "tree"})).await;
    assert_eq!(code, -32005, "a member may not restart a plugin");
    let mut admin = connect("shared-token").await;
    let (code, message) = admin.err("plugins/restart", json!({"name": "nope"})).await;
    assert_eq!(
        (code, message.as_str()),
        (-32602, "no plugin process named nope")
    );
    let (code, message) = admin.err("plugins/restart", json!({"name": "off"})).await;
    assert_eq!(
        (code, message.as_str()),
        (
            -32602,
            "plugin off did not start with rummy, so it added nothing to restart"
        )
    );
    started(&log, 1).await;
    app.server.stop().await;
}

/// A server with three plugins of `tests/plugins/slow.py`, each answering its tool after a
/// second while calls time out after 300 ms: `slow_manifest` asks for 5 s in its manifest,
/// `slow_file`'s declaration file gives it 5 s, `slow_none` has the setting's.
async fn slow_plugins(llm: &FakeLlm) -> TestApp {
    let home = tempfile::tempdir().unwrap();
    let plugins = home.path().join("plugins");
    std::fs::create_dir_all(&plugins).unwrap();
    let slow = |args: &[&str]| {
        let mut all = vec![program("slow.py")];
        all.extend(args.iter().map(|arg| (*arg).to_owned()));
        all
    };
    let declared = [
        (
            "slow_manifest",
            json!({"command": "python3", "args": slow(&["--tag", "slow_manifest", "--timeout-ms", "5000"])}),
        ),
        (
            "slow_file",
            json!({"command": "python3", "args": slow(&["--tag", "slow_file"]), "timeout_ms": 5000}),
        ),
        (
            "slow_none",
            json!({"command": "python3", "args": slow(&["--tag", "slow_none"])}),
        ),
    ];
    for (name, declaration) in declared {
        let file = plugins.join(format!("{name}.json"));
        std::fs::write(file, declaration.to_string()).unwrap();
    }
    let mut env = crate::support::llm_env(llm);
    env.push(("RUMMY_PLUGINS_TIMEOUT_MS", "300"));
    TestApp::start_in(home, &env, |plugins| plugins).await
}

#[actix_web::test]
async fn a_slow_plugin_waits_its_own_timeout_from_its_manifest_or_its_file() {
    let llm = FakeLlm::start([
        Step::reply(
            "<slow_manifest>a</slow_manifest><slow_file>b</slow_file><slow_none>c</slow_none>\
             <update>waiting</update>",
        ),
        Step::reply("<summarize>done</summarize>"),
    ]);
    let app = slow_plugins(&llm).await;
    let (mut client, _) = app.client_in_project("slow").await;
    let result = client
        .ok("ask", json!({"model": "fake", "prompt": "slowly"}))
        .await;
    assert_eq!(result["status"], json!(200), "{result}");
    let run = result["run"].as_str().unwrap();
    let status = async |client: &mut Client, tag: &str| {
        let called = entries(&app, client, run, &format!("{tag}://*")).await;
        (called[0].1, called[0].2.clone())
    };
    assert_eq!(
        status(&mut client, "slow_manifest").await,
        (200, "slow a".to_owned())
    );
    assert_eq!(
        status(&mut client, "slow_file").await,
        (200, "slow b".to_owned())
    );
    assert_eq!(
        status(&mut client, "slow_none").await,
        (502, "the plugin did not answer within 300 ms".to_owned()),
        "the setting's timeout where neither says"
    );
    for name in ["slow_manifest", "slow_file"] {
        let state = status_of(&mut client, name).await;
        assert_eq!(
            (&state["state"], &state["failures"]),
            (&json!("running"), &json!(0)),
            "{state}"
        );
    }
}
