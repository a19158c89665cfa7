//! `rummy sandbox-exec` (issue 27): the built binary confines a command given as a JSON spec.
//! Each test runs a real shell command and checks what it could and could not do; CI runs
//! as root, so each also shows the confinement holds for root.

use std::path::Path;
use std::time::Duration;

use serde_json::{json, Value};
use tokio::io::AsyncWriteExt;

/// What one confined command did.
struct Outcome {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

/// A project root, a scratch dir and, beside them, a directory the command must not see.
struct Dirs {
    root: tempfile::TempDir,
    tmp: tempfile::TempDir,
    outside: tempfile::TempDir,
}

impl Dirs {
    fn new() -> Dirs {
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret"), "the secret").unwrap();
        Dirs {
            root: tempfile::tempdir().unwrap(),
            tmp: tempfile::tempdir().unwrap(),
            outside,
        }
    }

    /// A spec running `command` here, with `extra` fields merged in.
    fn spec(&self, command: &str, extra: Value) -> Value {
        let mut spec = json!({
            "command": command,
            "root": self.root.path(),
            "tmp": self.tmp.path(),
        });
        for (key, value) in extra.as_object().unwrap() {
            spec[key] = value.clone();
        }
        spec
    }

    async fn run(&self, command: &str) -> Outcome {
        launch(&self.spec(command, json!({})).to_string()).await
    }

    fn outside(&self) -> &Path {
        self.outside.path()
    }
}

/// Runs `rummy sandbox-exec` with `spec` on stdin (and a variable the command must not see).
async fn launch(spec: &str) -> Outcome {
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_rummy"))
        .arg("sandbox-exec")
        .env("RUMMY_TEST_SECRET_KEY", "leaked")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(spec.as_bytes()).await.unwrap();
    drop(stdin);
    let output = tokio::time::timeout(Duration::from_secs(60), child.wait_with_output())
        .await
        .expect("the sandbox ends")
        .unwrap();
    Outcome {
        code: output.status.code(),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

/// Whether the running kernel is at least `major.minor` (Landlock ABI 4 came with 6.7,
/// ABI 6 with 6.12). An older kernel skips the test with a note, except under `CI=true`,
/// where it fails: CI's kernel must show the rule holds.
fn kernel_at_least(major: u32, minor: u32, needed_for: &str) -> bool {
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap();
    let mut parts = release.split(|c: char| !c.is_ascii_digit());
    let found_major: u32 = parts.next().unwrap().parse().unwrap();
    let found_minor: u32 = parts.next().unwrap().parse().unwrap();
    let new_enough = (found_major, found_minor) >= (major, minor);
    if !new_enough {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "{needed_for} needs Linux {major}.{minor}; this is {release}"
        );
        eprintln!("skipped: {needed_for} needs Linux {major}.{minor}; this is {release}");
    }
    new_enough
}

fn assert_refused(outcome: &Outcome, message: &str) {
    assert_ne!(outcome.code, Some(0), "{}", outcome.stdout);
    assert_ne!(
        outcome.code,
        Some(125),
        "the sandbox failed: {}",
        outcome.stderr
    );
    assert!(
        outcome.stderr.contains(message),
        "expected {message:?} in {:?}",
        outcome.stderr
    );
}

#[tokio::test]
async fn ordinary_work_in_the_root_succeeds() {
    let dirs = Dirs::new();
    let outcome = dirs
        .run(
            "echo hi > f && cat f && head -1 /etc/passwd && ls /usr && \
             mkdir -p a b && echo x > a/f && mv a/f b/ && cat b/f > /dev/null && \
             echo scratch > \"$HOME/s\" && python3 -c 'print(6 * 7)'",
        )
        .await;
    assert_eq!(outcome.code, Some(0), "{}", outcome.stderr);
    assert!(
        outcome.stdout.starts_with("hi\nroot:"),
        "{}",
        outcome.stdout
    );
    assert!(outcome.stdout.contains("\nbin\n"), "{}", outcome.stdout);
    assert!(outcome.stdout.ends_with("42\n"), "{}", outcome.stdout);
    assert_eq!(
        std::fs::read_to_string(dirs.root.path().join("f")).unwrap(),
        "hi\n"
    );
    assert!(dirs.root.path().join("b/f").exists());
    assert!(dirs.tmp.path().join("s").exists());
}

#[tokio::test]
async fn the_command_s_exit_status_is_relayed() {
    let dirs = Dirs::new();
    assert_eq!(dirs.run("exit 7").await.code, Some(7));
    assert_eq!(dirs.run("kill -9 $$").await.code, Some(128 + 9));
}

#[tokio::test]
async fn writing_outside_the_root_is_denied() {
    let dirs = Dirs::new();
    let target = dirs.outside().join("out");
    let outcome = dirs.run(&format!("echo x > {}", target.display())).await;
    assert_refused(&outcome, "Permission denied");
    assert!(!target.exists());
}

#[tokio::test]
async fn reading_another_directory_is_denied() {
    let dirs = Dirs::new();
    let outcome = dirs
        .run(&format!("cat {}/secret", dirs.outside().display()))
        .await;
    assert_refused(&outcome, "Permission denied");
    assert!(!outcome.stdout.contains("the secret"));
}

#[tokio::test]
async fn etc_shadow_is_unreadable_even_for_root() {
    let dirs = Dirs::new();
    assert_refused(&dirs.run("cat /etc/shadow").await, "Permission denied");
}

#[tokio::test]
async fn a_symlink_in_the_root_does_not_lead_outside() {
    let dirs = Dirs::new();
    let outcome = dirs
        .run(&format!(
            "ln -s {}/secret l && cat l",
            dirs.outside().display()
        ))
        .await;
    assert_refused(&outcome, "Permission denied");
    assert!(!outcome.stdout.contains("the secret"));
}

#[tokio::test]
async fn processes_outside_cannot_be_signalled() {
    if !kernel_at_least(6, 12, "Landlock signal scoping (ABI 6)") {
        return;
    }
    let dirs = Dirs::new();
    assert_eq!(dirs.run("kill -0 $$").await.code, Some(0));
    let outcome = dirs.run(&format!("kill -0 {}", std::process::id())).await;
    assert_refused(&outcome, "Operation not permitted");
}

/// A Python one-liner connecting to `port` on loopback.
fn connect(port: u16) -> String {
    format!("python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", {port}))'")
}

#[tokio::test]
async fn no_network_socket_can_be_opened_by_default() {
    let dirs = Dirs::new();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    assert_refused(&dirs.run(&connect(port)).await, "PermissionError");
    assert!(listener.accept().is_err(), "the listener was reached");
}

#[tokio::test]
async fn only_the_allowed_tcp_ports_are_reachable() {
    if !kernel_at_least(6, 7, "Landlock TCP rules (ABI 4)") {
        return;
    }
    let dirs = Dirs::new();
    let allowed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let other = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    other.set_nonblocking(true).unwrap();
    let allowed_port = allowed.local_addr().unwrap().port();
    let other_port = other.local_addr().unwrap().port();
    let ports = json!({ "ports": [allowed_port] });
    let reached = launch(&dirs.spec(&connect(allowed_port), ports.clone()).to_string()).await;
    assert_eq!(reached.code, Some(0), "{}", reached.stderr);
    let refused = launch(&dirs.spec(&connect(other_port), ports).to_string()).await;
    assert_refused(&refused, "PermissionError");
    assert!(other.accept().is_err(), "the other listener was reached");
}

#[tokio::test]
async fn namespaces_cannot_be_created() {
    let dirs = Dirs::new();
    assert_refused(
        &dirs.run("unshare -r true").await,
        "Operation not permitted",
    );
}

#[tokio::test]
async fn no_capability_survives_even_for_root() {
    let dirs = Dirs::new();
    let outcome = dirs.run("touch f && chown 12345 f").await;
    assert_refused(&outcome, "Operation not permitted");
    let setuid = dirs.run("python3 -c 'import os; os.setuid(12345)'").await;
    assert_refused(&setuid, "PermissionError");
}

#[tokio::test]
async fn the_limits_are_set() {
    let dirs = Dirs::new();
    let limits = json!({ "limits": { "cpu_seconds": 3, "open_files": 64 } });
    let spec = dirs.spec("ulimit -t; ulimit -n; ulimit -c", limits);
    let outcome = launch(&spec.to_string()).await;
    assert_eq!(outcome.code, Some(0), "{}", outcome.stderr);
    assert_eq!(outcome.stdout, "3\n64\n0\n");
}

#[tokio::test]
async fn the_environment_is_built_from_nothing() {
    let dirs = Dirs::new();
    let spec = dirs.spec("env", json!({ "env": { "CARGO_TERM_COLOR": "never" } }));
    let outcome = launch(&spec.to_string()).await;
    assert_eq!(outcome.code, Some(0), "{}", outcome.stderr);
    assert!(!outcome.stdout.contains("RUMMY"), "{}", outcome.stdout);
    let home = format!("HOME={}\n", dirs.tmp.path().display());
    assert!(outcome.stdout.contains(&home), "{}", outcome.stdout);
    assert!(outcome.stdout.contains("CARGO_TERM_COLOR=never\n"));
    assert!(outcome
        .stdout
        .contains("PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin\n"));
}

#[tokio::test]
async fn background_processes_do_not_outlive_the_command() {
    let dirs = Dirs::new();
    let outcome = dirs
        .run("sleep 7301 & setsid sleep 7302 & (setsid sh -c 'sleep 7303' &); echo ok")
        .await;
    assert_eq!(outcome.code, Some(0), "{}", outcome.stderr);
    assert_eq!(outcome.stdout, "ok\n");
    let left: Vec<String> = std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|entry| std::fs::read(entry.path().join("cmdline")).ok())
        .map(|cmdline| String::from_utf8_lossy(&cmdline).replace('\0', " "))
        .filter(|cmdline| cmdline.starts_with("sleep 730"))
        .collect();
    assert!(left.is_empty(), "still running: {left:?}");
}

#[tokio::test]
async fn a_bad_spec_fails_set_up_and_runs_nothing() {
    let outcome = launch("{\"command\": \"touch /tmp/never\"}").await;
    assert_eq!(outcome.code, Some(125));
    assert!(
        outcome.stderr.starts_with("rummy sandbox: "),
        "{}",
        outcome.stderr
    );
    let dirs = Dirs::new();
    let relative = json!({ "command": "true", "root": "rel", "tmp": dirs.tmp.path() });
    let outcome = launch(&relative.to_string()).await;
    assert_eq!(outcome.code, Some(125));
    assert!(
        outcome.stderr.contains("not an absolute path"),
        "{}",
        outcome.stderr
    );
}

/// A Python one-liner making system call `number` with `args` and printing the error.
fn syscall(number: i64, args: &str) -> String {
    format!(
        "python3 -c 'import ctypes, os; c = ctypes.CDLL(None, use_errno=True); \
         r = c.syscall({number}, {args}); print(r, os.strerror(ctypes.get_errno()))'"
    )
}

#[tokio::test]
async fn calls_reaching_the_kernel_or_other_processes_are_refused() {
    let dirs = Dirs::new();
    let clone_new_user = syscall(libc::SYS_clone, "0x10000000 | 17, 0, 0, 0, 0");
    let clone3 = syscall(libc::SYS_clone3, "0, 0");
    let attach = format!("16, {}, 0, 0", std::process::id());
    let ptrace = syscall(libc::SYS_ptrace, &attach);
    let outcome = dirs
        .run(&format!("{clone_new_user}; {clone3}; {ptrace}"))
        .await;
    assert_eq!(outcome.code, Some(0), "{}", outcome.stderr);
    assert_eq!(
        outcome.stdout,
        "-1 Operation not permitted\n-1 Function not implemented\n-1 Operation not permitted\n"
    );
    assert_refused(
        &dirs.run("setarch -R true").await,
        "Operation not permitted",
    );
    assert_eq!(dirs.run("setarch \"$(uname -m)\" true").await.code, Some(0));
}
