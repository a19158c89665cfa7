//! `rummy sandbox-exec` (issue 27): the built binary confines a command given as a JSON spec.
//! Each test runs a real shell command and checks what it could and could not do; CI runs
//! as root, so each also shows the confinement holds for root.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;
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
            "server_pid": std::process::id(),
            "read": etc_readable(),
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

/// The readable part of `/etc`, as the server gives it in each spec (computed once).
fn etc_readable() -> &'static [PathBuf] {
    static LIST: OnceLock<Vec<PathBuf>> = OnceLock::new();
    LIST.get_or_init(rummy::testing::sandbox::etc_readable)
}

/// Runs `rummy-sandbox sandbox-exec` with `spec` on stdin (and a variable the command must
/// not see).
async fn launch(spec: &str) -> Outcome {
    launch_with(env!("CARGO_BIN_EXE_rummy-sandbox"), spec).await
}

/// [`launch`] with the binary `launcher`.
async fn launch_with(launcher: &str, spec: &str) -> Outcome {
    let mut child = tokio::process::Command::new(launcher)
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

/// The kernel's Landlock ABI (0 without Landlock), from `landlock_create_ruleset(NULL, 0,
/// LANDLOCK_CREATE_RULESET_VERSION)` made by Python: known apart from the code under test.
async fn kernel_landlock_abi() -> u8 {
    let script = format!(
        "import ctypes; print(max(ctypes.CDLL(None).syscall({}, None, 0, 1), 0))",
        libc::SYS_landlock_create_ruleset
    );
    let output = tokio::process::Command::new("python3")
        .args(["-c", &script])
        .output()
        .await
        .unwrap();
    String::from_utf8_lossy(&output.stdout)
        .trim()
        .parse()
        .unwrap()
}

/// The ABI a spec asking for `wanted` is confined at on this kernel, or `None` when the
/// kernel's is older, and the set-up must fail saying so (the test checks it did).
async fn confined_at(dirs: &Dirs, wanted: Option<u8>) -> Option<u8> {
    let kernel = kernel_landlock_abi().await;
    match wanted {
        Some(wanted) if wanted > kernel => {
            let spec = dirs.spec("true", json!({ "landlock_abi": wanted }));
            let outcome = launch(&spec.to_string()).await;
            assert_eq!(outcome.code, Some(125), "{}", outcome.stderr);
            let reason = format!("the kernel has ABI {kernel}, older than the {wanted} asked for");
            assert!(outcome.stderr.contains(&reason), "{}", outcome.stderr);
            None
        }
        Some(wanted) => Some(wanted),
        None => Some(kernel.min(NEWEST_ABI)),
    }
}

/// The newest Landlock ABI the launcher asks for by default.
const NEWEST_ABI: u8 = 9;

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
    let by_rummy = launch_with(
        env!("CARGO_BIN_EXE_rummy"),
        &dirs.spec("exit 7", json!({})).to_string(),
    )
    .await;
    assert_eq!(by_rummy.code, Some(7), "rummy itself has the stages too");
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
async fn etc_secrets_are_unreadable_even_for_root() {
    let dirs = Dirs::new();
    assert_refused(&dirs.run("cat /etc/shadow").await, "Permission denied");
    assert_refused(&dirs.run("ls /etc/ssl/private").await, "Permission denied");
    let readable = dirs
        .run("cat /etc/ssl/openssl.cnf /etc/ld.so.cache > /dev/null && ls /etc/ssl/certs")
        .await;
    assert_eq!(readable.code, Some(0), "{}", readable.stderr);
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

/// Signals to the test process (the spec's server) and to the supervisor are refused at every
/// ABI: by Landlock's signal scope from ABI 6, by the seccomp fallback below it.
#[tokio::test]
async fn processes_outside_cannot_be_signalled() {
    let dirs = Dirs::new();
    let server = std::process::id();
    for wanted in [None, Some(2), Some(5), Some(6)] {
        let Some(abi) = confined_at(&dirs, wanted).await else {
            continue;
        };
        let run = |command: String| {
            let spec = dirs.spec(&command, json!({ "landlock_abi": wanted }));
            async move { launch(&spec.to_string()).await }
        };
        assert_eq!(run("kill -0 $$".into()).await.code, Some(0), "ABI {abi}");
        for target in [server.to_string(), "$PPID".into(), "-$PPID".into()] {
            let outcome = run(format!("kill -0 {target}")).await;
            assert_refused(&outcome, "Operation not permitted");
        }
        let pidfd = run(format!(
            "python3 -c 'import os, signal; signal.pidfd_send_signal(os.pidfd_open({server}), 0)'"
        ))
        .await;
        if abi < 6 {
            assert_refused(&run("kill -0 -1".into()).await, "Operation not permitted");
            assert_refused(&pidfd, "Function not implemented");
        } else {
            assert_refused(&pidfd, "Operation not permitted");
        }
    }
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

/// With TCP ports allowed, only those are reachable; a kernel (or an ABI asked for) older
/// than ABI 4 cannot limit them, and the set-up fails rather than open the network.
#[tokio::test]
async fn only_the_allowed_tcp_ports_are_reachable() {
    let dirs = Dirs::new();
    let allowed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let other = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    other.set_nonblocking(true).unwrap();
    let allowed_port = allowed.local_addr().unwrap().port();
    let other_port = other.local_addr().unwrap().port();
    for wanted in [None, Some(3), Some(4)] {
        let Some(abi) = confined_at(&dirs, wanted).await else {
            continue;
        };
        let ports = json!({ "ports": [allowed_port], "landlock_abi": wanted });
        let reached = launch(&dirs.spec(&connect(allowed_port), ports.clone()).to_string()).await;
        if abi < 4 {
            assert_eq!(reached.code, Some(125), "{}", reached.stderr);
            let reason = format!("ABI {abi} cannot limit TCP to the allowed ports");
            assert!(reached.stderr.contains(&reason), "{}", reached.stderr);
            continue;
        }
        assert_eq!(reached.code, Some(0), "{}", reached.stderr);
        let refused = launch(&dirs.spec(&connect(other_port), ports).to_string()).await;
        assert_refused(&refused, "PermissionError");
        assert!(other.accept().is_err(), "the other listener was reached");
    }
}

/// A Python one-liner connecting to the Unix socket at `path`.
fn connect_unix(path: &Path) -> String {
    format!(
        "python3 -c 'import socket; s = socket.socket(socket.AF_UNIX); s.connect(\"{}\")'",
        path.display()
    )
}

/// A Unix socket outside the root cannot be reached (Landlock refuses the connect from ABI
/// 9; below it no Unix socket can be made) unless the spec allows Unix sockets;
/// `socketpair` works either way.
#[tokio::test]
async fn unix_sockets_outside_are_unreachable_unless_allowed() {
    let dirs = Dirs::new();
    let path = dirs.outside().join("listener.sock");
    let listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
    listener.set_nonblocking(true).unwrap();
    for wanted in [None, Some(5)] {
        let Some(_) = confined_at(&dirs, wanted).await else {
            continue;
        };
        let abi = json!({ "landlock_abi": wanted });
        let refused = launch(&dirs.spec(&connect_unix(&path), abi.clone()).to_string()).await;
        assert_refused(&refused, "PermissionError");
        assert!(listener.accept().is_err(), "the listener was reached");
        let pair = "python3 -c 'import socket; a, b = socket.socketpair(); \
                    a.send(b\"x\"); print(b.recv(1))'";
        let paired = launch(&dirs.spec(pair, abi).to_string()).await;
        assert_eq!(paired.code, Some(0), "{}", paired.stderr);
        assert_eq!(paired.stdout, "b'x'\n");
        let allowed = json!({ "landlock_abi": wanted, "unix_sockets": true });
        let reached = launch(&dirs.spec(&connect_unix(&path), allowed).to_string()).await;
        assert_eq!(reached.code, Some(0), "{}", reached.stderr);
        assert!(listener.accept().is_ok(), "the listener was not reached");
    }
}

/// `truncate` by path is refused outside the root at every ABI: by Landlock from ABI 3, by
/// seccomp below it (where it is refused inside the root too).
#[tokio::test]
async fn files_outside_cannot_be_truncated() {
    let dirs = Dirs::new();
    let secret = dirs.outside().join("secret");
    let truncate = |path: &Path| {
        format!(
            "python3 -c 'import os; os.truncate(\"{}\", 0)'",
            path.display()
        )
    };
    for wanted in [None, Some(2), Some(3)] {
        let Some(abi) = confined_at(&dirs, wanted).await else {
            continue;
        };
        let abi_field = json!({ "landlock_abi": wanted });
        let outside = launch(&dirs.spec(&truncate(&secret), abi_field.clone()).to_string()).await;
        assert_refused(&outside, "PermissionError");
        assert_eq!(std::fs::read_to_string(&secret).unwrap(), "the secret");
        let inside = dirs.root.path().join("mine");
        std::fs::write(&inside, "mine").unwrap();
        let own = launch(&dirs.spec(&truncate(&inside), abi_field).to_string()).await;
        if abi < 3 {
            assert_refused(&own, "Operation not permitted");
        } else {
            assert_eq!(own.code, Some(0), "{}", own.stderr);
            assert_eq!(std::fs::read_to_string(&inside).unwrap(), "");
        }
    }
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
    let relative = dirs.spec("true", json!({ "root": "rel" }));
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

/// A fork bomb (bounded at 511 processes, should the limit fail) in a pids cgroup allowed
/// 32: it never has more, the limit is seen hit, and the command ends with nothing left.
#[tokio::test]
#[ignore = "needs a writable pids cgroup hierarchy (root): tests/run.sh runs it"]
async fn a_fork_bomb_stays_within_the_process_limit() {
    let name = format!("fork-bomb-{}", std::process::id());
    let cgroup = rummy::testing::sandbox::TestCgroup::create(&name, 32)
        .expect("this host has no writable pids cgroup hierarchy (run as root)");
    let counted: Vec<PathBuf> = cgroup
        .paths()
        .into_iter()
        .map(|dir| dir.join("pids.current"))
        .filter(|current| current.exists())
        .collect();
    assert!(
        !counted.is_empty(),
        "no pids.current in {:?}",
        cgroup.paths()
    );
    let dirs = Dirs::new();
    let bomb = "b() { [ $1 -gt 0 ] && { b $(($1 - 1)) & b $(($1 - 1)) & wait; }; sleep 1; }; b 8";
    let spec = dirs.spec(bomb, json!({ "cgroups": cgroup.paths() }));
    let run = tokio::spawn(async move { launch(&spec.to_string()).await });
    let mut most = 0;
    while !run.is_finished() {
        for current in &counted {
            let now: u64 = std::fs::read_to_string(current)
                .unwrap()
                .trim()
                .parse()
                .unwrap();
            most = most.max(now);
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let outcome = run.await.unwrap();
    assert_ne!(outcome.code, Some(125), "{}", outcome.stderr);
    assert!(cgroup.hit_process_limit(), "no fork was refused");
    assert!(most > 16 && most <= 33, "{most} processes at most");
    for dir in cgroup.paths() {
        let left = std::fs::read_to_string(dir.join("cgroup.procs")).unwrap();
        assert!(left.is_empty(), "left in {}: {left}", dir.display());
    }
}
