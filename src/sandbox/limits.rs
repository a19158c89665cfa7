//! Resource limits set on stage 2 before it execs the command; every descendant inherits them.

use std::os::unix::fs::MetadataExt;

use nix::sys::resource::{setrlimit, Resource};

use super::{Limits, SandboxError};

/// Seconds between SIGXCPU (the soft CPU limit) and SIGKILL (the hard one).
const CPU_GRACE_SECONDS: u64 = 5;

/// Sets the rlimits `limits` asks for, plus no core dumps; `RLIMIT_NPROC` only when not
/// root, since the kernel does not apply it to root. That limit counts every task of the
/// user, the server's threads among them, so it is set to the command's processes on top
/// of what the user runs at the start ([`tasks_of_this_user`]).
pub(crate) fn apply(limits: &Limits) -> Result<(), SandboxError> {
    let set = |resource, soft, hard, what| {
        setrlimit(resource, soft, hard).map_err(|source| SandboxError::Sys { what, source })
    };
    set(
        Resource::RLIMIT_CPU,
        limits.cpu_seconds,
        limits.cpu_seconds.saturating_add(CPU_GRACE_SECONDS),
        "limiting CPU time",
    )?;
    set(
        Resource::RLIMIT_DATA,
        limits.memory_bytes,
        limits.memory_bytes,
        "limiting memory",
    )?;
    set(
        Resource::RLIMIT_FSIZE,
        limits.file_size_bytes,
        limits.file_size_bytes,
        "limiting file size",
    )?;
    set(
        Resource::RLIMIT_NOFILE,
        limits.open_files,
        limits.open_files,
        "limiting open files",
    )?;
    set(Resource::RLIMIT_CORE, 0, 0, "disabling core dumps")?;
    if !nix::unistd::geteuid().is_root() {
        let processes = limits.processes.saturating_add(tasks_of_this_user());
        set(
            Resource::RLIMIT_NPROC,
            processes,
            processes,
            "limiting processes",
        )?;
    }
    Ok(())
}

/// The tasks (processes and their threads) of this process's user, as `RLIMIT_NPROC` counts
/// them: the threads of every process `/proc` shows owned by the user.
fn tasks_of_this_user() -> u64 {
    let user = nix::unistd::getuid().as_raw();
    let Ok(processes) = std::fs::read_dir("/proc") else {
        return 0;
    };
    let count = processes
        .flatten()
        .filter(|entry| entry.file_name().to_string_lossy().parse::<u32>().is_ok())
        .filter(|entry| {
            entry
                .metadata()
                .is_ok_and(|metadata| metadata.uid() == user)
        })
        .filter_map(|entry| std::fs::read_dir(entry.path().join("task")).ok())
        .map(Iterator::count)
        .sum::<usize>();
    u64::try_from(count).unwrap_or(u64::MAX)
}
