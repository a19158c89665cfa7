//! Resource limits set on stage 2 before it execs the command; every descendant inherits them.

use nix::sys::resource::{setrlimit, Resource};

use super::{Limits, SandboxError};

/// Seconds between SIGXCPU (the soft CPU limit) and SIGKILL (the hard one).
const CPU_GRACE_SECONDS: u64 = 5;

/// Sets the rlimits `limits` asks for, plus no core dumps; `RLIMIT_NPROC` only when not
/// root, since the kernel does not apply it to root.
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
        set(
            Resource::RLIMIT_NPROC,
            limits.processes,
            limits.processes,
            "limiting processes",
        )?;
    }
    Ok(())
}
