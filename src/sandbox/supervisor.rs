//! Stage 1, `rummy sandbox-exec`: reads the spec, joins the command's cgroups, forks stage 2
//! into its own process group inside a new session, relays its exit status, and kills
//! whatever it left behind.

use std::io::Read;

use nix::errno::Errno;
use nix::sys::signal::{kill, killpg, Signal};
use nix::sys::wait::{waitpid, WaitStatus};
use nix::unistd::{ForkResult, Pid};

use super::confine::confine_main;
use super::tree::descendants;
use super::{fail, SandboxError, Spec};

/// Runs stage 1 with the spec on stdin; returns the exit status to end with.
pub(super) fn exec_main() -> u8 {
    match supervise() {
        Ok(code) => code,
        Err(error) => fail(&error),
    }
}

fn supervise() -> Result<u8, SandboxError> {
    let mut json = String::new();
    std::io::stdin()
        .read_to_string(&mut json)
        .map_err(SandboxError::ReadSpec)?;
    let spec = Spec::parse(&json)?;
    for cgroup in &spec.cgroups {
        std::fs::write(cgroup.join("cgroup.procs"), "0").map_err(|source| SandboxError::Io {
            what: "joining the command's cgroup",
            source,
        })?;
    }
    let sys = |what| move |source| SandboxError::Sys { what, source };
    nix::unistd::setsid().map_err(sys("starting a session"))?;
    nix::sys::prctl::set_child_subreaper(true).map_err(sys("becoming a subreaper"))?;
    nix::sys::prctl::set_pdeathsig(Signal::SIGKILL).map_err(sys("following the server"))?;
    let child = start_confined(&spec)?;
    let status = wait_for(child).map_err(sys("waiting for the command"))?;
    let _ = killpg(child, Signal::SIGKILL);
    sweep();
    Ok(status)
}

/// Stage 2 in a forked child, which never returns here: it confines itself and becomes the
/// command ([`confine_main`]). A fork rather than a second launch of this binary saves what
/// loading it again costs (about 1 ms of the set-up, benches/sandbox.rs).
#[allow(unsafe_code)]
fn start_confined(spec: &Spec) -> Result<Pid, SandboxError> {
    let threads = std::fs::read_dir("/proc/self/task")
        .map_err(|source| SandboxError::Io {
            what: "counting the supervisor's threads",
            source,
        })?
        .count();
    if threads != 1 {
        return Err(SandboxError::Threads(threads));
    }
    // SAFETY: this process has a single thread (counted just above; nothing in stage 1
    // starts one), so the child is a consistent copy of it: no lock is held by a thread
    // that does not exist there, and it may allocate. The child leaves only by `exit`.
    match unsafe { nix::unistd::fork() } {
        Ok(ForkResult::Parent { child }) => Ok(child),
        Ok(ForkResult::Child) => std::process::exit(i32::from(confine_main(spec))),
        Err(source) => Err(SandboxError::Sys {
            what: "starting the confined stage",
            source,
        }),
    }
}

/// Reaps children (orphans re-parent here) until `child` ends; returns its exit code, or
/// `128 + signal` when a signal ended it.
fn wait_for(child: Pid) -> Result<u8, nix::Error> {
    loop {
        match waitpid(None, None)? {
            WaitStatus::Exited(pid, code) if pid == child => {
                return Ok(u8::try_from(code).unwrap_or(u8::MAX));
            }
            WaitStatus::Signaled(pid, signal, _) if pid == child => {
                return Ok(u8::try_from(128 + signal as i32).unwrap_or(u8::MAX));
            }
            _ => {}
        }
    }
}

/// Kills every remaining descendant and reaps them, until no child is left: what a command
/// started in the background or in a new session does not outlive it.
fn sweep() {
    loop {
        for pid in descendants(std::process::id()) {
            let _ = kill(pid, Signal::SIGKILL);
        }
        match waitpid(None, None) {
            Err(Errno::ECHILD) => return,
            Err(Errno::EINTR) | Ok(_) => {}
            Err(_) => return,
        }
    }
}
