//! One start of a plugin process: the program spawned in a process group of its own, and
//! in a pids cgroup of its own where the server has them ([`Cgroups::shared`], as its
//! commands do), the task that writes its stdin, and the watcher that kills its whole tree
//! ([`kill_tree`]) when it ends: at once when it is stopped (a failure, a restart, a
//! disable), or when it exited by itself (a `shutdown` heard, a crash: what it left behind
//! in its group and its cgroup). A process the watcher no longer holds has nothing left.
//!
//! A child it started between its start and its move into the cgroup (a few microseconds)
//! is in its process group all the same; only one that also left that group is missed.

use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};

use tokio::io::AsyncWriteExt;
use tokio::process::{ChildStderr, ChildStdin, ChildStdout};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::declaration::Declaration;
use crate::sandbox::tree::{kill_group, kill_tree};
use crate::sandbox::{Cgroups, CommandCgroup};

/// What is written to a process's stdin: a line, or the end (stdin closed).
pub(super) enum Out {
    Line(String),
    Close,
}

/// How a process is ended, and when it is gone.
#[derive(Clone)]
pub(super) struct Ending {
    stop: CancellationToken,
    gone: CancellationToken,
}

impl Ending {
    /// Kills it now, with everything it started.
    pub(super) fn kill(&self) {
        self.stop.cancel();
    }

    /// Resolves once nothing of its tree is left.
    pub(super) async fn gone(&self) {
        self.gone.cancelled().await;
    }
}

/// A process started: where its stdin's lines go, its stdout and stderr, and its ending.
pub(super) struct Started {
    pub lines: mpsc::UnboundedSender<Out>,
    pub stdout: ChildStdout,
    pub stderr: ChildStderr,
    pub ending: Ending,
}

/// Starts `declaration`'s program with its environment (rummy's without its settings and
/// secrets, and the declaration's own), its pipes, its own process group and cgroup, and
/// the tasks that write its stdin and watch it. Run it on the runtime that is to outlive
/// the process (the server's, not a worker's): its pipes and tasks belong to that one.
/// `Err`: why it could not be started.
pub(super) async fn start(declaration: &Declaration) -> Result<Started, String> {
    let cgroup = cgroup_for(&declaration.name).await;
    let mut command = tokio::process::Command::new(&declaration.command);
    command
        .args(&declaration.args)
        .env_clear()
        .envs(
            std::env::vars()
                .filter(|(name, _)| name == "PATH" || crate::config::may_pass_to_commands(name)),
        )
        .envs(
            declaration
                .env
                .iter()
                .map(|(name, value)| (name, value.expose())),
        )
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    let spawned = command
        .spawn()
        .map_err(|error| format!("{}: {error}", declaration.command));
    let mut child = match spawned {
        Ok(child) => child,
        Err(error) => {
            release(cgroup).await;
            return Err(error);
        }
    };
    let leader = child.id();
    let cgroup = match (cgroup, leader) {
        (Some(cgroup), Some(pid)) => joined(cgroup, pid, &declaration.name).await,
        (cgroup, _) => cgroup,
    };
    let ending = Ending {
        stop: CancellationToken::new(),
        gone: CancellationToken::new(),
    };
    let (Some(stdin), Some(stdout), Some(stderr)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        ending.kill();
        tokio::spawn(watch(child, cgroup, ending));
        return Err("no pipes".into());
    };
    let (lines, to_write) = mpsc::unbounded_channel();
    tokio::spawn(write_lines(stdin, to_write));
    tokio::spawn(watch(child, cgroup, ending.clone()));
    Ok(Started {
        lines,
        stdout,
        stderr,
        ending,
    })
}

/// Writes each line to the process's stdin until it is told to close it (or it is closed).
async fn write_lines(mut stdin: ChildStdin, mut to_write: mpsc::UnboundedReceiver<Out>) {
    while let Some(Out::Line(mut line)) = to_write.recv().await {
        line.push('\n');
        if stdin.write_all(line.as_bytes()).await.is_err() || stdin.flush().await.is_err() {
            break;
        }
    }
}

/// Waits for the process to be stopped or to exit, then kills what is left of its tree,
/// reaps it and removes its cgroup; then it is gone (also when the task is dropped, its
/// child killed with it).
async fn watch(mut child: tokio::process::Child, cgroup: Option<CommandCgroup>, ending: Ending) {
    let _gone = ending.gone.clone().drop_guard();
    let leader = child.id();
    let exited = tokio::select! {
        () = ending.stop.cancelled() => false,
        _ = child.wait() => true,
    };
    let _ = tokio::task::spawn_blocking(move || {
        match (leader, exited) {
            (Some(leader), false) => kill_tree(leader),
            (Some(leader), true) => kill_group(leader),
            (None, _) => {}
        }
        // Dropping it kills what is left in it and removes it.
        drop(cgroup);
    })
    .await;
    let _ = child.wait().await;
}

/// A cgroup of its own for a start of plugin `name`, where the server has them.
async fn cgroup_for(name: &str) -> Option<CommandCgroup> {
    // Cgroups are per process: every server of this process makes its plugins' there.
    static STARTS: AtomicU64 = AtomicU64::new(0);
    let start = STARTS.fetch_add(1, Ordering::Relaxed);
    let named = format!("plugin-{name}-{start}");
    let made = tokio::task::spawn_blocking(move || {
        Cgroups::shared().map(|cgroups| cgroups.create_unbounded(&named))
    })
    .await;
    match made {
        Ok(Some(Ok(cgroup))) => Some(cgroup),
        Ok(Some(Err(error))) => {
            tracing::warn!(plugin = name, %error, "cannot make the plugin process's cgroup; its process group alone holds it");
            None
        }
        Ok(None) | Err(_) => None,
    }
}

/// `cgroup` with the process `pid` moved into it; `None` (and the cgroup removed) when it
/// cannot be.
async fn joined(cgroup: CommandCgroup, pid: u32, name: &str) -> Option<CommandCgroup> {
    let moved = tokio::task::spawn_blocking(move || match cgroup.join(pid) {
        Ok(()) => Ok(cgroup),
        Err(error) => {
            drop(cgroup);
            Err(error.to_string())
        }
    })
    .await;
    match moved {
        Ok(Ok(cgroup)) => Some(cgroup),
        Ok(Err(error)) => {
            tracing::warn!(plugin = name, %error, "cannot move the plugin process into its cgroup; its process group alone holds it");
            None
        }
        Err(_) => None,
    }
}

/// Removes a cgroup no process went into, off the executor.
async fn release(cgroup: Option<CommandCgroup>) {
    if let Some(cgroup) = cgroup {
        let _ = tokio::task::spawn_blocking(move || drop(cgroup)).await;
    }
}
