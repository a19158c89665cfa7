//! Stage 2, `rummy sandbox-confine`: confines this process, then becomes the command.

use std::os::unix::process::CommandExt;
use std::process::Command;

use caps::CapSet;

use super::{fail, landlock_rules, limits, seccomp, SandboxError, Spec};

/// The variable through which stage 1 hands stage 2 the spec (stage 2's stdin is the
/// command's).
pub(crate) const SPEC_VARIABLE: &str = "RUMMY_SANDBOX_SPEC";

/// Runs stage 2. Returns only when confinement or the `exec` failed.
pub(super) fn confine_main() -> u8 {
    match confine_and_exec() {
        Ok(never) => match never {},
        Err(error) => fail(&error),
    }
}

fn confine_and_exec() -> Result<std::convert::Infallible, SandboxError> {
    let json = std::env::var(SPEC_VARIABLE)
        .map_err(|error| SandboxError::InvalidSpec(format!("{SPEC_VARIABLE}: {error}")))?;
    let spec = Spec::parse(&json)?;
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
        let abi = landlock_rules::restrict(&spec)?;
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
