//! Commands run on the server: each accepted `sh`/`env` command of a project whose commands
//! run here is launched confined (`rummy sandbox-exec` with its [`Spec`]), its output
//! streamed to the project's clients as `run/output` and kept for its entry, and it is
//! killed — with everything it started — at its wall-clock limit, past the output limit, or
//! when its run is aborted. One command per run at a time; at most `max_concurrent` on the
//! server, the rest wait.

use std::collections::HashMap;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::Semaphore;
use tracing::Instrument;

use crate::config::{CommandSettings, SandboxSwitch, Settings};
use crate::db::ids::{ProjectId, RunId};
use crate::db::DbHandle;
use crate::egress::{HostCredentials, LazyEgress, Opened};
use crate::hub::notifications::{RunOutput, UiNotification};
use crate::hub::HubRegistry;
use crate::llm::CancellationToken;
use crate::telemetry::TRACE;

use super::kept::KeptOutput;
use super::outcome::{CommandOutcome, Ending, Reported};
use super::policy::CommandPolicy;
use super::tree::kill_tree;
use super::{etc_readable, Cgroups, CommandCgroup, Spec, EXEC_SUBCOMMAND};

/// How often streamed output is sent, at most.
const STREAM_EVERY: Duration = Duration::from_millis(100);
/// Streamed output sent at once when this much waits.
const STREAM_CHUNK: usize = 16 << 10;
/// Output streamed to clients per command per second at most; the rest is counted as
/// skipped (the entry still keeps it).
const STREAM_BYTES_PER_SEC: usize = 64 << 10;
/// How long output is still read after the command exits (what it left behind was killed,
/// so the pipe closes at once unless something escaped the kill).
const DRAIN: Duration = Duration::from_millis(500);

/// One command to run: where, for whom, and under which policy.
#[derive(Debug, Clone, Copy)]
struct CommandRequest<'a> {
    pub run: RunId,
    /// The run's alias, as clients name it.
    pub alias: &'a str,
    pub project: ProjectId,
    /// The command's entry.
    pub path: &'a str,
    pub command: &'a str,
    pub root: &'a Path,
    pub policy: &'a CommandPolicy,
}

/// Where a run's accepted commands run on the server: the runner, the run and its project,
/// and the project's policy.
#[derive(Clone, Copy)]
pub(crate) struct CommandPlace<'a> {
    pub commands: &'a ServerCommands,
    pub run: RunId,
    pub alias: &'a str,
    pub project: ProjectId,
    pub root: &'a Path,
    pub policy: &'a CommandPolicy,
}

impl CommandPlace<'_> {
    /// Runs `command`, the proposal at `path`, here.
    pub(crate) async fn run(
        &self,
        path: &str,
        command: &str,
    ) -> Result<CommandOutcome, CommandError> {
        let span = tracing::info_span!(
            target: TRACE,
            "sandbox.command",
            run.id = %self.run,
            project.id = self.project.0,
            command.exit = tracing::field::Empty,
            command.status = tracing::field::Empty,
        );
        let outcome = self
            .commands
            .run(CommandRequest {
                run: self.run,
                alias: self.alias,
                project: self.project,
                path,
                command,
                root: self.root,
                policy: self.policy,
            })
            .instrument(span.clone())
            .await;
        if let Ok(outcome) = &outcome {
            span.record("command.exit", outcome.exit.map(i64::from));
            span.record("command.status", outcome.status.code());
        }
        outcome
    }
}

/// The commands running on this server, and what they are run with.
#[derive(Clone)]
pub(crate) struct ServerCommands {
    inner: Arc<Inner>,
}

struct Inner {
    settings: CommandSettings,
    /// The binary that confines a command, when an admin named one.
    launcher: Option<PathBuf>,
    /// Where each command's scratch directory is made: this instance's directory under
    /// `RUMMY_SANDBOX_TMP`, as instances may share a home.
    scratch: PathBuf,
    /// What every command may read and execute besides the system's directories.
    read: Vec<PathBuf>,
    /// What commands may not read even where it is readable to all: the home, the users
    /// file.
    private: Vec<PathBuf>,
    /// What running commands needs of this machine, found on first need.
    machine: tokio::sync::OnceCell<Machine>,
    hubs: HubRegistry,
    /// The egress proxy, for commands of projects that allow destinations by host.
    egress: LazyEgress,
    running: Mutex<HashMap<RunId, Running>>,
    slots: Semaphore,
}

/// What running commands needs of this machine, found once.
struct Machine {
    /// The binary that confines a command: the one an admin named, else `rummy-sandbox`
    /// beside this server's binary, else this server's binary itself.
    launcher: PathBuf,
    /// Where commands' pids cgroups are made (`None`: no writable one).
    cgroups: Option<Cgroups>,
    /// The part of `/etc` commands may read.
    etc: Vec<PathBuf>,
}

/// A command under way: its entry, and what stops it.
struct Running {
    path: String,
    stop: CancellationToken,
    /// Who aborted it, once someone did (`Some(None)`: the operator).
    aborted_by: Arc<Mutex<Option<Option<String>>>>,
}

/// Why a command could not be run.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CommandError {
    #[error("a command of this run is already running on the server: {0}")]
    Busy(String),
}

impl ServerCommands {
    /// The runner of the instance `instance` for `settings`, streaming through `hubs`; its
    /// egress proxy finds people's host credentials in `credentials` and audits their use
    /// in `db`.
    pub(crate) fn new(
        settings: &Settings,
        hubs: HubRegistry,
        instance: &str,
        db: DbHandle,
        credentials: Arc<dyn HostCredentials>,
    ) -> ServerCommands {
        let commands = settings.commands.clone();
        let launcher = commands.launcher.clone();
        let scratch = commands
            .tmp
            .clone()
            .unwrap_or_else(|| settings.storage.home.join("sandbox"))
            .join(instance);
        let concurrent = match commands.max_concurrent {
            0 => std::thread::available_parallelism().map_or(1, usize::from),
            n => n,
        };
        ServerCommands {
            inner: Arc::new(Inner {
                read: commands.read.clone(),
                private: [
                    Some(settings.storage.home.clone()),
                    settings.server.users_file.clone(),
                ]
                .into_iter()
                .flatten()
                .collect(),
                machine: tokio::sync::OnceCell::new(),
                settings: commands.clone(),
                launcher,
                scratch,
                hubs,
                egress: LazyEgress::new(
                    commands.clone(),
                    settings.storage.home.clone(),
                    db,
                    credentials,
                ),
                running: Mutex::default(),
                slots: Semaphore::new(concurrent),
            }),
        }
    }

    /// The entry of `run`'s command running now, if one is.
    pub(crate) fn running(&self, run: RunId) -> Option<String> {
        self.lock().get(&run).map(|running| running.path.clone())
    }

    /// Kills `run`'s command, if one is running, on behalf of `person`; whether one was.
    pub(crate) fn abort(&self, run: RunId, person: Option<String>) -> bool {
        let running = self.lock();
        let Some(running) = running.get(&run) else {
            return false;
        };
        *running
            .aborted_by
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(person);
        running.stop.cancel();
        true
    }

    /// Runs `request`'s command confined, streaming its output, until it ends.
    async fn run(&self, request: CommandRequest<'_>) -> Result<CommandOutcome, CommandError> {
        let stop = CancellationToken::new();
        let aborted_by = Arc::new(Mutex::new(None));
        {
            let mut running = self.lock();
            if let Some(other) = running.get(&request.run) {
                return Err(CommandError::Busy(other.path.clone()));
            }
            running.insert(
                request.run,
                Running {
                    path: request.path.to_owned(),
                    stop: stop.clone(),
                    aborted_by: Arc::clone(&aborted_by),
                },
            );
        }
        let _registered = Registered {
            commands: self,
            run: request.run,
        };
        // An abort while the command waits for a place ends it before it starts.
        let outcome = tokio::select! {
            slot = self.inner.slots.acquire() => match slot {
                Ok(_slot) => self.launch(request, &stop, &aborted_by).await,
                Err(_) => CommandOutcome::of(
                    &Ending::NotStarted("the server is stopping".into()),
                    String::new(),
                    reported(request.policy, false),
                ),
            },
            () = stop.cancelled() => CommandOutcome::of(
                &Ending::Aborted(taken(&aborted_by)),
                String::new(),
                reported(request.policy, false),
            ),
        };
        self.stream(
            request,
            RunOutput {
                done: true,
                status: Some(outcome.status.code()),
                exit: outcome.exit,
                ..RunOutput::default()
            },
        );
        Ok(outcome)
    }

    /// Gets the server ready to run commands at start: removes the scratch directories of
    /// instances no longer `alive` (a crash leaves them), warns when commands are not
    /// confined, and when `needed` (some project runs its commands here) checks that they
    /// can be confined; `Err` says why not.
    pub(crate) async fn prepare(&self, needed: bool, alive: Vec<String>) -> Result<(), String> {
        let scratch = self.inner.scratch.clone();
        tokio::task::spawn_blocking(move || remove_stale_scratch(&scratch, &alive))
            .await
            .map_err(|error| error.to_string())?;
        if self.inner.settings.sandbox == SandboxSwitch::Off {
            tracing::warn!(
                "RUMMY_SANDBOX=off: commands run on the server are not confined by Landlock or \
                 seccomp (their limits, scrubbed environment and kills still hold)"
            );
        }
        if needed {
            self.probe().await.map_err(|reason| {
                format!(
                    "commands cannot run confined on this server: {reason}. Run them in the \
                     clients (RUMMY_RUN_COMMANDS=client and no project set to \"server\"), \
                     or set RUMMY_SANDBOX=off to run them without Landlock and seccomp"
                )
            })?;
            tracing::info!(
                confined = self.inner.settings.sandbox == SandboxSwitch::On,
                "commands run on the server"
            );
        }
        Ok(())
    }

    /// Runs `true` the way every command runs, in a scratch root of its own: `Err` with
    /// what the launcher said when confinement cannot be set up here.
    pub(crate) async fn probe(&self) -> Result<(), String> {
        let confined = self.inner.settings.sandbox == SandboxSwitch::On;
        if confined && nix::unistd::geteuid().is_root() && self.machine().await.cgroups.is_none() {
            return Err(
                "rummy runs as root and no writable pids cgroup was found, so the \
                        process limit could not hold (the kernel does not apply RLIMIT_NPROC \
                        to root): run rummy as another user, or where it may create cgroups"
                    .into(),
            );
        }
        let root = Scratch::make(self.inner.scratch.join("probe")).await?;
        let policy = crate::sandbox::policy::ProjectChoice::default().policy(&self.inner.settings);
        let place = Place {
            scratch: root.path(),
            proxy: None,
        };
        let spec = self
            .spec("true", root.path(), place, &policy, Vec::new())
            .await;
        let (mut child, mut output) = self.spawn(&spec).await.map_err(|error| error.to_string())?;
        let mut said = Vec::new();
        let (status, _) = tokio::join!(child.wait(), output.read_to_end(&mut said));
        root.remove().await;
        match status {
            Ok(status) if status.success() => Ok(()),
            Ok(status) => Err(format!(
                "{} ({status})",
                String::from_utf8_lossy(&said).trim()
            )),
            Err(error) => Err(error.to_string()),
        }
    }

    /// Runs `request`'s command in a scratch directory and a cgroup of its own, both
    /// removed after it.
    async fn launch(
        &self,
        request: CommandRequest<'_>,
        stop: &CancellationToken,
        aborted_by: &Mutex<Option<Option<String>>>,
    ) -> CommandOutcome {
        let policy = request.policy;
        let name = format!("{}-{}", request.project.0, request.run.0);
        let scratch = match Scratch::make(self.inner.scratch.join(&name)).await {
            Ok(scratch) => scratch,
            Err(reason) => {
                return CommandOutcome::of(
                    &Ending::NotStarted(reason),
                    String::new(),
                    reported(policy, false),
                )
            }
        };
        let proxy = if policy.hosts.is_empty() {
            None
        } else {
            let opened = self
                .inner
                .egress
                .open(
                    request.project,
                    request.run,
                    policy.hosts.clone(),
                    scratch.path(),
                )
                .await;
            match opened {
                Ok(opened) => Some(opened),
                Err(reason) => {
                    tracing::error!(%reason, "cannot open the egress proxy for a command");
                    scratch.remove().await;
                    return CommandOutcome::of(
                        &Ending::NotStarted(format!("the egress proxy: {reason}")),
                        String::new(),
                        reported(policy, false),
                    );
                }
            }
        };
        // Cgroups are per process: every server of this process makes its commands' there.
        static COMMANDS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let number = COMMANDS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let cgroup = match self
            .cgroup(format!("{name}-{number}"), policy.processes)
            .await
        {
            Ok(cgroup) => cgroup,
            Err(reason) => {
                scratch.remove().await;
                return CommandOutcome::of(
                    &Ending::NotStarted(reason),
                    String::new(),
                    reported(policy, false),
                );
            }
        };
        let place = Place {
            scratch: scratch.path(),
            proxy: proxy.as_ref().map(|(opened, ca)| (opened, ca.as_path())),
        };
        let outcome = self
            .supervise(request, place, cgroup.as_ref(), stop, aborted_by)
            .await;
        drop(proxy);
        if let Some(cgroup) = cgroup {
            let _ = tokio::task::spawn_blocking(move || drop(cgroup)).await;
        }
        scratch.remove().await;
        outcome
    }

    /// A cgroup of its own for a command (none where the machine has no writable one).
    async fn cgroup(
        &self,
        name: String,
        processes: u64,
    ) -> Result<Option<Arc<CommandCgroup>>, String> {
        let Some(cgroups) = self.machine().await.cgroups.clone() else {
            return Ok(None);
        };
        tokio::task::spawn_blocking(move || cgroups.create(&name, processes))
            .await
            .map_err(|error| error.to_string())?
            .map(|cgroup| Some(Arc::new(cgroup)))
            .map_err(|error| format!("cannot make the command's cgroup: {error}"))
    }

    /// What running commands needs of this machine, found (off the executor) on first need;
    /// cgroups a crashed server left are removed when this process first looks for its own
    /// ([`Cgroups::shared`]).
    async fn machine(&self) -> &Machine {
        self.inner
            .machine
            .get_or_init(|| async {
                let private = self.inner.private.clone();
                let named = self.inner.launcher.clone();
                tokio::task::spawn_blocking(move || Machine {
                    launcher: named.unwrap_or_else(default_launcher),
                    cgroups: Cgroups::shared(),
                    etc: etc_readable(&private),
                })
                .await
                .unwrap_or_else(|_| Machine {
                    launcher: PathBuf::from(OWN_BINARY),
                    cgroups: None,
                    etc: Vec::new(),
                })
            })
            .await
    }

    /// Launches `request`'s command in `place` and follows it to its end.
    async fn supervise(
        &self,
        request: CommandRequest<'_>,
        place: Place<'_>,
        cgroup: Option<&Arc<CommandCgroup>>,
        stop: &CancellationToken,
        aborted_by: &Mutex<Option<Option<String>>>,
    ) -> CommandOutcome {
        let policy = request.policy;
        let mut kept = KeptOutput::new(usize::try_from(policy.output_bytes).unwrap_or(usize::MAX));
        let cgroups = cgroup.map(|cgroup| cgroup.paths()).unwrap_or_default();
        let spec = self
            .spec(request.command, request.root, place, policy, cgroups)
            .await;
        let (mut child, mut output) = match self.spawn(&spec).await {
            Ok(spawned) => spawned,
            Err(error) => {
                tracing::error!(%error, "cannot start the sandbox launcher");
                return CommandOutcome::of(
                    &Ending::NotStarted(error.to_string()),
                    String::new(),
                    reported(policy, false),
                );
            }
        };
        let supervisor = child.id();
        let mut stream = Streamer::new(self, request);
        let mut buffer = vec![0_u8; 8 << 10];
        let deadline = tokio::time::sleep(Duration::from_secs(policy.wall_secs));
        tokio::pin!(deadline);
        let mut tick = tokio::time::interval(STREAM_EVERY);
        let mut ending = None;
        let mut exited: Option<u8> = None;
        let drained = tokio::time::sleep(Duration::MAX / 4);
        tokio::pin!(drained);
        loop {
            tokio::select! {
                read = output.read(&mut buffer) => match read {
                    Ok(0) | Err(_) => break,
                    Ok(n) => {
                        kept.push(&buffer[..n]);
                        stream.push(&buffer[..n]);
                        if kept.total() > self.inner.settings.kill_output_bytes {
                            ending = Some(Ending::TooMuchOutput(self.inner.settings.kill_output_bytes));
                            break;
                        }
                    }
                },
                status = child.wait(), if exited.is_none() => {
                    let code = status.ok().and_then(|status| exit_code(&status)).unwrap_or(u8::MAX);
                    exited = Some(code);
                    drained.as_mut().reset(tokio::time::Instant::now() + DRAIN);
                }
                () = &mut drained => break,
                () = &mut deadline, if exited.is_none() => {
                    ending = Some(Ending::TimedOut(policy.wall_secs));
                    break;
                }
                () = stop.cancelled() => {
                    ending = Some(Ending::Aborted(taken(aborted_by)));
                    break;
                }
                _ = tick.tick() => stream.flush(),
            }
        }
        stream.flush();
        let ending = match exited {
            Some(code) => ending.unwrap_or(Ending::Exited(code)),
            None => stop_launcher(&mut child, supervisor, cgroup, ending).await,
        };
        kill_cgroup(cgroup).await;
        let hit_process_limit = hit_process_limit(cgroup).await;
        CommandOutcome::of(&ending, kept.text(), reported(policy, hit_process_limit))
    }

    async fn spec(
        &self,
        command: &str,
        root: &Path,
        place: Place<'_>,
        policy: &CommandPolicy,
        cgroups: Vec<PathBuf>,
    ) -> Spec {
        let mut env = policy.env.clone();
        let ports = match place.proxy {
            Some((proxy, ca_file)) => {
                env.extend(proxy.env(ca_file));
                vec![proxy.port]
            }
            None => policy.ports.clone(),
        };
        Spec {
            command: command.to_owned(),
            root: root.to_path_buf(),
            tmp: place.scratch.to_path_buf(),
            env,
            path: self.inner.settings.path.clone(),
            read_exec: self.inner.read.clone(),
            read: self.machine().await.etc.clone(),
            ports,
            unix_sockets: policy.unix_sockets,
            server_pid: std::process::id(),
            landlock_abi: None,
            cgroups,
            limits: policy.limits(),
            unconfined: self.inner.settings.sandbox == SandboxSwitch::Off,
        }
    }

    /// Starts the launcher with `spec` on its stdin and an empty environment; its output
    /// and errors come, in order, through the one pipe returned.
    async fn spawn(
        &self,
        spec: &Spec,
    ) -> std::io::Result<(tokio::process::Child, tokio::net::unix::pipe::Receiver)> {
        let json = serde_json::to_vec(spec).map_err(std::io::Error::other)?;
        let (reader, writer) = std::io::pipe()?;
        let errors = writer.try_clone()?;
        let launcher = self.machine().await.launcher.clone();
        let mut command = tokio::process::Command::new(launcher);
        command
            .arg(EXEC_SUBCOMMAND)
            .env_clear()
            .stdin(Stdio::piped())
            .stdout(Stdio::from(writer))
            .stderr(Stdio::from(errors))
            .kill_on_drop(true);
        let mut child = command.spawn()?;
        drop(command);
        let output = tokio::net::unix::pipe::Receiver::from_owned_fd(OwnedFd::from(reader))?;
        if let Some(mut stdin) = child.stdin.take() {
            stdin.write_all(&json).await?;
        }
        Ok((child, output))
    }

    fn stream(&self, request: CommandRequest<'_>, output: RunOutput) {
        self.inner.hubs.broadcast(
            request.project,
            UiNotification::Output(RunOutput {
                run: request.alias.to_owned(),
                path: request.path.to_owned(),
                ..output
            }),
        );
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<RunId, Running>> {
        self.inner
            .running
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// Where one command runs: its scratch directory (`HOME`, `TMPDIR`), and its egress proxy
/// with the CA certificate's file, when its project allows destinations by host.
#[derive(Clone, Copy)]
struct Place<'a> {
    scratch: &'a Path,
    proxy: Option<(&'a Opened, &'a Path)>,
}

/// Takes a run's command off the running ones when its run ends, however it ends.
struct Registered<'a> {
    commands: &'a ServerCommands,
    run: RunId,
}

impl Drop for Registered<'_> {
    fn drop(&mut self) {
        self.commands.lock().remove(&self.run);
    }
}

/// Output on its way to the clients: sent at most every [`STREAM_EVERY`] or per
/// [`STREAM_CHUNK`], within [`STREAM_BYTES_PER_SEC`].
struct Streamer<'a> {
    commands: &'a ServerCommands,
    request: CommandRequest<'a>,
    waiting: Vec<u8>,
    skipped: u64,
    sent_this_second: usize,
    second: tokio::time::Instant,
}

impl<'a> Streamer<'a> {
    fn new(commands: &'a ServerCommands, request: CommandRequest<'a>) -> Streamer<'a> {
        Streamer {
            commands,
            request,
            waiting: Vec::new(),
            skipped: 0,
            sent_this_second: 0,
            second: tokio::time::Instant::now(),
        }
    }

    fn push(&mut self, bytes: &[u8]) {
        let now = tokio::time::Instant::now();
        if now.duration_since(self.second) >= Duration::from_secs(1) {
            self.second = now;
            self.sent_this_second = 0;
        }
        let room = STREAM_BYTES_PER_SEC.saturating_sub(self.sent_this_second + self.waiting.len());
        let taken = room.min(bytes.len());
        self.waiting.extend_from_slice(&bytes[..taken]);
        self.skipped += (bytes.len() - taken) as u64;
        if self.waiting.len() >= STREAM_CHUNK {
            self.flush();
        }
    }

    fn flush(&mut self) {
        if self.waiting.is_empty() && self.skipped == 0 {
            return;
        }
        let cut = utf8_prefix(&self.waiting);
        let text: Vec<u8> = self.waiting.drain(..cut).collect();
        self.sent_this_second += text.len();
        let skipped = std::mem::take(&mut self.skipped);
        self.commands.stream(
            self.request,
            RunOutput {
                text: (!text.is_empty()).then(|| String::from_utf8_lossy(&text).into_owned()),
                skipped: (skipped > 0).then_some(skipped),
                ..RunOutput::default()
            },
        );
    }
}

/// The length of `bytes` without an incomplete UTF-8 character at its end (held back for
/// the next piece), unless nothing else is left.
fn utf8_prefix(bytes: &[u8]) -> usize {
    match std::str::from_utf8(bytes) {
        Ok(_) => bytes.len(),
        Err(error) if error.error_len().is_none() && error.valid_up_to() > 0 => error.valid_up_to(),
        Err(_) => bytes.len(),
    }
}

/// A command's scratch directory, readable by its owner only; removed after the command.
struct Scratch(PathBuf);

impl Scratch {
    async fn make(path: PathBuf) -> Result<Scratch, String> {
        let made = path.clone();
        tokio::task::spawn_blocking(move || {
            use std::os::unix::fs::DirBuilderExt;
            let _ = std::fs::remove_dir_all(&made);
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(&made)
        })
        .await
        .map_err(|error| error.to_string())?
        .map_err(|error| format!("cannot make {}: {error}", path.display()))?;
        Ok(Scratch(path))
    }

    fn path(&self) -> &Path {
        &self.0
    }

    /// Removes it and all the command left in it (symlinks are removed, not followed).
    async fn remove(self) {
        let path = self.0;
        let _ = tokio::task::spawn_blocking(move || {
            if let Err(error) = std::fs::remove_dir_all(&path) {
                tracing::warn!(%error, dir = %path.display(), "cannot remove a command's scratch directory");
            }
        })
        .await;
    }
}

/// Removes the scratch directories of instances not `alive` beside `scratch` (this
/// instance's own): those named as an instance is (32 hex digits), nothing else an admin
/// keeps under `RUMMY_SANDBOX_TMP`.
fn remove_stale_scratch(scratch: &Path, alive: &[String]) {
    let Some(Ok(entries)) = scratch.parent().map(std::fs::read_dir) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        let an_instance = name.len() == 32 && name.bytes().all(|byte| byte.is_ascii_hexdigit());
        if an_instance && !alive.iter().any(|id| *id == name) {
            if let Err(error) = std::fs::remove_dir_all(entry.path()) {
                tracing::warn!(%error, dir = %entry.path().display(), "cannot remove an old scratch directory");
            }
        }
    }
}

/// The exit status as a shell reports it: the code, or `128 + n` for signal n.
fn exit_code(status: &std::process::ExitStatus) -> Option<u8> {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => u8::try_from(code).ok(),
        (None, Some(signal)) => u8::try_from(128 + signal).ok(),
        (None, None) => None,
    }
}

/// Kills every process under the launcher `supervisor` (which kills what is left itself
/// when its command ends; this is for a command stopped before it ended), then the
/// launcher. Only for a launcher not yet reaped.
async fn kill_all(supervisor: Option<u32>) {
    let Some(supervisor) = supervisor else {
        return;
    };
    let _ = tokio::task::spawn_blocking(move || kill_tree(supervisor)).await;
}

/// Who aborted, as [`ServerCommands::abort`] recorded it (`None`: the operator).
fn taken(aborted_by: &Mutex<Option<Option<String>>>) -> Option<String> {
    aborted_by
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .clone()
        .flatten()
}

/// This server's own binary, which has the launcher's stages too.
const OWN_BINARY: &str = "/proc/self/exe";

/// `rummy-sandbox` beside this server's binary when there is one, else this binary.
fn default_launcher() -> PathBuf {
    std::env::current_exe()
        .ok()
        .and_then(|exe| Some(exe.parent()?.join(super::LAUNCHER_BINARY)))
        .filter(|launcher| launcher.is_file())
        .unwrap_or_else(|| PathBuf::from(OWN_BINARY))
}

/// Kills a launcher `child` (not reaped yet, so no other process can have its pid) with all
/// it started, and how the command ended: `ending` when it was stopped, else its status.
async fn stop_launcher(
    child: &mut tokio::process::Child,
    supervisor: Option<u32>,
    cgroup: Option<&Arc<CommandCgroup>>,
    ending: Option<Ending>,
) -> Ending {
    kill_cgroup(cgroup).await;
    kill_all(supervisor).await;
    let exited = child
        .wait()
        .await
        .ok()
        .and_then(|status| exit_code(&status));
    match (ending, exited) {
        (Some(ending), _) => ending,
        (None, Some(code)) => Ending::Exited(code),
        (None, None) => Ending::NotStarted("the launcher ended without a status".into()),
    }
}

/// Kills everything in a command's cgroup, off the executor.
async fn kill_cgroup(cgroup: Option<&Arc<CommandCgroup>>) {
    if let Some(cgroup) = cgroup.cloned() {
        let _ = tokio::task::spawn_blocking(move || cgroup.kill_all()).await;
    }
}

/// Whether a command reached its process limit, read off the executor.
async fn hit_process_limit(cgroup: Option<&Arc<CommandCgroup>>) -> bool {
    let Some(cgroup) = cgroup.cloned() else {
        return false;
    };
    tokio::task::spawn_blocking(move || cgroup.hit_process_limit())
        .await
        .unwrap_or(false)
}

fn reported(policy: &CommandPolicy, hit_process_limit: bool) -> Reported {
    Reported {
        cpu_secs: policy.cpu_secs,
        file_mb: policy.file_mb,
        processes: policy.processes,
        hit_process_limit,
    }
}
