//! Stage 2, in the supervisor's forked child: leaves the supervisor's process group and
//! stdin, confines itself, then becomes the command.

use std::os::fd::AsFd;
use std::os::unix::process::CommandExt;
use std::process::Command;

use caps::CapSet;
use nix::unistd::Pid;

use super::{fail, landlock_rules, limits, seccomp, SandboxError, Spec};

/// Runs stage 2. Returns only when confinement or the `exec` failed.
pub(super) fn confine_main(spec: &Spec) -> u8 {
    match confine_and_exec(spec) {
        Ok(never) => match never {},
        Err(error) => fail(&error),
    }
}

/// A process group of its own (so a `kill 0` in the command cannot reach the supervisor) and
/// no stdin (the supervisor's was the spec).
fn detach() -> Result<(), SandboxError> {
    nix::unistd::setpgid(Pid::from_raw(0), Pid::from_raw(0)).map_err(|source| {
        SandboxError::Sys {
            what: "leaving the supervisor's process group",
            source,
        }
    })?;
    let null = std::fs::File::open("/dev/null").map_err(|source| SandboxError::Io {
        what: "opening /dev/null",
        source,
    })?;
    nix::unistd::dup2_stdin(null.as_fd()).map_err(|source| SandboxError::Sys {
        what: "replacing stdin",
        source,
    })
}

fn confine_and_exec(spec: &Spec) -> Result<std::convert::Infallible, SandboxError> {
    detach()?;
    std::env::set_current_dir(&spec.root).map_err(|source| SandboxError::Io {
        what: "entering the root",
        source,
    })?;
    limits::apply(&spec.limits)?;
    drop_capabilities()?;
    nix::sys::prctl::set_no_new_privs().map_err(|source| SandboxError::Sys {
        what: "setting no_new_privs",
        source,
    })?;
    if !spec.unconfined {
        let protected = protected_processes(spec.server_pid);
        let abi = landlock_rules::restrict(spec)?;
        seccomp::apply(&seccomp::Policy {
            abi,
            network: !spec.ports.is_empty(),
            unix_sockets: spec.unix_sockets,
            protected,
        })?;
    }
    let error = Command::new("/bin/sh")
        .arg0("sh")
        .arg("-c")
        .arg(&spec.command)
        .env_clear()
        .envs(spec.environment())
        .exec();
    Err(SandboxError::Io {
        what: "running /bin/sh",
        source: error,
    })
}

/// The processes a command must not signal: the server and the supervisor, this process's
/// parent. Not the server's threads one by one: a server has hundreds, more than a seccomp
/// filter may hold (4096 instructions), and Landlock's signal scope (ABI 6) covers them.
fn protected_processes(server_pid: u32) -> Vec<u32> {
    vec![server_pid, nix::unistd::getppid().as_raw().unsigned_abs()]
}

/// Clears every capability set, the bounding set first (which needs `CAP_SETPCAP`, so only
/// when it is held): neither this process nor anything it execs keeps a capability.
fn drop_capabilities() -> Result<(), SandboxError> {
    if caps::has_cap(None, CapSet::Effective, caps::Capability::CAP_SETPCAP)? {
        caps::clear(None, CapSet::Bounding)?;
    }
    for set in [
        CapSet::Ambient,
        CapSet::Inheritable,
        CapSet::Effective,
        CapSet::Permitted,
    ] {
        caps::clear(None, set)?;
    }
    Ok(())
}
