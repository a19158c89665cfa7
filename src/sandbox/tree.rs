//! A process and everything it started, killed as one: a command's launcher or a plugin
//! process. What is under it is found in `/proc` while it is not yet reaped (once it is,
//! its children belong to init and nothing links them to it), its process group catches
//! what it started in the background, and a pids cgroup ([`super::CommandCgroup`], killed
//! by its owner) catches what left both. Blocking code: run on the blocking pool.

use nix::sys::signal::{kill, killpg, Signal};
use nix::unistd::Pid;

/// Rounds of killing what is under a process (it may start more meanwhile) before the
/// process itself is killed.
const KILL_ROUNDS: usize = 20;

/// Kills everything under `leader`, round after round until nothing is left, then its
/// process group (when it leads one) and itself. Only for a process not yet reaped, so
/// that no other process can have its pid.
pub(crate) fn kill_tree(leader: u32) {
    for _ in 0..KILL_ROUNDS {
        let left = descendants(leader);
        if left.is_empty() {
            break;
        }
        for pid in left {
            let _ = kill(pid, Signal::SIGKILL);
        }
    }
    if let Ok(pid) = i32::try_from(leader) {
        let _ = killpg(Pid::from_raw(pid), Signal::SIGKILL);
        let _ = kill(Pid::from_raw(pid), Signal::SIGKILL);
    }
}

/// Kills what is left of the process group `leader` led, once it ended by itself: the
/// group, and so its id, lives on while any member does, and the kernel gives no new
/// process an id a group still holds.
pub(crate) fn kill_group(leader: u32) {
    if let Ok(pid) = i32::try_from(leader) {
        let _ = killpg(Pid::from_raw(pid), Signal::SIGKILL);
    }
}

/// The living descendants of `pid`, read from `/proc/<pid>/task/*/children`.
pub(crate) fn descendants(pid: u32) -> Vec<Pid> {
    let mut found = Vec::new();
    let mut pending = vec![pid];
    while let Some(parent) = pending.pop() {
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{parent}/task")) else {
            continue;
        };
        for task in tasks.flatten() {
            let children =
                std::fs::read_to_string(task.path().join("children")).unwrap_or_default();
            for child in children
                .split_whitespace()
                .filter_map(|c| c.parse::<u32>().ok())
            {
                found.push(Pid::from_raw(i32::try_from(child).unwrap_or(i32::MAX)));
                pending.push(child);
            }
        }
    }
    found
}
