//! What the launcher tests and the sandbox bench give `rummy sandbox-exec` as the server
//! would: the readable part of `/etc`, and a command's pids cgroup.

use std::path::PathBuf;

use crate::sandbox::{Cgroups, CommandCgroup};

/// The readable part of `/etc`, as the server computes it with nothing of its own in `/etc`.
pub fn etc_readable() -> Vec<PathBuf> {
    crate::sandbox::etc_readable(&[])
}

/// A command's cgroup, made as the server makes one.
pub struct TestCgroup(CommandCgroup);

impl TestCgroup {
    /// A cgroup named `name` letting its command start `max_processes` processes; `None`
    /// when this host has no writable pids cgroup hierarchy.
    pub fn create(name: &str, max_processes: u64) -> Option<TestCgroup> {
        let cgroups = Cgroups::detect()?;
        cgroups.sweep_stale();
        cgroups.create(name, max_processes).ok().map(TestCgroup)
    }

    /// The directories for the spec's `cgroups`.
    pub fn paths(&self) -> Vec<PathBuf> {
        self.0.paths()
    }

    /// Whether a fork was refused for the limit.
    pub fn hit_process_limit(&self) -> bool {
        self.0.hit_process_limit()
    }
}
