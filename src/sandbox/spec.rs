//! What the server asks of one confined command: the launcher's input, JSON on stdin.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::SandboxError;

/// Directories whose programs and libraries a command may read and execute.
const SYSTEM_DIRS: &[&str] = &[
    "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32",
];

/// Files and directories a command may read but not execute or write, besides the spec's
/// (where the server puts the readable part of `/etc`): the devices that give bytes, and the
/// few kernel files that report the machine.
const READ_ONLY: &[&str] = &[
    "/dev/zero",
    "/dev/random",
    "/dev/urandom",
    "/proc/cpuinfo",
    "/proc/meminfo",
    "/proc/stat",
    "/proc/loadavg",
    "/sys/devices/system/cpu",
];

/// Device files a command may write to as well as read.
const WRITABLE_DEVICES: &[&str] = &["/dev/null", "/dev/full"];

/// One command to run confined.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Spec {
    /// The shell command line, run as `/bin/sh -c COMMAND`.
    pub command: String,
    /// The project root: the working directory, readable and writable.
    pub root: PathBuf,
    /// The run's scratch directory: `HOME` and `TMPDIR`, readable and writable.
    pub tmp: PathBuf,
    /// Variables added to the fixed environment (the server vets their names).
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Directories put first on `PATH`, readable and executable.
    #[serde(default)]
    pub path: Vec<PathBuf>,
    /// Directories readable and executable besides the system's (`/usr`, `/bin`, `/lib`…).
    #[serde(default)]
    pub read_exec: Vec<PathBuf>,
    /// Files and directories readable besides a few devices and kernel files: the server puts
    /// the readable part of `/etc` here (`etc_readable`) and what admins add.
    #[serde(default)]
    pub read: Vec<PathBuf>,
    /// TCP ports the command may connect to; empty (the default) allows no network socket.
    #[serde(default)]
    pub ports: Vec<u16>,
    /// Whether the command may connect to any Unix socket by path (such as the Docker
    /// daemon's). Off (the default), it may reach only sockets under the root and tmp where
    /// Landlock can tell (ABI 9), and may create no Unix socket at all where it cannot
    /// (`socketpair` works either way).
    #[serde(default)]
    pub unix_sockets: bool,
    /// The server's process id: below Landlock ABI 6, which scopes signals, a seccomp filter
    /// refuses signals to it.
    pub server_pid: u32,
    /// The Landlock ABI to confine at (the one the server probed at start): a kernel with an
    /// older one fails set-up, so a command is never confined less than the server checked.
    /// Absent, the newest both the kernel and this build know.
    #[serde(default)]
    pub landlock_abi: Option<u8>,
    /// Cgroup directories the supervisor joins before it starts the command, so the command
    /// and all it starts count against their `pids.max` and can be killed at once.
    #[serde(default)]
    pub cgroups: Vec<PathBuf>,
    /// Resource limits.
    #[serde(default)]
    pub limits: Limits,
    /// Run without Landlock and seccomp (`RUMMY_SANDBOX=off`): the limits, the environment
    /// and the kills still hold.
    #[serde(default)]
    pub unconfined: bool,
}

/// Per-process resource limits, each enforced by the kernel through an rlimit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Limits {
    /// CPU seconds; the process gets SIGXCPU at this many and SIGKILL 5 s later.
    pub cpu_seconds: u64,
    /// Bytes of data segment and anonymous memory per process (`RLIMIT_DATA`, which unlike
    /// `RLIMIT_AS` leaves address-space reservations of V8, the JVM and Go alone).
    pub memory_bytes: u64,
    /// Largest file a process may write, in bytes.
    pub file_size_bytes: u64,
    /// Open files per process.
    pub open_files: u64,
    /// Processes of the user (not applied when running as root, whom the kernel exempts).
    pub processes: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            cpu_seconds: 600,
            memory_bytes: 4 << 30,
            file_size_bytes: 1 << 30,
            open_files: 1024,
            processes: 256,
        }
    }
}

impl Spec {
    /// Parses and checks a spec: the root and tmp must be absolute existing directories and
    /// the command not empty.
    pub(crate) fn parse(json: &str) -> Result<Self, SandboxError> {
        let spec: Spec = serde_json::from_str(json)?;
        if spec.command.trim().is_empty() {
            return Err(SandboxError::InvalidSpec("the command is empty".into()));
        }
        if let Some(abi) = spec.landlock_abi {
            let newest = super::landlock_rules::NEWEST as u8;
            if !(1..=newest).contains(&abi) {
                return Err(SandboxError::InvalidSpec(format!(
                    "landlock_abi {abi} is not between 1 and {newest}"
                )));
            }
        }
        for (name, dir) in [("root", &spec.root), ("tmp", &spec.tmp)] {
            if !dir.is_absolute() || !dir.is_dir() {
                return Err(SandboxError::InvalidSpec(format!(
                    "{name} {} is not an absolute path of a directory",
                    dir.display()
                )));
            }
        }
        Ok(spec)
    }

    /// Directories whose contents may be read and executed.
    pub(crate) fn read_exec_paths(&self) -> Vec<PathBuf> {
        let system = SYSTEM_DIRS.iter().map(PathBuf::from);
        system
            .chain(self.path.iter().cloned())
            .chain(self.read_exec.iter().cloned())
            .collect()
    }

    /// Files and directories that may only be read.
    pub(crate) fn read_paths(&self) -> Vec<PathBuf> {
        let built_in = READ_ONLY.iter().map(PathBuf::from);
        built_in.chain(self.read.iter().cloned()).collect()
    }

    /// Device files that may be read and written.
    pub(crate) fn device_paths(&self) -> Vec<PathBuf> {
        WRITABLE_DEVICES.iter().map(PathBuf::from).collect()
    }

    /// The command's whole environment: fixed variables, then the spec's additions.
    pub(crate) fn environment(&self) -> BTreeMap<String, String> {
        let mut path: Vec<String> = self.path.iter().map(|p| p.display().to_string()).collect();
        path.push("/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin".into());
        let tmp = self.tmp.display().to_string();
        let mut env: BTreeMap<String, String> = [
            ("PATH", path.join(":")),
            ("HOME", tmp.clone()),
            ("TMPDIR", tmp),
            ("PWD", self.root.display().to_string()),
            ("LANG", "C.UTF-8".into()),
            ("TERM", "dumb".into()),
            ("SHELL", "/bin/sh".into()),
            ("PAGER", "cat".into()),
            ("GIT_PAGER", "cat".into()),
            ("GIT_TERMINAL_PROMPT", "0".into()),
            ("NO_COLOR", "1".into()),
        ]
        .into_iter()
        .map(|(name, value)| (name.to_owned(), value))
        .collect();
        for (name, value) in &self.env {
            if name != "PATH" {
                env.insert(name.clone(), value.clone());
            }
        }
        env
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spec_with_a_relative_root_or_empty_command_is_refused() {
        let tmp = std::env::temp_dir();
        let tmp = tmp.display();
        let relative = format!(r#"{{"command":"true","root":"rel","tmp":"{tmp}","server_pid":1}}"#);
        assert!(matches!(
            Spec::parse(&relative),
            Err(SandboxError::InvalidSpec(_))
        ));
        let empty = format!(r#"{{"command":" ","root":"{tmp}","tmp":"{tmp}","server_pid":1}}"#);
        assert!(matches!(
            Spec::parse(&empty),
            Err(SandboxError::InvalidSpec(_))
        ));
        let good = format!(r#"{{"command":"true","root":"{tmp}","tmp":"{tmp}","server_pid":1}}"#);
        assert!(Spec::parse(&good).is_ok());
        let no_server = format!(r#"{{"command":"true","root":"{tmp}","tmp":"{tmp}"}}"#);
        assert!(matches!(
            Spec::parse(&no_server),
            Err(SandboxError::ParseSpec(_))
        ));
        for abi in [0, 10] {
            let abi = format!(
                r#"{{"command":"true","root":"{tmp}","tmp":"{tmp}","server_pid":1,"landlock_abi":{abi}}}"#
            );
            assert!(matches!(
                Spec::parse(&abi),
                Err(SandboxError::InvalidSpec(_))
            ));
        }
    }

    #[test]
    fn the_environment_is_fixed_and_path_cannot_be_replaced() {
        let spec = Spec {
            command: "env".into(),
            root: "/r".into(),
            tmp: "/t".into(),
            env: [("PATH".into(), "/evil".into()), ("A".into(), "b".into())].into(),
            path: vec!["/opt/bin".into()],
            read_exec: vec![],
            read: vec![],
            ports: vec![],
            unix_sockets: false,
            server_pid: 1,
            landlock_abi: None,
            cgroups: vec![],
            limits: Limits::default(),
            unconfined: false,
        };
        let env = spec.environment();
        assert_eq!(
            env["PATH"],
            "/opt/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
        );
        assert_eq!(env["HOME"], "/t");
        assert_eq!(env["A"], "b");
    }
}
