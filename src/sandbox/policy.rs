//! What a project's commands may do: the project's own choice (`project/config`, set by
//! admins), kept within the server's maxima (`[commands]`); what a project leaves unset is
//! the server's.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::config::{may_pass_to_commands, CommandSettings, RunCommands};
use crate::db::ids::ProjectId;
use crate::db::queries::project_settings;
use crate::db::{DbError, DbHandle};
use crate::egress::Destination;

/// Bytes in a MiB.
const MIB: u64 = 1 << 20;

/// A project's own settings, as an admin gave them; `None` takes the server's.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct ProjectChoice {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commands: Option<RunCommands>,
    #[serde(default)]
    pub sandbox: SandboxChoice,
}

/// A project's own sandbox limits and allowances.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct SandboxChoice {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_secs: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wall_secs: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_mb: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub processes: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_mb: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_files: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_bytes: Option<u64>,
    /// TCP ports commands may connect to (within `RUMMY_SANDBOX_PORTS`); none: no network.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ports: Vec<u16>,
    /// Destinations commands may reach through rummy's egress proxy (within
    /// `RUMMY_SANDBOX_HOSTS`); then the proxy's port is the only one they may connect to.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hosts: Vec<Destination>,
    /// Whether commands may open unix sockets (a kernel before Landlock ABI 9 cannot limit
    /// which ones they connect to, `/run/docker.sock` among them).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub unix_sockets: bool,
    /// Variables added to the commands' environment.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
}

/// What one project's commands may do, in effect.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct CommandPolicy {
    pub commands: RunCommands,
    pub cpu_secs: u64,
    pub wall_secs: u64,
    pub memory_mb: u64,
    pub processes: u64,
    pub file_mb: u64,
    pub open_files: u64,
    pub output_bytes: u64,
    pub ports: Vec<u16>,
    pub hosts: Vec<Destination>,
    pub unix_sockets: bool,
    pub env: BTreeMap<String, String>,
}

impl CommandPolicy {
    /// The limits the launcher sets.
    pub(crate) fn limits(&self) -> super::Limits {
        super::Limits {
            cpu_seconds: self.cpu_secs,
            memory_bytes: self.memory_mb.saturating_mul(MIB),
            file_size_bytes: self.file_mb.saturating_mul(MIB),
            open_files: self.open_files,
            processes: self.processes,
        }
    }
}

impl ProjectChoice {
    /// The project's choice as stored (none: the server's defaults). A stored value this
    /// version cannot read is logged and taken as no choice.
    pub(crate) async fn load(db: &DbHandle, project: ProjectId) -> Result<ProjectChoice, DbError> {
        let stored = db
            .read(move |conn| project_settings::get(conn, project))
            .await?;
        Ok(match stored.map(|json| serde_json::from_str(&json)) {
            Some(Ok(choice)) => choice,
            Some(Err(error)) => {
                tracing::error!(%error, project = project.0, "a project's stored settings are unreadable; the server's apply");
                ProjectChoice::default()
            }
            None => ProjectChoice::default(),
        })
    }

    /// Why `self` is beyond what `server` allows (a limit above its maximum, a port not
    /// allowed, a variable that may not be passed), or `Ok`.
    pub(crate) fn check(&self, server: &CommandSettings) -> Result<(), String> {
        let sandbox = &self.sandbox;
        let limits = [
            (
                "cpuSecs",
                sandbox.cpu_secs,
                server.max_cpu_secs,
                "RUMMY_SANDBOX_MAX_CPU_SECS",
            ),
            (
                "wallSecs",
                sandbox.wall_secs,
                server.max_wall_secs,
                "RUMMY_SANDBOX_MAX_WALL_SECS",
            ),
            (
                "memoryMb",
                sandbox.memory_mb,
                server.max_memory_mb,
                "RUMMY_SANDBOX_MAX_MEMORY_MB",
            ),
            (
                "processes",
                sandbox.processes,
                server.max_processes,
                "RUMMY_SANDBOX_MAX_PROCESSES",
            ),
            (
                "fileMb",
                sandbox.file_mb,
                server.max_file_mb,
                "RUMMY_SANDBOX_MAX_FILE_MB",
            ),
            (
                "openFiles",
                sandbox.open_files,
                server.max_open_files,
                "RUMMY_SANDBOX_MAX_OPEN_FILES",
            ),
            (
                "outputBytes",
                sandbox.output_bytes,
                server.max_output_bytes,
                "RUMMY_SANDBOX_MAX_OUTPUT_BYTES",
            ),
        ];
        for (name, value, maximum, variable) in limits {
            match value {
                Some(0) => return Err(format!("sandbox.{name} must be at least 1")),
                Some(value) if value > maximum => {
                    return Err(format!(
                        "sandbox.{name} {value} is above the server's maximum {maximum} \
                         ({variable})"
                    ))
                }
                _ => {}
            }
        }
        if let Some(port) = sandbox
            .ports
            .iter()
            .find(|port| !server.ports.contains(port))
        {
            return Err(format!(
                "sandbox.ports: port {port} is not among those the server allows \
                 (RUMMY_SANDBOX_PORTS)"
            ));
        }
        if let Some(host) = sandbox
            .hosts
            .iter()
            .find(|host| !server_covers(server, host))
        {
            return Err(format!(
                "sandbox.hosts: {host} is not among the destinations the server allows \
                 (RUMMY_SANDBOX_HOSTS)"
            ));
        }
        if !sandbox.hosts.is_empty() && !sandbox.ports.is_empty() {
            return Err(
                "sandbox.hosts and sandbox.ports exclude each other: a project with hosts \
                 reaches the network only through the egress proxy"
                    .into(),
            );
        }
        if let Some(name) = sandbox.env.keys().find(|name| !may_pass_to_commands(name)) {
            return Err(format!(
                "sandbox.env may not set {name}: a rummy or provider setting, a secret, PATH \
                 or a loader variable"
            ));
        }
        Ok(())
    }

    /// The policy in effect: the project's choice where it made one, the server's
    /// otherwise, every limit within the server's maxima now (which may have been lowered
    /// since the choice was made) and only the ports the server still allows.
    pub(crate) fn policy(&self, server: &CommandSettings) -> CommandPolicy {
        let sandbox = &self.sandbox;
        let within = |value: Option<u64>, maximum: u64| value.unwrap_or(maximum).clamp(1, maximum);
        let mut env: BTreeMap<String, String> = server.env.iter().cloned().collect();
        env.extend(
            sandbox
                .env
                .iter()
                .filter(|(name, _)| may_pass_to_commands(name))
                .map(|(name, value)| (name.clone(), value.clone())),
        );
        CommandPolicy {
            commands: self.commands.unwrap_or(server.run),
            cpu_secs: within(sandbox.cpu_secs, server.max_cpu_secs),
            wall_secs: within(sandbox.wall_secs, server.max_wall_secs),
            memory_mb: within(sandbox.memory_mb, server.max_memory_mb),
            processes: within(sandbox.processes, server.max_processes),
            file_mb: within(sandbox.file_mb, server.max_file_mb),
            open_files: within(sandbox.open_files, server.max_open_files),
            output_bytes: within(sandbox.output_bytes, server.max_output_bytes),
            ports: if sandbox.hosts.is_empty() {
                sandbox
                    .ports
                    .iter()
                    .copied()
                    .filter(|port| server.ports.contains(port))
                    .collect()
            } else {
                Vec::new()
            },
            hosts: sandbox
                .hosts
                .iter()
                .filter(|host| server_covers(server, host))
                .cloned()
                .collect(),
            unix_sockets: sandbox.unix_sockets,
            env,
        }
    }
}

/// Whether one of the server's destinations covers `host`.
fn server_covers(server: &CommandSettings, host: &Destination) -> bool {
    server.hosts.iter().any(|allowed| allowed.covers(host))
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;
    use crate::config::Settings;

    fn server(extra: &[(&str, &str)]) -> CommandSettings {
        let mut env: HashMap<String, String> = extra
            .iter()
            .map(|(key, value)| ((*key).to_owned(), (*value).to_owned()))
            .collect();
        let home = tempfile::tempdir().unwrap();
        env.insert("RUMMY_HOME".into(), home.path().display().to_string());
        Settings::load(&env, home.path()).unwrap().commands
    }

    fn choice(json: serde_json::Value) -> ProjectChoice {
        serde_json::from_value(json).unwrap()
    }

    #[test]
    fn a_project_without_a_choice_gets_the_servers_maxima_and_mode() {
        let server = server(&[
            ("RUMMY_RUN_COMMANDS", "server"),
            ("RUMMY_SANDBOX_ENV", "A=1"),
        ]);
        let policy = ProjectChoice::default().policy(&server);
        assert_eq!(policy.commands, RunCommands::Server);
        assert_eq!(
            (policy.cpu_secs, policy.wall_secs, policy.processes),
            (600, 900, 256)
        );
        assert_eq!(policy.env["A"], "1");
        assert!(policy.ports.is_empty() && !policy.unix_sockets);
    }

    #[test]
    fn a_choice_above_a_maximum_or_outside_the_allowed_ports_is_refused_naming_it() {
        let server = server(&[
            ("RUMMY_SANDBOX_PORTS", "443"),
            ("RUMMY_SANDBOX_MAX_CPU_SECS", "60"),
        ]);
        let above = choice(serde_json::json!({"sandbox": {"cpuSecs": 61}}));
        assert!(above
            .check(&server)
            .unwrap_err()
            .contains("RUMMY_SANDBOX_MAX_CPU_SECS"));
        let zero = choice(serde_json::json!({"sandbox": {"wallSecs": 0}}));
        assert!(zero.check(&server).unwrap_err().contains("wallSecs"));
        let port = choice(serde_json::json!({"sandbox": {"ports": [443, 22]}}));
        assert!(port.check(&server).unwrap_err().contains("port 22"));
        let secret = choice(serde_json::json!({"sandbox": {"env": {"GITHUB_TOKEN": "x"}}}));
        assert!(secret.check(&server).unwrap_err().contains("GITHUB_TOKEN"));
        let fine = choice(serde_json::json!({"commands": "server",
            "sandbox": {"cpuSecs": 60, "ports": [443], "env": {"CI": "1"}}}));
        assert_eq!(fine.check(&server), Ok(()));
        let policy = fine.policy(&server);
        assert_eq!((policy.cpu_secs, policy.ports.as_slice()), (60, &[443][..]));
    }

    #[test]
    fn a_choice_made_before_the_maxima_were_lowered_is_held_within_them() {
        let server = server(&[("RUMMY_SANDBOX_MAX_WALL_SECS", "30")]);
        let old = choice(serde_json::json!({"sandbox": {"wallSecs": 600, "ports": [8080]}}));
        let policy = old.policy(&server);
        assert_eq!(policy.wall_secs, 30);
        assert!(
            policy.ports.is_empty(),
            "a port the server no longer allows is dropped"
        );
    }

    #[test]
    fn hosts_are_held_within_the_servers_and_exclude_ports() {
        let server = server(&[
            ("RUMMY_SANDBOX_HOSTS", "*.example.com, registry.npmjs.org"),
            ("RUMMY_SANDBOX_PORTS", "443"),
        ]);
        let outside = choice(serde_json::json!({"sandbox": {"hosts": ["github.com"]}}));
        let error = outside.check(&server).unwrap_err();
        assert!(
            error.contains("github.com:443") && error.contains("RUMMY_SANDBOX_HOSTS"),
            "{error}"
        );
        let other_port =
            choice(serde_json::json!({"sandbox": {"hosts": ["registry.npmjs.org:80"]}}));
        assert!(other_port.check(&server).is_err());
        let both =
            choice(serde_json::json!({"sandbox": {"hosts": ["git.example.com"], "ports": [443]}}));
        assert!(both.check(&server).unwrap_err().contains("exclude"));
        let fine = choice(
            serde_json::json!({"sandbox": {"hosts": ["git.example.com", "registry.npmjs.org"]}}),
        );
        assert_eq!(fine.check(&server), Ok(()));
        assert_eq!(fine.policy(&server).hosts.len(), 2);
        let narrowed = server_without_hosts();
        assert!(
            fine.policy(&narrowed).hosts.is_empty(),
            "a host the server no longer allows is dropped"
        );
        let stored_both =
            choice(serde_json::json!({"sandbox": {"hosts": ["git.example.com"], "ports": [443]}}));
        assert!(
            stored_both.policy(&server).ports.is_empty(),
            "with hosts, no port but the proxy's"
        );
        let bad: Result<ProjectChoice, _> =
            serde_json::from_value(serde_json::json!({"sandbox": {"hosts": ["http://x"]}}));
        assert!(bad.is_err());
    }

    fn server_without_hosts() -> CommandSettings {
        server(&[])
    }

    #[test]
    fn unknown_keys_are_refused() {
        let parsed: Result<ProjectChoice, _> =
            serde_json::from_value(serde_json::json!({"sandbox": {"network": "all"}}));
        assert!(parsed.is_err());
    }
}
