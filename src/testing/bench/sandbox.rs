//! The sandbox's set-up cost per command: `/bin/sh -c true` spawned plainly, against the
//! same through `rummy sandbox-exec` as the server runs it (a spec with the readable part of
//! `/etc`, which the server computes once, and a pids cgroup created and removed each time
//! when the host has a writable hierarchy). The target is a median difference of 5 ms or
//! less in a release build.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};

use criterion::Criterion;

use crate::sandbox::{Cgroups, Limits, Spec, EXEC_SUBCOMMAND};

/// Runs `spec` through `rummy sandbox-exec` and waits for it.
fn sandboxed(launcher: &Path, spec: &str) -> std::io::Result<ExitStatus> {
    let mut child = Command::new(launcher)
        .arg(EXEC_SUBCOMMAND)
        .env_clear()
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()?;
    if let Some(mut stdin) = child.stdin.take() {
        stdin.write_all(spec.as_bytes())?;
    }
    child.wait()
}

/// A spec running `true` in `root`, reading `etc`, in `cgroups`.
fn spec(root: &Path, tmp: &Path, etc: &[PathBuf], cgroups: Vec<PathBuf>) -> String {
    let spec = Spec {
        command: "true".into(),
        root: root.to_path_buf(),
        tmp: tmp.to_path_buf(),
        env: Default::default(),
        path: Vec::new(),
        read_exec: Vec::new(),
        read: etc.to_vec(),
        ports: Vec::new(),
        unix_sockets: false,
        server_pid: std::process::id(),
        landlock_abi: None,
        cgroups,
        limits: Limits::default(),
        unconfined: false,
    };
    serde_json::to_string(&spec).unwrap_or_default()
}

/// `plain` and `sandboxed` runs of `true`; `launcher` is the built `rummy-sandbox` (or `rummy`).
pub fn setup_cost(c: &mut Criterion, launcher: &Path) {
    let (Ok(root), Ok(tmp)) = (tempfile::tempdir(), tempfile::tempdir()) else {
        return;
    };
    let etc = crate::sandbox::etc_readable(&[]);
    let cgroups = Cgroups::detect();
    if let Some(cgroups) = &cgroups {
        cgroups.sweep_stale();
    }
    let check = sandboxed(launcher, &spec(root.path(), tmp.path(), &etc, Vec::new()));
    assert!(
        check.as_ref().is_ok_and(ExitStatus::success),
        "rummy sandbox-exec cannot run here: {check:?}"
    );
    let mut group = c.benchmark_group("sandbox_setup");
    group.bench_function("plain", |b| {
        b.iter(|| Command::new("/bin/sh").args(["-c", "true"]).status());
    });
    let mut count = 0_u64;
    group.bench_function("sandboxed", |b| {
        b.iter(|| {
            count += 1;
            let cgroup = cgroups
                .as_ref()
                .and_then(|cgroups| cgroups.create(&format!("bench-{count}"), 256).ok());
            let paths = cgroup.as_ref().map(|c| c.paths()).unwrap_or_default();
            sandboxed(launcher, &spec(root.path(), tmp.path(), &etc, paths))
        });
    });
    group.finish();
}
