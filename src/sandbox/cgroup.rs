//! Pids cgroups for commands: the kernel's process limit that binds root too (the
//! `RLIMIT_NPROC` of [`super::limits`] does not), and one place from which everything a
//! command started is killed. Each command gets `rummy/<server pid>/<name>` below the
//! server's own cgroup, in the cgroup v1 `pids` hierarchy and in the v2 one (on a pure v2
//! host with `pids` delegated, the server moves itself into `rummy/<server pid>/server`, since
//! v2 lets only leaves hold processes once a controller is enabled below).
//!
//! Which hierarchies exist and where this process sits in them is read from
//! `/proc/self/mountinfo` and `/proc/self/cgroup` ([`locate`], pure); whether one is usable
//! is found by creating the server's directory in it.

use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;

/// The directory below the server's own cgroup that holds rummy's.
const RUMMY_DIR: &str = "rummy";
/// The leaf a pure v2 server moves itself into.
const SERVER_LEAF: &str = "server";
/// How long killing and removing a command's cgroup may take.
const REMOVAL_TIME: Duration = Duration::from_secs(1);
/// The pause between two tries at emptying or removing a cgroup.
const RETRY_PAUSE: Duration = Duration::from_millis(10);

/// The cgroup hierarchies where this server can create commands' cgroups; at least one of
/// them limits processes.
#[derive(Debug, Clone)]
pub(crate) struct Cgroups {
    hierarchies: Vec<Hierarchy>,
}

/// One usable hierarchy.
#[derive(Debug, Clone, PartialEq)]
struct Hierarchy {
    /// `<own cgroup>/rummy/<server pid>`, created.
    server_dir: PathBuf,
    /// Whether cgroups here have `pids.max`.
    pids: bool,
    /// Whether cgroups here have `cgroup.kill` (v2, Linux 5.14).
    kill: bool,
}

/// A command's cgroup in each hierarchy; dropping it kills what is left in it and removes it.
#[derive(Debug)]
pub(crate) struct CommandCgroup {
    dirs: Vec<Hierarchy>,
}

impl Cgroups {
    /// Finds writable hierarchies (None when none can limit processes); blocking file I/O.
    pub(crate) fn detect() -> Option<Cgroups> {
        let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
        let membership = std::fs::read_to_string("/proc/self/cgroup").ok()?;
        let found = locate(&mountinfo, &membership);
        let v1_pids = found.iter().any(|found| found.kind == Kind::V1Pids);
        let hierarchies: Vec<Hierarchy> = found
            .into_iter()
            .filter_map(|found| prepare(&found, v1_pids))
            .collect();
        match hierarchies.iter().any(|hierarchy| hierarchy.pids) {
            true => Some(Cgroups { hierarchies }),
            false => {
                for hierarchy in &hierarchies {
                    let _ = std::fs::remove_dir(&hierarchy.server_dir);
                }
                None
            }
        }
    }

    /// This process's hierarchies, found once for every server it runs (the stale
    /// directories of servers no longer running swept then); `None` when none can limit
    /// processes. Blocking file I/O on the first call.
    pub(crate) fn shared() -> Option<Cgroups> {
        static FOUND: OnceLock<Option<Cgroups>> = OnceLock::new();
        FOUND
            .get_or_init(|| {
                let found = Cgroups::detect();
                if let Some(cgroups) = &found {
                    cgroups.sweep_stale();
                }
                found
            })
            .clone()
    }

    /// Creates `rummy/<server pid>/<name>` in each hierarchy, `pids.max` letting the command
    /// start `max_processes` processes (the supervisor, also in it, is counted apart).
    pub(crate) fn create(&self, name: &str, max_processes: u64) -> std::io::Result<CommandCgroup> {
        self.create_bounded(name, Some(max_processes))
    }

    /// Creates `rummy/<server pid>/<name>` in each hierarchy with no limit of its own: its
    /// processes are only held together, to be killed as one (a plugin process's).
    pub(crate) fn create_unbounded(&self, name: &str) -> std::io::Result<CommandCgroup> {
        self.create_bounded(name, None)
    }

    fn create_bounded(
        &self,
        name: &str,
        max_processes: Option<u64>,
    ) -> std::io::Result<CommandCgroup> {
        if name.is_empty() || name == SERVER_LEAF || name.contains('/') || name.starts_with('.') {
            return Err(std::io::Error::new(
                ErrorKind::InvalidInput,
                format!("{name:?} cannot name a command's cgroup"),
            ));
        }
        let mut cgroup = CommandCgroup { dirs: Vec::new() };
        for hierarchy in &self.hierarchies {
            let dir = hierarchy.server_dir.join(name);
            std::fs::create_dir(&dir)?;
            cgroup.dirs.push(Hierarchy {
                server_dir: dir.clone(),
                ..*hierarchy
            });
            if let (true, Some(max)) = (hierarchy.pids, max_processes) {
                std::fs::write(dir.join("pids.max"), max.saturating_add(1).to_string())?;
            }
        }
        Ok(cgroup)
    }

    /// Removes `rummy/<pid>` directories left by servers no longer running (killing what
    /// is still in them).
    pub(crate) fn sweep_stale(&self) {
        for hierarchy in &self.hierarchies {
            let Some(rummy_dir) = hierarchy.server_dir.parent() else {
                continue;
            };
            let Ok(entries) = std::fs::read_dir(rummy_dir) else {
                continue;
            };
            for entry in entries.flatten() {
                let path = entry.path();
                let stale = entry
                    .file_name()
                    .to_str()
                    .and_then(|name| name.parse::<u32>().ok())
                    .is_some_and(|pid| {
                        path != hierarchy.server_dir && !Path::new(&format!("/proc/{pid}")).exists()
                    });
                if stale {
                    remove_tree(&path, hierarchy.kill);
                }
            }
        }
    }
}

impl CommandCgroup {
    /// The directories the supervisor joins (goes into `Spec.cgroups`).
    pub(crate) fn paths(&self) -> Vec<PathBuf> {
        self.dirs.iter().map(|dir| dir.server_dir.clone()).collect()
    }

    /// Moves the process `pid` into it, in each hierarchy (what it starts afterwards is
    /// born there).
    pub(crate) fn join(&self, pid: u32) -> std::io::Result<()> {
        for dir in &self.dirs {
            std::fs::write(dir.server_dir.join("cgroup.procs"), pid.to_string())?;
        }
        Ok(())
    }

    /// Kills every process in it: v2's `cgroup.kill`, else SIGKILL to each process listed
    /// until none is (for at most a second).
    pub(crate) fn kill_all(&self) {
        for dir in &self.dirs {
            kill_everything_in(&dir.server_dir, dir.kill);
        }
    }

    /// Whether the process limit was hit: a fork was refused (`pids.events`' `max`).
    pub(crate) fn hit_process_limit(&self) -> bool {
        self.dirs.iter().filter(|dir| dir.pids).any(|dir| {
            std::fs::read_to_string(dir.server_dir.join("pids.events"))
                .is_ok_and(|events| limit_events(&events) > 0)
        })
    }
}

impl Drop for CommandCgroup {
    fn drop(&mut self) {
        self.kill_all();
        for dir in &self.dirs {
            remove_dir_retrying(&dir.server_dir);
        }
    }
}

/// How a hierarchy was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// Cgroup v1 with the `pids` controller.
    V1Pids,
    /// The cgroup v2 hierarchy.
    V2,
}

/// This process's cgroup directory in a mounted hierarchy.
#[derive(Debug, PartialEq, Eq)]
struct Found {
    own: PathBuf,
    kind: Kind,
}

/// The v1 `pids` and v2 hierarchies mounted read-write (per `mountinfo`) in which this
/// process's cgroup (per `/proc/self/cgroup`) is visible, with that cgroup's directory.
fn locate(mountinfo: &str, membership: &str) -> Vec<Found> {
    let mounts: Vec<Mount> = mountinfo.lines().filter_map(Mount::parse).collect();
    let mut found = Vec::new();
    for line in membership.lines() {
        let mut fields = line.splitn(3, ':');
        let (Some(id), Some(controllers), Some(path)) =
            (fields.next(), fields.next(), fields.next())
        else {
            continue;
        };
        let kind = if id == "0" && controllers.is_empty() {
            Kind::V2
        } else if controllers.split(',').any(|c| c == "pids") {
            Kind::V1Pids
        } else {
            continue;
        };
        let own = mounts
            .iter()
            .filter(|mount| mount.read_write && mount.kind() == Some(kind))
            .find_map(|mount| mount.dir_of(Path::new(path)));
        if let Some(own) = own {
            found.push(Found { own, kind });
        }
    }
    found
}

/// One line of `/proc/self/mountinfo`.
#[derive(Debug)]
struct Mount {
    /// The directory of the hierarchy mounted (`/` unless a sub-tree is).
    root: PathBuf,
    point: PathBuf,
    read_write: bool,
    fs_type: String,
    super_options: String,
}

impl Mount {
    /// `id parent major:minor root point options [optional…] - type source super-options`.
    fn parse(line: &str) -> Option<Mount> {
        let (before, after) = line.split_once(" - ")?;
        let fields: Vec<&str> = before.split(' ').collect();
        let mut after = after.split(' ');
        let fs_type = after.next()?.to_owned();
        let super_options = after.nth(1).unwrap_or_default().to_owned();
        Some(Mount {
            root: PathBuf::from(unescape(fields.get(3)?)),
            point: PathBuf::from(unescape(fields.get(4)?)),
            read_write: fields.get(5)?.split(',').any(|option| option == "rw"),
            fs_type,
            super_options,
        })
    }

    fn kind(&self) -> Option<Kind> {
        match self.fs_type.as_str() {
            "cgroup2" => Some(Kind::V2),
            "cgroup" if self.super_options.split(',').any(|o| o == "pids") => Some(Kind::V1Pids),
            _ => None,
        }
    }

    /// Where the cgroup at `path` of this hierarchy is, when this mount shows it.
    fn dir_of(&self, path: &Path) -> Option<PathBuf> {
        let below = path.strip_prefix(&self.root).ok()?;
        Some(self.point.join(below))
    }
}

/// Undoes mountinfo's octal escapes (`\040` for a space).
fn unescape(field: &str) -> String {
    let mut text = String::with_capacity(field.len());
    let mut rest = field;
    while let Some(at) = rest.find('\\') {
        text.push_str(&rest[..at]);
        let code = rest.get(at + 1..at + 4);
        match code.and_then(|code| u8::from_str_radix(code, 8).ok()) {
            Some(byte) => {
                text.push(char::from(byte));
                rest = &rest[at + 4..];
            }
            None => {
                text.push('\\');
                rest = &rest[at + 1..];
            }
        }
    }
    text.push_str(rest);
    text
}

/// The count on `pids.events`' `max` line.
fn limit_events(events: &str) -> u64 {
    events
        .lines()
        .find_map(|line| line.strip_prefix("max "))
        .and_then(|count| count.trim().parse().ok())
        .unwrap_or(0)
}

/// Creates the server's directory in a found hierarchy; `None` when it cannot be used.
/// A v2 hierarchy limits processes only when no v1 `pids` does and `pids` can be enabled
/// down to the server's directory.
fn prepare(found: &Found, v1_pids: bool) -> Option<Hierarchy> {
    let server_dir = found
        .own
        .join(RUMMY_DIR)
        .join(std::process::id().to_string());
    std::fs::create_dir_all(&server_dir).ok()?;
    let hierarchy = match found.kind {
        Kind::V1Pids => Hierarchy {
            server_dir,
            pids: true,
            kill: false,
        },
        Kind::V2 => Hierarchy {
            pids: !v1_pids && delegate_pids(&found.own, &server_dir),
            kill: server_dir.join("cgroup.kill").exists(),
            server_dir,
        },
    };
    Some(hierarchy)
}

/// Enables v2's `pids` controller from the server's own cgroup down to `server_dir`. A cgroup
/// with a controller enabled below it may hold no process, so the server first moves itself
/// into a leaf of its own; when other processes share its cgroup this fails.
fn delegate_pids(own: &Path, server_dir: &Path) -> bool {
    let offered = std::fs::read_to_string(own.join("cgroup.controllers")).unwrap_or_default();
    if !offered.split_whitespace().any(|c| c == "pids") {
        return false;
    }
    let leaf = server_dir.join(SERVER_LEAF);
    let moved = std::fs::create_dir_all(&leaf)
        .and_then(|()| std::fs::write(leaf.join("cgroup.procs"), std::process::id().to_string()));
    if moved.is_err() {
        return false;
    }
    let rummy_dir = own.join(RUMMY_DIR);
    [own, rummy_dir.as_path(), server_dir]
        .iter()
        .all(|dir| std::fs::write(dir.join("cgroup.subtree_control"), "+pids").is_ok())
}

/// The processes listed in a cgroup's `cgroup.procs`.
fn processes_in(dir: &Path) -> Vec<Pid> {
    std::fs::read_to_string(dir.join("cgroup.procs"))
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|pid| pid.parse::<i32>().ok())
        .map(Pid::from_raw)
        .collect()
}

/// Kills every process in `dir` (through `cgroup.kill` when `has_kill`), retrying until none
/// is listed, for at most [`REMOVAL_TIME`].
fn kill_everything_in(dir: &Path, has_kill: bool) {
    if has_kill {
        let _ = std::fs::write(dir.join("cgroup.kill"), "1");
    }
    let start = Instant::now();
    loop {
        let processes = processes_in(dir);
        if processes.is_empty() || start.elapsed() > REMOVAL_TIME {
            return;
        }
        for pid in processes {
            let _ = kill(pid, Signal::SIGKILL);
        }
        pause();
    }
}

/// Waits [`RETRY_PAUSE`] for processes to exit. Everything here is blocking code, run on
/// the server's blocking pool (a [`CommandCgroup`] is dropped there too).
#[expect(
    clippy::disallowed_methods,
    reason = "blocking code by contract, never on the async executor"
)]
fn pause() {
    std::thread::sleep(RETRY_PAUSE);
}

/// Removes an empty cgroup, retrying while its last processes are still exiting.
fn remove_dir_retrying(dir: &Path) {
    let start = Instant::now();
    while let Err(error) = std::fs::remove_dir(dir) {
        if error.kind() == ErrorKind::NotFound || start.elapsed() > REMOVAL_TIME {
            return;
        }
        pause();
    }
}

/// Kills what is in a stale server's cgroup and its commands' and removes them all.
fn remove_tree(dir: &Path, has_kill: bool) {
    if let Ok(entries) = std::fs::read_dir(dir) {
        for entry in entries.flatten() {
            if entry.file_type().is_ok_and(|kind| kind.is_dir()) {
                remove_tree(&entry.path(), has_kill);
            }
        }
    }
    kill_everything_in(dir, has_kill);
    remove_dir_retrying(dir);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// This machine's kind: v1 controllers, `pids` among them, and v2 at `unified`.
    const HYBRID_MOUNTS: &str = "\
31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids
40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
";
    const HYBRID_CGROUP: &str = "\
9:name=systemd:/
8:pids:/user.slice/session-2.scope
4:memory:/process_api/46897f
0::/user.slice/session-2.scope
";

    #[test]
    fn a_hybrid_host_gives_v1_pids_and_v2() {
        assert_eq!(
            locate(HYBRID_MOUNTS, HYBRID_CGROUP),
            [
                Found {
                    own: "/sys/fs/cgroup/pids/user.slice/session-2.scope".into(),
                    kind: Kind::V1Pids
                },
                Found {
                    own: "/sys/fs/cgroup/unified/user.slice/session-2.scope".into(),
                    kind: Kind::V2
                },
            ]
        );
    }

    #[test]
    fn a_pure_v2_host_gives_the_own_cgroup_below_the_mount_s_root() {
        let mounts = "\
30 24 0:26 /system.slice /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw,nsdelegate
";
        let cgroup = "0::/system.slice/rummy.service\n";
        assert_eq!(
            locate(mounts, cgroup),
            [Found {
                own: "/sys/fs/cgroup/rummy.service".into(),
                kind: Kind::V2
            }]
        );
        let outside = "0::/user.slice/x.scope\n";
        assert_eq!(locate(mounts, outside), []);
    }

    #[test]
    fn a_read_only_mount_or_other_controller_is_not_used() {
        let mounts = "\
39 31 0:36 / /sys/fs/cgroup/pids ro,relatime - cgroup cgroup rw,pids
41 31 0:38 / /sys/fs/cgroup ro,relatime - cgroup2 cgroup2 rw
42 31 0:39 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
";
        let cgroup = "8:pids:/\n1:cpu:/\n0::/\n";
        assert_eq!(locate(mounts, cgroup), []);
    }

    #[test]
    fn escaped_mount_points_are_read() {
        let line = r"50 31 0:40 / /mnt/my\040cgroups rw - cgroup2 cgroup2 rw";
        let mount = Mount::parse(line).unwrap();
        assert_eq!(mount.point, Path::new("/mnt/my cgroups"));
        assert_eq!(unescape(r"a\\b\0"), r"a\\b\0");
    }

    #[test]
    fn the_limit_count_is_read_from_pids_events() {
        assert_eq!(limit_events("max 3\n"), 3);
        assert_eq!(limit_events("max 0\n"), 0);
        assert_eq!(limit_events("other 2\nmax 12\n"), 12);
        assert_eq!(limit_events(""), 0);
    }
}
