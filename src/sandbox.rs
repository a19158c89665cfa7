//! Commands run on the server, confined (issue 27). The server spawns its own binary as
//! `rummy sandbox-exec` (or the smaller `rummy-sandbox`) with a [`Spec`] as JSON on stdin,
//! in two stages, so that nothing but that fresh single-threaded process ever forks:
//!
//! 1. `sandbox-exec` ([`supervisor`]): a session leader and child subreaper that forks
//!    stage 2, relays its exit status and kills every process left behind when it ends.
//! 2. the forked child ([`confine`]): leaves the supervisor's process group, sets resource
//!    limits ([`limits`]), drops all capabilities, sets `no_new_privs`, restricts itself with
//!    Landlock ([`landlock_rules`]) and a seccomp deny list ([`seccomp`]), then becomes
//!    `/bin/sh -c COMMAND` with an environment built from nothing.
//!
//! Exit status: the command's code, `128 + signal` when a signal ended it, and
//! [`SETUP_FAILED`] when confinement could not be set up (with `rummy sandbox: <reason>` on
//! stderr), so a command never runs less confined than its spec asks.

mod cgroup;
mod confine;
mod etc_rules;
mod kept;
mod landlock_rules;
mod limits;
pub(crate) mod outcome;
pub(crate) mod policy;
pub(crate) mod runner;
mod seccomp;
mod spec;
mod supervisor;
pub(crate) mod tree;

pub(crate) use cgroup::{Cgroups, CommandCgroup};
pub(crate) use etc_rules::etc_readable;
pub use spec::{Limits, Spec};
use supervisor::exec_main;

/// The hidden subcommand the server spawns: stage 1, the supervisor.
pub const EXEC_SUBCOMMAND: &str = "sandbox-exec";
/// The exit status when the sandbox could not be set up (as `env` and `docker run` use it).
pub const SETUP_FAILED: u8 = 125;

/// Why a sandbox could not be set up; every one ends the launcher with [`SETUP_FAILED`].
#[derive(Debug, thiserror::Error)]
pub(crate) enum SandboxError {
    #[error("reading the spec: {0}")]
    ReadSpec(#[source] std::io::Error),
    #[error("the spec is not valid: {0}")]
    ParseSpec(#[from] serde_json::Error),
    #[error("the spec is not valid: {0}")]
    InvalidSpec(String),
    #[error("{what}: {source}")]
    Sys {
        what: &'static str,
        #[source]
        source: nix::Error,
    },
    #[error("{what}: {source}")]
    Io {
        what: &'static str,
        #[source]
        source: std::io::Error,
    },
    #[error("dropping capabilities: {0}")]
    Capabilities(#[from] caps::errors::CapsError),
    #[error("Landlock: {0}")]
    Landlock(#[from] landlock::RulesetError),
    #[error("Landlock is not enforced as required: {0}")]
    LandlockWeak(String),
    #[error("seccomp: {0}")]
    Seccomp(#[from] seccompiler::Error),
    #[error("seccomp: {0}")]
    SeccompFilter(#[from] seccompiler::BackendError),
    #[error("the supervisor has {0} threads; it forks the confined stage only with one")]
    Threads(usize),
}

/// The launcher binary the build makes beside `rummy`: the two stages and nothing else, so
/// that starting it for each command costs little.
pub const LAUNCHER_BINARY: &str = "rummy-sandbox";

/// Runs the stage `stage` names (the first argument of a launcher process) and returns the
/// status to exit with; `None` when it names no stage.
pub fn run_stage(stage: &std::ffi::OsStr) -> Option<u8> {
    if stage == EXEC_SUBCOMMAND {
        Some(exec_main())
    } else {
        None
    }
}

/// Prints `rummy sandbox: <reason>` on stderr and returns the set-up failure status.
fn fail(error: &SandboxError) -> u8 {
    eprintln!("rummy sandbox: {error}");
    SETUP_FAILED
}
