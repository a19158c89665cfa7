//! The shipped image's conditions, made without a container runtime: the server as an
//! unprivileged user (no capabilities, no pids cgroup it may write) on a read-only root file
//! system where only its home and the projects are writable, running the commands of its
//! projects on the server (issue 27). Setting that up needs root (a mount namespace, then
//! `setpriv` to `nobody`), so the test is ignored and `tests/run.sh` runs it as root.

use std::path::Path;
use std::process::{Child, Command, Stdio};

use serde_json::json;

use crate::process::{free_port, wait_until_healthy};
use crate::support::{llm_env, Client};
use rummy::testing::fake_llm::{FakeLlm, Step};

/// The unprivileged user and group the server runs as (`nobody`, `nogroup` on Debian).
const NOBODY: u32 = 65534;
/// The processes a command may start: fewer than the server's own threads, which
/// `RLIMIT_NPROC` counts too.
const PROCESSES: usize = 8;

/// The server started as [`NOBODY`] in a mount namespace whose root is read-only but for
/// `writable`; killed when dropped.
struct ConfinedServer {
    child: Child,
    port: u16,
}

impl ConfinedServer {
    fn start(writable: &Path, home: &Path, llm: &FakeLlm) -> ConfinedServer {
        let port = free_port();
        let script = format!(
            "mount --bind \"$1\" \"$1\" && mount -o remount,bind,ro / && \
             exec setpriv --reuid={NOBODY} --regid={NOBODY} --clear-groups \
             --inh-caps=-all --bounding-set=-all -- \"$2\""
        );
        let child = Command::new("unshare")
            .args(["--mount", "--propagation", "private", "--", "sh", "-c"])
            .arg(script)
            .arg("sh")
            .arg(writable)
            .arg(env!("CARGO_BIN_EXE_rummy"))
            .env_clear()
            .env("PATH", "/usr/local/bin:/usr/bin:/bin")
            .env("RUMMY_HOME", home)
            .env("PORT", port.to_string())
            .env("RUMMY_LOG", "warn")
            .env("RUMMY_RUN_COMMANDS", "server")
            .env(
                "RUMMY_SANDBOX_LAUNCHER",
                env!("CARGO_BIN_EXE_rummy-sandbox"),
            )
            .env("RUMMY_SANDBOX_MAX_PROCESSES", PROCESSES.to_string())
            .env("RUMMY_SANDBOX_MAX_WALL_SECS", "8")
            .env("RUMMY_SANDBOX_MAX_CPU_SECS", "2")
            .envs(llm_env(llm))
            .stdout(Stdio::null())
            .spawn()
            .expect("unshare and setpriv (util-linux) are installed");
        ConfinedServer { child, port }
    }
}

impl Drop for ConfinedServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `path`, created and given to [`NOBODY`].
fn owned_by_nobody(path: &Path) {
    std::fs::create_dir_all(path).unwrap();
    std::os::unix::fs::chown(path, Some(NOBODY), Some(NOBODY)).unwrap();
}

/// The command the model proposes, accepted: the status it ended with and its output, as
/// `run/output` streamed them.
async fn accepted(client: &mut Client, prompt: &str) -> (i64, String) {
    let (run, path) = client.act_until_proposal(prompt).await;
    client
        .ok(
            "run/resolve",
            json!({"run": run, "resolution": {"path": path, "action": "accept"}}),
        )
        .await;
    let mut output = String::new();
    loop {
        let params = client.notification("run/output").await["params"].clone();
        assert_eq!(params["run"], json!(run));
        output.push_str(params["text"].as_str().unwrap_or_default());
        if params["done"] == json!(true) {
            return (params["status"].as_i64().unwrap_or_default(), output);
        }
    }
}

#[actix_web::test]
#[ignore = "needs root: makes a read-only root in a mount namespace and drops to an unprivileged user, as the image runs"]
async fn an_unprivileged_server_on_a_read_only_root_runs_commands_confined() {
    let writable = tempfile::tempdir().unwrap();
    let (home, root) = (
        writable.path().join("home"),
        writable.path().join("project"),
    );
    owned_by_nobody(writable.path());
    owned_by_nobody(&home);
    owned_by_nobody(&root);
    let commands = [
        "echo built > made.txt && cat made.txt && id -u",
        "touch /usr/planted; touch ../planted; head -c 16 ../home/rummy.db",
        "f() { f | f & }; f; sleep 1",
        "python3 -c 'import os; print(os.cpu_count() > 0)'",
    ];
    let steps = commands.iter().flat_map(|command| {
        [
            Step::reply(format!("<sh>{command}</sh><update>running it</update>")),
            Step::reply("<summarize>ran it</summarize>"),
        ]
    });
    let llm = FakeLlm::start(steps);
    let server = ConfinedServer::start(writable.path(), &home, &llm);
    wait_until_healthy(server.port).await;
    let threads = std::fs::read_dir(format!("/proc/{}/task", server.child.id()))
        .unwrap()
        .count();
    assert!(
        threads > PROCESSES,
        "the server alone runs more tasks ({threads}) than a command may start"
    );
    let mut client = Client::connect(&format!("ws://127.0.0.1:{}/", server.port)).await;
    client.init("image", &root).await;

    let (status, body) = accepted(&mut client, "build").await;
    assert_eq!((status, body.as_str()), (200, "built\n65534\n"));
    assert_eq!(
        std::fs::read_to_string(root.join("made.txt")).unwrap(),
        "built\n"
    );

    let (status, body) = accepted(&mut client, "escape").await;
    assert_ne!(status, 200, "{body}");
    assert!(!body.contains("SQLite format"), "{body}");
    assert!(!writable.path().join("planted").exists());

    let (status, body) = accepted(&mut client, "fork bomb").await;
    assert!(
        body.contains("Cannot fork"),
        "the process limit held: {status} {body}"
    );

    // What the bomb started was killed with it: the next command may start processes again.
    let (status, body) = accepted(&mut client, "the server still runs commands").await;
    assert_eq!((status, body.as_str()), (200, "True\n"));
    wait_until_healthy(server.port).await;
}
