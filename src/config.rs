//! Typed settings, built once in `main` and passed down.
//!
//! Layers, later wins: the embedded `config/default.toml` < `config/$RUMMY_ENV.toml` <
//! `$RUMMY_HOME/.env` < the process environment. Environment variables keep the reference
//! server's names (`PORT`, `RUMMY_HOME`, ...), mapped onto keys by [`ENV_KEYS`].

mod oidc;

pub use oidc::{GroupGrant, OidcClient, OidcSettings};

use crate::project::canonical_dirs;
use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::net::IpAddr;
use std::path::{Path, PathBuf};

use ipnet::IpNet;
use serde::{Deserialize, Deserializer};

/// The documented defaults, compiled in so the binary runs from any directory.
const DEFAULT_TOML: &str = include_str!("../config/default.toml");

/// Environment variable → configuration key.
pub const ENV_KEYS: &[(&str, &str)] = &[
    ("RUMMY_HOST", "server.host"),
    ("PORT", "server.port"),
    ("RUMMY_AUTH_TOKEN", "server.auth_token"),
    ("RUMMY_USERS_FILE", "server.users_file"),
    ("RUMMY_PROJECTS_DIR", "server.projects_dir"),
    ("RUMMY_METRICS_OPEN", "server.metrics_open"),
    ("RUMMY_ALLOWED_ORIGINS", "server.allowed_origins"),
    ("RUMMY_TRUSTED_PROXIES", "server.trusted_proxies"),
    ("RUMMY_CONSOLE_PATH", "server.console_path"),
    ("RUMMY_PUBLIC_URL", "server.public_url"),
    (
        "RUMMY_CONSOLE_SESSION_HOURS",
        "server.console_session_hours",
    ),
    ("RUMMY_MAX_FRAME_BYTES", "server.max_frame_bytes"),
    ("RUMMY_RPC_TIMEOUT", "server.rpc_timeout_ms"),
    ("RUMMY_HEARTBEAT_SECS", "server.heartbeat_secs"),
    ("RUMMY_CLIENT_TIMEOUT_SECS", "server.client_timeout_secs"),
    ("RUMMY_CLIENT_BUFFER", "server.client_buffer"),
    ("RUMMY_REPLAY_PER_RUN", "server.replay_per_run"),
    ("RUMMY_REPLAY_RUN_BYTES", "server.replay_run_bytes"),
    ("RUMMY_REPLAY_SERVER_BYTES", "server.replay_server_bytes"),
    ("RUMMY_REPLAY_KEEP_SECS", "server.replay_keep_secs"),
    ("RUMMY_MAX_IN_FLIGHT", "server.max_in_flight"),
    (
        "RUMMY_MAX_IN_FLIGHT_PER_PERSON",
        "server.max_in_flight_per_person",
    ),
    (
        "RUMMY_CLIENT_SEND_BUFFER_BYTES",
        "server.client_send_buffer_bytes",
    ),
    ("RUMMY_HOME", "storage.home"),
    ("RUMMY_SECRETS_KEY", "secrets.key"),
    ("RUMMY_SECRETS_KEY_FILE", "secrets.key_file"),
    ("RUMMY_DB_PATH", "storage.db_path"),
    ("RUMMY_DATABASE_URL", "storage.database_url"),
    ("RUMMY_LEASE_TTL_SECS", "storage.lease_ttl_secs"),
    ("RUMMY_MMAP_MB", "storage.mmap_mb"),
    ("RUMMY_RETENTION_DAYS", "storage.retention_days"),
    ("RUMMY_RPC_LOG", "audit.rpc_log"),
    ("RUMMY_RPC_LOG_MAX_CHARS", "audit.rpc_log_max_chars"),
    ("RUMMY_RPC_LOG_MAX_DAYS", "audit.rpc_log_max_days"),
    ("RUMMY_RPC_LOG_MAX_ROWS", "audit.rpc_log_max_rows"),
    ("RUMMY_TOKEN_DIVISOR", "tokens.divisor"),
    ("RUMMY_MAX_ENTRY_TOKENS", "tokens.max_entry_tokens"),
    ("RUMMY_MAX_TURNS", "agent.max_turns"),
    ("RUMMY_MAX_STALLS", "agent.max_stalls"),
    ("RUMMY_MIN_CYCLES", "agent.min_cycles"),
    ("RUMMY_MAX_CYCLE_PERIOD", "agent.max_cycle_period"),
    ("RUMMY_MAX_UPDATE_REPEATS", "agent.max_update_repeats"),
    ("RUMMY_TEMPERATURE", "agent.temperature"),
    ("RUMMY_APPLY_EDITS", "agent.apply_edits"),
    ("RUMMY_MAX_COMPLETION_TOKENS", "agent.max_completion_tokens"),
    ("RUMMY_MAX_COMMANDS", "agent.max_commands"),
    (
        "RUMMY_MAX_ACTIVE_LOOPS_PER_PROJECT",
        "agent.max_active_loops_per_project",
    ),
    (
        "RUMMY_MAX_ACTIVE_LOOPS_PER_PERSON",
        "agent.max_active_loops_per_person",
    ),
    ("RUMMY_LOOPS_OVER_LIMIT", "agent.over_limit"),
    ("RUMMY_SUBAGENT_MAX_DEPTH", "agent.subagent_max_depth"),
    ("RUMMY_SUBAGENT_MAX_TURNS", "agent.subagent_max_turns"),
    ("RUMMY_CLIENT_MCP", "agent.client_mcp"),
    ("RUMMY_RUN_COMMANDS", "commands.run"),
    ("RUMMY_SANDBOX", "commands.sandbox"),
    ("RUMMY_SANDBOX_LAUNCHER", "commands.launcher"),
    ("RUMMY_SANDBOX_TMP", "commands.tmp"),
    ("RUMMY_SANDBOX_PORTS", "commands.ports"),
    ("RUMMY_SANDBOX_HOSTS", "commands.hosts"),
    ("RUMMY_SANDBOX_ALLOW_NETS", "commands.allow_nets"),
    ("RUMMY_SANDBOX_UPSTREAM_CA", "commands.upstream_ca"),
    ("RUMMY_SANDBOX_READ", "commands.read"),
    ("RUMMY_SANDBOX_PATH", "commands.path"),
    ("RUMMY_SANDBOX_ENV", "commands.env"),
    ("RUMMY_SANDBOX_MAX_CPU_SECS", "commands.max_cpu_secs"),
    ("RUMMY_SANDBOX_MAX_WALL_SECS", "commands.max_wall_secs"),
    ("RUMMY_SANDBOX_MAX_MEMORY_MB", "commands.max_memory_mb"),
    ("RUMMY_SANDBOX_MAX_PROCESSES", "commands.max_processes"),
    ("RUMMY_SANDBOX_MAX_FILE_MB", "commands.max_file_mb"),
    ("RUMMY_SANDBOX_MAX_OPEN_FILES", "commands.max_open_files"),
    (
        "RUMMY_SANDBOX_MAX_OUTPUT_BYTES",
        "commands.max_output_bytes",
    ),
    (
        "RUMMY_SANDBOX_KILL_OUTPUT_BYTES",
        "commands.kill_output_bytes",
    ),
    ("RUMMY_SANDBOX_MAX_CONCURRENT", "commands.max_concurrent"),
    ("RUMMY_MAX_FILE_BYTES", "scan.max_file_bytes"),
    ("RUMMY_OUTLINE_MAX_BYTES", "scan.outline_max_bytes"),
    ("RUMMY_OUTLINE_TIMEOUT_MS", "scan.outline_timeout_ms"),
    ("RUMMY_WORK_MAX_STEPS", "work.max_steps"),
    ("RUMMY_WORK_TIMEOUT_MS", "work.timeout_ms"),
    ("RUMMY_WORK_MAX_OUTPUT_BYTES", "work.max_output_bytes"),
    ("RUMMY_WRITER_MAX_STEPS", "work.writer_max_steps"),
    ("RUMMY_WRITER_TIMEOUT_MS", "work.writer_timeout_ms"),
    ("RUMMY_DB_READERS", "work.readers"),
    ("RUMMY_DB_STALL_MS", "work.stall_ms"),
    ("RUMMY_FETCH_TIMEOUT", "providers.fetch_timeout_ms"),
    ("RUMMY_PROVIDER_CONCURRENCY", "providers.concurrency"),
    ("RUMMY_LLM_ATTEMPTS", "providers.attempts"),
    ("RUMMY_LLM_RETRY_MS", "providers.retry_base_ms"),
    ("OPENAI_BASE_URL", "providers.openai_base_url"),
    ("OPENAI_API_KEY", "providers.openai_api_key"),
    ("OLLAMA_BASE_URL", "providers.ollama_base_url"),
    ("OPENROUTER_BASE_URL", "providers.openrouter_base_url"),
    ("OPENROUTER_API_KEY", "providers.openrouter_api_key"),
    ("RUMMY_HTTP_REFERER", "providers.http_referer"),
    ("RUMMY_X_TITLE", "providers.x_title"),
    ("XAI_BASE_URL", "providers.xai_base_url"),
    ("XAI_API_KEY", "providers.xai_api_key"),
    ("RUMMY_CONTEXT_SIZE", "providers.context_size"),
    ("RUMMY_SEARXNG_URL", "search.searxng_url"),
    ("RUMMY_WEB_TIMEOUT_MS", "web.timeout_ms"),
    ("RUMMY_WEB_MAX_BYTES", "web.max_bytes"),
    ("RUMMY_WEB_MAX_REDIRECTS", "web.max_redirects"),
    ("RUMMY_WEB_ALLOW_NETS", "web.allow_nets"),
    ("RUMMY_PLUGINS_DISABLED", "plugins.disabled"),
    ("RUMMY_PLUGINS_TIMEOUT_MS", "plugins.timeout_ms"),
    ("RUMMY_PLUGINS_MAX_FAILURES", "plugins.max_failures"),
    ("RUMMY_MEMORY_RECALL_TOKENS", "memory.recall_tokens"),
    ("RUMMY_MEMORY_SESSION_TOKENS", "memory.session_tokens"),
    (
        "RUMMY_MEMORY_SESSION_EVERY_TURNS",
        "memory.session_every_turns",
    ),
    (
        "RUMMY_MEMORY_SESSION_TIMEOUT_SECS",
        "memory.session_timeout_secs",
    ),
    ("RUMMY_MEMORY_RERANK_MODEL", "memory.rerank_model"),
    ("RUMMY_MEMORY_RERANK_TIES", "memory.rerank_ties"),
    (
        "RUMMY_MEMORY_RERANK_TIMEOUT_SECS",
        "memory.rerank_timeout_secs",
    ),
    ("RUMMY_MEMORY_TRANSIENT_RUNS", "memory.transient_runs"),
    ("RUMMY_MEMORY_HISTORY_PER_TOPIC", "memory.history_per_topic"),
    ("RUMMY_MEMORY_HISTORY_ITEMS", "memory.history_items"),
    ("RUMMY_CAP_DAY_TOKENS", "caps.server.day_tokens"),
    ("RUMMY_CAP_DAY_DOLLARS", "caps.server.day_dollars"),
    ("RUMMY_CAP_MONTH_TOKENS", "caps.server.month_tokens"),
    ("RUMMY_CAP_MONTH_DOLLARS", "caps.server.month_dollars"),
    ("RUMMY_CAP_WARNING_PERCENT", "caps.warning_percent"),
    ("RUMMY_WEBHOOK_ATTEMPTS", "webhooks.attempts"),
    ("RUMMY_WEBHOOK_RETRY_MS", "webhooks.retry_base_ms"),
    ("RUMMY_WEBHOOK_RETRY_MAX_MS", "webhooks.retry_max_ms"),
    ("RUMMY_WEBHOOK_TIMEOUT_MS", "webhooks.timeout_ms"),
    ("RUMMY_WEBHOOK_POLL_MS", "webhooks.poll_ms"),
    ("RUMMY_WEBHOOK_CONCURRENCY", "webhooks.concurrency"),
    ("RUMMY_WEBHOOK_KEEP_DAYS", "webhooks.keep_days"),
    ("RUMMY_LOG", "log.filter"),
    ("RUMMY_DEBUG", "log.debug"),
    ("RUMMY_LOG_FORMAT", "log.format"),
    ("RUMMY_OTLP_ENDPOINT", "log.otlp_endpoint"),
    ("RUMMY_OTLP_SERVICE_NAME", "log.otlp_service_name"),
    ("RUMMY_OIDC_ISSUER", "oidc.issuer"),
    ("RUMMY_OIDC_CLIENT_ID", "oidc.client_id"),
    ("RUMMY_OIDC_CLIENT_SECRET", "oidc.client_secret"),
    ("RUMMY_OIDC_CLIENT_SECRET_FILE", "oidc.client_secret_file"),
    ("RUMMY_OIDC_REDIRECT_URL", "oidc.redirect_url"),
    ("RUMMY_OIDC_PROVIDER_NAME", "oidc.provider_name"),
    ("RUMMY_OIDC_NAME_CLAIM", "oidc.name_claim"),
    ("RUMMY_OIDC_GROUPS_CLAIM", "oidc.groups_claim"),
];

/// Prefix of the variables that seed the model catalogue: `RUMMY_MODEL_<alias>=<actual>`.
const MODEL_PREFIX: &str = "RUMMY_MODEL_";
/// `RUMMY_PLUGIN_<NAME>=<command line>` declares a plugin process.
const PLUGIN_PREFIX: &str = "RUMMY_PLUGIN_";
/// Prefix of the variables that give a seeded model its context: `RUMMY_CONTEXT_<alias>=<n>`.
const CONTEXT_PREFIX: &str = "RUMMY_CONTEXT_";
/// `RUMMY_PRICE_<alias>=<input>,<cached input>,<output>`: a model's price, US dollars per
/// million tokens.
const PRICE_PREFIX: &str = "RUMMY_PRICE_";

/// Why the settings could not be built.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// A layer could not be read or a value has the wrong type.
    #[error("configuration: {0}")]
    Layer(#[from] config::ConfigError),
    /// `$RUMMY_HOME/.env` exists but cannot be parsed.
    #[error("cannot read {path}: {message}")]
    DotEnv { path: PathBuf, message: String },
    /// A value is out of its allowed range.
    #[error("configuration: {0}")]
    Invalid(String),
}

/// A string that never appears in logs or debug output.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// Wraps a secret read from elsewhere than the settings (a token file).
    pub fn new(value: String) -> Secret {
        Secret(value)
    }

    /// The secret value itself, for the one place that sends it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(..)")
    }
}

impl<'de> Deserialize<'de> for Secret {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        String::deserialize(deserializer).map(Secret)
    }
}

/// Everything rummy is configured with.
#[derive(Debug, Clone, Deserialize)]
pub struct Settings {
    pub server: ServerSettings,
    pub storage: StorageSettings,
    pub audit: AuditSettings,
    pub tokens: TokenSettings,
    pub agent: AgentSettings,
    pub commands: CommandSettings,
    pub scan: ScanSettings,
    pub work: WorkSettings,
    pub providers: ProviderSettings,
    pub search: SearchSettings,
    pub web: WebSettings,
    pub plugins: PluginSettings,
    pub memory: MemorySettings,
    pub log: LogSettings,
    /// How webhooks are delivered.
    pub webhooks: WebhookSettings,
    /// The server's and the projects' spend caps.
    #[serde(default)]
    pub caps: CapSettings,
    /// The server key secrets at rest are sealed under.
    #[serde(default)]
    pub secrets: SecretSettings,
    /// Console sign-in through an OpenID Connect provider (off while its issuer is empty).
    #[serde(default)]
    pub oidc: OidcSettings,
    /// Models seeded into the catalogue at start, by alias.
    #[serde(default)]
    pub models: BTreeMap<String, ModelSeed>,
}

/// The listener and its connections.
#[derive(Debug, Clone, Deserialize)]
pub struct ServerSettings {
    pub host: IpAddr,
    /// Port to bind (0 picks a free one).
    pub port: u16,
    /// Token every client must present, when set.
    #[serde(deserialize_with = "optional_secret")]
    pub auth_token: Option<Secret>,
    /// The users file (people, token hashes, roles, projects; see `access`), absolute after
    /// [`Settings::load`].
    #[serde(deserialize_with = "optional_path")]
    pub users_file: Option<PathBuf>,
    /// The directories `init` accepts project roots in (`:`-separated, canonical after
    /// [`Settings::load`]); empty: anywhere, which only a loopback bind allows.
    #[serde(deserialize_with = "colon_paths")]
    pub projects_dir: Vec<PathBuf>,
    /// `/metrics` answers without the token (for a scraper inside a trusted network).
    pub metrics_open: bool,
    /// Origins browsers may connect from.
    #[serde(deserialize_with = "comma_list")]
    pub allowed_origins: Vec<String>,
    /// Reverse proxies whose `X-Forwarded-For` names the client (`ws::client_addr`).
    #[serde(deserialize_with = "networks")]
    pub trusted_proxies: Vec<IpNet>,
    /// The path the web console is served at, without a trailing `/` (`console`).
    pub console_path: String,
    /// Where browsers reach this server (`https://rummy.example.com`, no trailing `/`):
    /// webhooks then link a run's console page. Empty = unknown.
    pub public_url: String,
    /// Hours a console sign-in lasts.
    pub console_session_hours: u64,
    /// Largest inbound frame in bytes.
    pub max_frame_bytes: usize,
    /// Timeout for short methods, in ms.
    pub rpc_timeout_ms: u64,
    /// Seconds between server pings.
    pub heartbeat_secs: u64,
    /// Seconds of silence before a client is dropped, and the longest its socket may take
    /// none of the server's bytes.
    pub client_timeout_secs: u64,
    /// Notifications buffered per client.
    pub client_buffer: usize,
    /// Notifications of each run the event log keeps for `run/replay`, and the most one
    /// replay delivers (0 = no bound).
    pub replay_per_run: u64,
    /// Bytes of one run's notifications the event log keeps (0 = no bound).
    pub replay_run_bytes: u64,
    /// Bytes of every run's notifications the event log keeps together (0 = no bound).
    pub replay_server_bytes: u64,
    /// Seconds a notification is kept after it was sent (0 = no bound).
    pub replay_keep_secs: u64,
    /// Requests one connection may have in flight (0 = no bound).
    pub max_in_flight: usize,
    /// Requests one person may have in flight across their connections (0 = no bound).
    pub max_in_flight_per_person: usize,
    /// Bytes encoded for one client, not taken by its socket yet, past which it is dropped;
    /// at least twice `max_frame_bytes`.
    pub client_send_buffer_bytes: usize,
}

impl ServerSettings {
    /// What the event log keeps for `run/replay`.
    pub fn event_bounds(&self) -> crate::db::queries::run_events::EventBounds {
        crate::db::queries::run_events::EventBounds {
            per_run: self.replay_per_run,
            run_bytes: self.replay_run_bytes,
            total_bytes: self.replay_server_bytes,
            keep_ms: self.replay_keep_secs.saturating_mul(1000),
        }
    }
}

/// Home directory and database.
#[derive(Debug, Clone, Deserialize)]
pub struct StorageSettings {
    /// `RUMMY_HOME`, with `~` expanded.
    pub home: PathBuf,
    /// The SQLite file, absolute after [`Settings::load`]; unused with `database_url`.
    pub db_path: PathBuf,
    /// A `postgres://` URL: the store is that PostgreSQL database instead of the SQLite
    /// file. Empty = SQLite. May hold a password: never logged.
    pub database_url: Secret,
    /// Seconds a run's lease outlives its instance's last heartbeat: how long the runs of a
    /// killed instance wait before another instance ends them 499.
    pub lease_ttl_secs: u64,
    /// MiB of the database SQLite reads through a memory map (`PRAGMA mmap_size`).
    pub mmap_mb: u64,
    /// Days a finished run and its transcripts are kept (0 = forever).
    pub retention_days: u64,
}

/// Where the server key of secrets at rest comes from (`crate::secrets`): `key` when set,
/// else the key file (empty: `$RUMMY_HOME/secrets.key`, made at first start). Either holds
/// `id:hex` items, the current key first, then old keys still accepted for opening.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct SecretSettings {
    #[serde(default)]
    pub key: Secret,
    #[serde(default)]
    pub key_file: String,
}

/// What the RPC audit log (`rpc_log`) keeps of each call, and for how long.
#[derive(Debug, Clone, Deserialize)]
pub struct AuditSettings {
    pub rpc_log: RpcLogMode,
    /// Characters of a call's params, result and error text a `full` row keeps.
    pub rpc_log_max_chars: usize,
    /// Days a row is kept (0 = no age limit).
    pub rpc_log_max_days: u32,
    /// Rows kept, the newest (0 = no row limit).
    pub rpc_log_max_rows: u64,
}

/// What a call leaves in `rpc_log`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RpcLogMode {
    /// Its facts and its texts (request id, params, result, error), each text cut.
    Full,
    /// Its facts only: method, project, person, run, status, duration and sizes.
    Meta,
    /// Nothing.
    Off,
}

/// Token estimate and entry size gate.
#[derive(Debug, Clone, Deserialize)]
pub struct TokenSettings {
    /// Characters per token.
    pub divisor: u32,
    /// Largest known entry in tokens.
    pub max_entry_tokens: u64,
}

/// Who applies accepted file edits to disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ApplyEdits {
    /// The client applies them (the reference behaviour).
    Client,
    /// The server writes them under the project root.
    Server,
}

/// Loop limits and defaults.
#[derive(Debug, Clone, Deserialize)]
pub struct AgentSettings {
    /// Turns per loop.
    pub max_turns: u32,
    /// Turns without a status tag before forced completion.
    pub max_stalls: u32,
    /// Repetitions that make a cycle.
    pub min_cycles: u32,
    /// Longest cycle period checked.
    pub max_cycle_period: u32,
    /// Identical updates before the loop stops.
    pub max_update_repeats: u32,
    /// Default temperature.
    #[serde(deserialize_with = "optional_f64")]
    pub temperature: Option<f64>,
    /// Who applies accepted edits.
    pub apply_edits: ApplyEdits,
    /// Most tokens one reply may have (0 = the provider's default).
    pub max_completion_tokens: u32,
    /// Commands of one reply that run; the rest are refused with one 429 entry.
    pub max_commands: usize,
    /// Loops one project may have running or queued (0 = no bound).
    pub max_active_loops_per_project: usize,
    /// Loops one person may have running or queued (0 = no bound).
    pub max_active_loops_per_person: usize,
    /// What an `ask`/`act` past those bounds gets.
    pub over_limit: OverLimit,
    /// How many `<delegate>`s deep a run may be and still delegate (0 = no sub-agents).
    pub subagent_max_depth: u32,
    /// Most turns one sub-agent's loop takes.
    pub subagent_max_turns: u32,
    /// Which MCP servers a client may attach to a run (`run/mcp`), for the server to
    /// connect to.
    pub client_mcp: ClientMcp,
}

/// Which MCP servers a client may attach to a run: the server connects to them, so on a
/// team server they reach its network and run as its user.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ClientMcp {
    /// None: `run/mcp` is refused.
    Off,
    /// Streamable-HTTP servers at addresses a web fetch may reach (`RUMMY_WEB_ALLOW_NETS`
    /// widens both).
    Http,
    /// Any: also commands run on this machine, and HTTP servers at any address (a server
    /// that is the person's own machine, as `rummy acp` without `--url` is).
    All,
}

/// What an `ask`/`act` past the bounds on active loops gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OverLimit {
    /// It waits for a place, first come first served.
    Queue,
    /// It is answered `-32006` at once.
    Refuse,
}

/// Accepted `sh`/`env` commands run on the server, and the sandbox that confines them: the
/// server-wide defaults and the maxima a project's own settings (`project/config`) stay
/// within.
#[derive(Debug, Clone, Deserialize)]
pub struct CommandSettings {
    /// Where projects without a choice of their own run accepted commands.
    pub run: RunCommands,
    /// Whether commands run on the server are confined.
    pub sandbox: SandboxSwitch,
    /// The binary that confines a command (`None`: `rummy-sandbox` beside this server's
    /// binary, else this binary).
    #[serde(deserialize_with = "optional_path")]
    pub launcher: Option<PathBuf>,
    /// Where each command's scratch directory (its `HOME` and `TMPDIR`, removed after it) is
    /// made, under a directory per instance (`None`: `$RUMMY_HOME/sandbox`).
    #[serde(deserialize_with = "optional_path")]
    pub tmp: Option<PathBuf>,
    /// TCP ports a project may be allowed to connect to (never the server's own).
    #[serde(deserialize_with = "ports")]
    pub ports: Vec<u16>,
    /// Destinations (`host`, `*.domain`, either with `:port`; 443 unless named) a project
    /// may allow its commands to reach through the egress proxy (`crate::egress`).
    #[serde(deserialize_with = "destinations")]
    pub hosts: Vec<crate::egress::destination::Destination>,
    /// Networks the egress proxy may reach although they are the server's own (private,
    /// loopback…), as `RUMMY_WEB_ALLOW_NETS` is for fetches.
    #[serde(deserialize_with = "networks")]
    pub allow_nets: Vec<IpNet>,
    /// A PEM file of CA certificates the egress proxy trusts upstream besides the public
    /// roots (an internal registry's CA).
    #[serde(deserialize_with = "optional_path")]
    pub upstream_ca: Option<PathBuf>,
    /// Directories commands may read and execute besides the system's.
    #[serde(deserialize_with = "colon_paths")]
    pub read: Vec<PathBuf>,
    /// Directories put first on commands' `PATH` (readable and executable).
    #[serde(deserialize_with = "colon_paths")]
    pub path: Vec<PathBuf>,
    /// Variables added to every command's environment, `NAME=value` pairs.
    #[serde(deserialize_with = "assignments")]
    pub env: Vec<(String, String)>,
    /// The most CPU seconds a command may take.
    pub max_cpu_secs: u64,
    /// The longest a command may run before it is killed.
    pub max_wall_secs: u64,
    /// The most memory one process of a command may use, in MiB.
    pub max_memory_mb: u64,
    /// The most processes a command may have at once.
    pub max_processes: u64,
    /// The largest file a command may write, in MiB.
    pub max_file_mb: u64,
    /// The most files one process of a command may have open.
    pub max_open_files: u64,
    /// The most output kept in a command's entry, in bytes (its start and its end).
    pub max_output_bytes: u64,
    /// Output past which a command is killed, in bytes.
    pub kill_output_bytes: u64,
    /// Commands running at once, server-wide; the rest wait (0: the number of cores).
    pub max_concurrent: usize,
}

/// Where accepted `sh`/`env` commands run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum RunCommands {
    /// In the client, which resolves the proposal with the output (the reference
    /// behaviour).
    Client,
    /// On the server, in the project root, confined; the client only accepts or rejects.
    Server,
}

/// Whether commands run on the server are confined.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SandboxSwitch {
    /// Landlock and seccomp confine them; the server does not start without them.
    On,
    /// Only the limits, the scrubbed environment and the kills hold (logged as a warning).
    Off,
}

/// Names a variable given to commands may not have: the server's own settings and what
/// looks like a secret.
const SECRET_NAME_PARTS: &[&str] = &["KEY", "TOKEN", "SECRET", "PASSWORD"];

/// Whether a variable named `name` may be handed to a command run on the server: not one of
/// rummy's or a provider's settings, nothing that names a secret, not the loader's or `PATH`.
pub(crate) fn may_pass_to_commands(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    let setting = ENV_KEYS.iter().any(|(variable, _)| *variable == upper);
    let secret = SECRET_NAME_PARTS.iter().any(|part| upper.contains(part));
    !name.is_empty()
        && !setting
        && !secret
        && !upper.starts_with("RUMMY_")
        && !upper.starts_with("LD_")
        && upper != "PATH"
}

/// Project file scanning.
#[derive(Debug, Clone, Deserialize)]
pub struct ScanSettings {
    /// Files above this size are listed, not loaded.
    pub max_file_bytes: u64,
    /// Source files above this size get no outline; 0 outlines none.
    pub outline_max_bytes: usize,
    /// Parsing and tagging one file for its outline stop after this many ms.
    pub outline_timeout_ms: u64,
}

/// Limits of pattern and edit work (hedberg), and the database thread's watchdog.
#[derive(Debug, Clone, Deserialize)]
pub struct WorkSettings {
    /// Steps one request may spend off the database thread (a reader connection).
    pub max_steps: u64,
    /// Wall-clock limit of that work, in ms.
    pub timeout_ms: u64,
    /// Largest text an edit or replacement may produce, in bytes.
    pub max_output_bytes: usize,
    /// Steps one unit of work on the database thread may spend.
    pub writer_max_steps: u64,
    /// Wall-clock limit of that work, in ms.
    pub writer_timeout_ms: u64,
    /// Read-only connections serving pattern searches beside the writer.
    pub readers: usize,
    /// `/readyz` fails while one unit of database work has run longer than this, in ms.
    pub stall_ms: u64,
}

impl WorkSettings {
    /// The limits of one request served off the database thread.
    pub fn request_limits(&self) -> crate::hedberg::Limits {
        crate::hedberg::Limits {
            max_steps: self.max_steps,
            timeout: std::time::Duration::from_millis(self.timeout_ms),
            max_output_bytes: self.max_output_bytes,
        }
    }

    /// The limits of one unit of work on the database thread.
    pub fn writer_limits(&self) -> crate::hedberg::Limits {
        crate::hedberg::Limits {
            max_steps: self.writer_max_steps,
            timeout: std::time::Duration::from_millis(self.writer_timeout_ms),
            max_output_bytes: self.max_output_bytes,
        }
    }
}

/// LLM provider endpoints and credentials.
#[derive(Debug, Clone, Deserialize)]
pub struct ProviderSettings {
    /// Timeout of one LLM HTTP call, in ms.
    pub fetch_timeout_ms: u64,
    /// Concurrent requests per provider.
    pub concurrency: usize,
    /// Attempts per LLM call.
    pub attempts: u32,
    /// First retry delay in ms.
    pub retry_base_ms: u64,
    /// OpenAI-compatible base URL.
    pub openai_base_url: String,
    /// OpenAI-compatible key.
    pub openai_api_key: Secret,
    pub ollama_base_url: String,
    pub openrouter_base_url: String,
    pub openrouter_api_key: Secret,
    /// OpenRouter `HTTP-Referer` header.
    pub http_referer: String,
    /// OpenRouter `X-Title` header.
    pub x_title: String,
    /// xAI Responses endpoint.
    pub xai_base_url: String,
    pub xai_api_key: Secret,
    /// Context size for OpenRouter models with none stored (0 = discover).
    pub context_size: u64,
}

/// The web search backend of the `search` tool.
#[derive(Debug, Clone, Deserialize)]
pub struct SearchSettings {
    /// SearXNG base URL; empty means the tool is not offered.
    pub searxng_url: String,
}

/// The limits of the model's web search and page fetches.
#[derive(Debug, Clone, Deserialize)]
pub struct WebSettings {
    /// Longest one search or page fetch may take, from the request to the last byte.
    pub timeout_ms: u64,
    /// Largest body a search or fetch reads, in bytes.
    pub max_bytes: u64,
    /// Redirects one fetch follows.
    pub max_redirects: usize,
    /// Networks a fetch may reach although they are private, loopback, link-local, ...
    #[serde(deserialize_with = "networks")]
    pub allow_nets: Vec<IpNet>,
}

/// Which plugins run.
#[derive(Debug, Clone, Deserialize)]
pub struct PluginSettings {
    /// Names of the plugins not registered (bundled tools, sections, `transcript`, or one
    /// the embedding binary adds).
    #[serde(deserialize_with = "comma_list")]
    pub disabled: Vec<String>,
    /// How long a plugin process may take to answer one call, in milliseconds.
    pub timeout_ms: u64,
    /// Failures in a row after which a plugin process is disabled.
    pub max_failures: u32,
    /// The plugin processes `RUMMY_PLUGIN_<NAME>` declares: the name (lowercase) → its
    /// command line.
    #[serde(skip)]
    pub processes: BTreeMap<String, String>,
}

/// Memory across runs.
#[derive(Debug, Clone, Deserialize)]
pub struct MemorySettings {
    /// Most tokens what is recalled for a prompt may take in the packet (0: nothing is).
    pub recall_tokens: u32,
    /// Most tokens a run's session notes take in the packet.
    pub session_tokens: u32,
    /// Least turns between two refreshes of the notes after turns (a loop's end and a panic
    /// refresh them whenever a turn passed).
    pub session_every_turns: u32,
    /// How long the sidecar call that refreshes the notes may take.
    pub session_timeout_secs: u32,
    /// The alias of the model that re-ranks a recall whose candidates score alike (`None`:
    /// recall keeps the lexical order).
    #[serde(deserialize_with = "optional_text")]
    pub rerank_model: Option<String>,
    /// Least candidates scoring alike where the recall budget cuts that call for a re-rank.
    pub rerank_ties: u32,
    /// How long the re-rank call may take.
    pub rerank_timeout_secs: u32,
    /// How many runs of its project (sub-agents' not counted) a transient fact outlives the
    /// run that last wrote it (0: it stays until replaced or erased).
    pub transient_runs: u32,
    /// Most history items one topic keeps (older ones are folded; at least 1).
    pub history_per_topic: u32,
    /// Most history items a project (or the server-wide layer) keeps (at least 1).
    pub history_items: u32,
}

#[derive(Debug, Clone, Deserialize)]
pub struct LogSettings {
    /// A `tracing` `EnvFilter` directive; an invalid one falls back to `info`.
    pub filter: String,
    /// Log every frame.
    pub debug: bool,
    /// How each event is written.
    pub format: LogFormat,
    /// The OTLP/HTTP collector traces are exported to (`<endpoint>/v1/traces`); none: no
    /// export, and no cost.
    #[serde(default)]
    pub otlp_endpoint: Option<String>,
    /// The `service.name` the exported traces carry.
    pub otlp_service_name: String,
}

/// How each log event is written to stderr.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    /// One line of text, fields as `name=value`.
    Text,
    /// One JSON object per line, for a log collector.
    Json,
}

pub use crate::usage::CapLimits;

/// The spend caps an admin configures here (`[caps.server]`, `[caps.projects.<name>]`);
/// people's are in the users file. Checked at start.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CapSettings {
    /// Every call of the server together (`RUMMY_CAP_<PERIOD>_<UNIT>`).
    #[serde(default)]
    pub server: CapLimits,
    /// Each project's, by its name.
    #[serde(default)]
    pub projects: BTreeMap<String, CapLimits>,
    /// The share of a cap, in percent (1–100), whose spending is warned about once per
    /// period (`usage/capWarning`, the `cap.warning` webhook).
    #[serde(default = "default_warning_percent")]
    pub warning_percent: u8,
}

impl Default for CapSettings {
    fn default() -> CapSettings {
        CapSettings {
            server: CapLimits::default(),
            projects: BTreeMap::new(),
            warning_percent: default_warning_percent(),
        }
    }
}

fn default_warning_percent() -> u8 {
    80
}

/// How webhooks are delivered (docs/src/webhooks.md).
#[derive(Debug, Clone, Deserialize)]
pub struct WebhookSettings {
    /// Attempts of one delivery before it is given up (at least 1).
    pub attempts: u32,
    /// The wait before the second attempt, in ms; doubled before each next one, up to
    /// `retry_max_ms`, each wait drawn between half of it and all of it (jitter).
    pub retry_base_ms: u64,
    /// The longest wait between two attempts, in ms.
    pub retry_max_ms: u64,
    /// How long one attempt may take (connecting, sending, the answer's head), in ms.
    pub timeout_ms: u64,
    /// How often an instance looks for due deliveries while the store has webhooks, in ms.
    pub poll_ms: u64,
    /// Deliveries one instance attempts at once.
    pub concurrency: u32,
    /// Days a delivered or given-up delivery is kept in the log.
    pub keep_days: u64,
}

impl CapSettings {
    /// The caps checked: the server's, and each project's by name.
    pub(crate) fn checked(
        &self,
    ) -> Result<(crate::usage::Limits, HashMap<String, crate::usage::Limits>), ConfigError> {
        let server = self.server.checked().map_err(|error| {
            ConfigError::Invalid(format!(
                "caps.server.{} (RUMMY_CAP_{}): {error}",
                error.key,
                error.key.to_uppercase()
            ))
        })?;
        let mut projects = HashMap::new();
        for (name, caps) in &self.projects {
            let limits = caps.checked().map_err(|error| {
                ConfigError::Invalid(format!("caps.projects.{name}.{}: {error}", error.key))
            })?;
            projects.insert(name.clone(), limits);
        }
        Ok((server, projects))
    }
}

/// A model seeded into the catalogue at start.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct ModelSeed {
    /// Provider-prefixed model id.
    pub actual: String,
    /// Context window in tokens, when known.
    #[serde(default)]
    pub context_length: Option<u64>,
    /// Its price; none keeps the catalogue's.
    #[serde(default)]
    pub price: Option<ModelPrice>,
}

/// A model's price in US dollars per million tokens (`[models.<alias>.price]`, or
/// `RUMMY_PRICE_<alias>`); checked at start.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
pub struct ModelPrice {
    /// Per million prompt tokens not served from the provider's cache.
    pub input: f64,
    /// Per million cached prompt tokens; the input price when not given.
    #[serde(default)]
    pub cached_input: Option<f64>,
    /// Per million completion tokens.
    pub output: f64,
}

impl ModelPrice {
    /// The price as the catalogue keeps it.
    pub(crate) fn checked(&self) -> Result<crate::usage::Price, crate::usage::PriceError> {
        crate::usage::Price::from_dollars(self.input, self.cached_input, self.output)
    }
}

impl Settings {
    /// Builds the settings from an environment (the process's, in `main`) and a directory
    /// holding `$RUMMY_ENV.toml` files.
    pub fn load(env: &HashMap<String, String>, config_dir: &Path) -> Result<Self, ConfigError> {
        let mut builder = config::Config::builder().add_source(config::File::from_str(
            DEFAULT_TOML,
            config::FileFormat::Toml,
        ));
        if let Some(name) = env.get("RUMMY_ENV").filter(|name| !name.is_empty()) {
            builder = builder.add_source(
                config::File::from(config_dir.join(format!("{name}.toml"))).required(false),
            );
        }
        let home = home_dir(env, config_dir)?;
        let mut merged = read_dotenv(&home.join(".env"))?;
        merged.extend(env.iter().map(|(key, value)| (key.clone(), value.clone())));
        for (variable, key) in ENV_KEYS {
            if let Some(value) = merged.get(*variable) {
                builder = builder.set_override(*key, value.as_str())?;
            }
        }
        builder = builder.set_override("storage.home", home.to_string_lossy().as_ref())?;
        let mut settings: Settings = builder.build()?.try_deserialize()?;
        settings.storage.home = home;
        settings.storage.db_path =
            absolute_under(&settings.storage.home, &settings.storage.db_path);
        settings.server.users_file = settings
            .server
            .users_file
            .map(|path| absolute_under(&settings.storage.home, &path));
        settings.server.projects_dir = canonical_dirs(&settings.server.projects_dir)
            .map_err(|error| ConfigError::Invalid(format!("RUMMY_PROJECTS_DIR: {error}")))?;
        seed_models_from_env(&mut settings.models, &merged);
        settings.plugins.processes = plugin_processes_from_env(&merged);
        price_models_from_env(&mut settings.models, &merged)?;
        settings.validate()?;
        settings.oidc.client = settings
            .oidc
            .checked_client(&settings.server, &settings.storage.home)?;
        Ok(settings)
    }

    /// Whether the model may use `<search>`.
    pub fn search_available(&self) -> bool {
        !self.search.searxng_url.trim().is_empty()
    }

    fn validate(&self) -> Result<(), ConfigError> {
        if self.search_available() {
            let parsed = url::Url::parse(self.search.searxng_url.trim());
            let web = parsed
                .is_ok_and(|url| matches!(url.scheme(), "http" | "https") && url.host().is_some());
            if !web {
                return Err(ConfigError::Invalid(
                    "RUMMY_SEARXNG_URL must be an http or https URL".into(),
                ));
            }
        }
        if self.tokens.divisor == 0 {
            return Err(ConfigError::Invalid(
                "RUMMY_TOKEN_DIVISOR must be at least 1".into(),
            ));
        }
        let database_url = self.storage.database_url.expose().trim();
        let postgres = ["postgres://", "postgresql://"]
            .iter()
            .any(|scheme| database_url.starts_with(scheme));
        if !database_url.is_empty() && !postgres {
            return Err(ConfigError::Invalid(
                "RUMMY_DATABASE_URL must be a postgres:// or postgresql:// URL".into(),
            ));
        }
        let tokens = self.server.auth_token.is_some() || self.server.users_file.is_some();
        if !self.server.host.is_loopback() && !tokens {
            return Err(ConfigError::Invalid(format!(
                "binding {} (not loopback) requires RUMMY_AUTH_TOKEN or RUMMY_USERS_FILE",
                self.server.host
            )));
        }
        if !self.server.host.is_loopback() && self.server.projects_dir.is_empty() {
            return Err(ConfigError::Invalid(format!(
                "binding {} (not loopback) requires RUMMY_PROJECTS_DIR, the directories \
                 projects may live in",
                self.server.host
            )));
        }
        if self.scan.outline_timeout_ms == 0 {
            return Err(ConfigError::Invalid(
                "RUMMY_OUTLINE_TIMEOUT_MS must be at least 1".into(),
            ));
        }
        if self.server.max_frame_bytes < 1024 {
            return Err(ConfigError::Invalid(
                "RUMMY_MAX_FRAME_BYTES must be at least 1024".into(),
            ));
        }
        if !console_path_is_valid(&self.server.console_path) {
            return Err(ConfigError::Invalid(
                "RUMMY_CONSOLE_PATH must start with '/', not end with '/', hold only letters, \
                 digits and '/._-', and not be a path rummy already serves (/rpc, /healthz, ...)"
                    .into(),
            ));
        }
        if self.server.console_session_hours == 0 {
            return Err(ConfigError::Invalid(
                "RUMMY_CONSOLE_SESSION_HOURS must be at least 1".into(),
            ));
        }
        self.commands.validate(self.server.port)?;
        self.caps.checked()?;
        if !(1..=100).contains(&self.caps.warning_percent) {
            return Err(ConfigError::Invalid(
                "RUMMY_CAP_WARNING_PERCENT must be from 1 to 100".into(),
            ));
        }
        let public_url = self.server.public_url.trim();
        let public = url::Url::parse(public_url)
            .is_ok_and(|url| matches!(url.scheme(), "http" | "https") && url.host().is_some());
        if !public_url.is_empty() && (!public || public_url.ends_with('/')) {
            return Err(ConfigError::Invalid(
                "RUMMY_PUBLIC_URL must be an http or https URL without a trailing '/'".into(),
            ));
        }
        let hooks = &self.webhooks;
        if hooks.attempts == 0
            || hooks.timeout_ms == 0
            || hooks.poll_ms == 0
            || hooks.concurrency == 0
        {
            return Err(ConfigError::Invalid(
                "RUMMY_WEBHOOK_ATTEMPTS, RUMMY_WEBHOOK_TIMEOUT_MS, RUMMY_WEBHOOK_POLL_MS and \
                 RUMMY_WEBHOOK_CONCURRENCY must be at least 1"
                    .into(),
            ));
        }
        for (alias, seed) in &self.models {
            if let Some(Err(error)) = seed.price.as_ref().map(ModelPrice::checked) {
                return Err(ConfigError::Invalid(format!(
                    "models.{alias}.price (RUMMY_PRICE_{alias}): {error}"
                )));
            }
        }
        if self.server.client_send_buffer_bytes / 2 < self.server.max_frame_bytes {
            return Err(ConfigError::Invalid(
                "RUMMY_CLIENT_SEND_BUFFER_BYTES must be at least twice RUMMY_MAX_FRAME_BYTES: \
                 one reply may be a whole frame"
                    .into(),
            ));
        }
        Ok(())
    }
}

/// A console path rummy can serve: absolute, without a trailing `/`, `//`, dot segments or
/// characters a URL would escape, and apart from the paths rummy serves already.
fn console_path_is_valid(path: &str) -> bool {
    let Some(rest) = path.strip_prefix('/') else {
        return false;
    };
    let segments_ok = rest
        .split('/')
        .all(|segment| !segment.is_empty() && segment != "." && segment != "..");
    let chars_ok = rest
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "/._-".contains(c));
    let taken = ["/rpc", "/healthz", "/readyz", "/metrics"]
        .iter()
        .any(|taken| path == *taken || path.starts_with(&format!("{taken}/")));
    segments_ok && chars_ok && !taken
}

impl CommandSettings {
    fn validate(&self, server_port: u16) -> Result<(), ConfigError> {
        if server_port != 0 && self.ports.contains(&server_port) {
            return Err(ConfigError::Invalid(format!(
                "RUMMY_SANDBOX_PORTS may not include the server's own port {server_port}"
            )));
        }
        if let Some((name, _)) = self
            .env
            .iter()
            .find(|(name, _)| !may_pass_to_commands(name))
        {
            return Err(ConfigError::Invalid(format!(
                "RUMMY_SANDBOX_ENV may not set {name}: a rummy or provider setting, a \
                 secret, PATH or a loader variable"
            )));
        }
        let maxima = [
            ("RUMMY_SANDBOX_MAX_CPU_SECS", self.max_cpu_secs),
            ("RUMMY_SANDBOX_MAX_WALL_SECS", self.max_wall_secs),
            ("RUMMY_SANDBOX_MAX_MEMORY_MB", self.max_memory_mb),
            ("RUMMY_SANDBOX_MAX_PROCESSES", self.max_processes),
            ("RUMMY_SANDBOX_MAX_FILE_MB", self.max_file_mb),
            ("RUMMY_SANDBOX_MAX_OPEN_FILES", self.max_open_files),
            ("RUMMY_SANDBOX_MAX_OUTPUT_BYTES", self.max_output_bytes),
        ];
        if let Some((name, _)) = maxima.iter().find(|(_, value)| *value == 0) {
            return Err(ConfigError::Invalid(format!("{name} must be at least 1")));
        }
        if self.kill_output_bytes < self.max_output_bytes {
            return Err(ConfigError::Invalid(
                "RUMMY_SANDBOX_KILL_OUTPUT_BYTES must be at least RUMMY_SANDBOX_MAX_OUTPUT_BYTES"
                    .into(),
            ));
        }
        Ok(())
    }
}

/// Finds `RUMMY_HOME` before the other layers, since `.env` lives inside it.
fn home_dir(env: &HashMap<String, String>, config_dir: &Path) -> Result<PathBuf, ConfigError> {
    let raw = match env.get("RUMMY_HOME").filter(|home| !home.is_empty()) {
        Some(home) => home.clone(),
        None => {
            let mut builder = config::Config::builder().add_source(config::File::from_str(
                DEFAULT_TOML,
                config::FileFormat::Toml,
            ));
            if let Some(name) = env.get("RUMMY_ENV").filter(|name| !name.is_empty()) {
                builder = builder.add_source(
                    config::File::from(config_dir.join(format!("{name}.toml"))).required(false),
                );
            }
            builder.build()?.get_string("storage.home")?
        }
    };
    Ok(expand_tilde(&raw, env.get("HOME").map(String::as_str)))
}

fn expand_tilde(raw: &str, user_home: Option<&str>) -> PathBuf {
    match (raw.strip_prefix("~"), user_home) {
        (Some(rest), Some(user_home)) => {
            PathBuf::from(user_home).join(rest.trim_start_matches('/'))
        }
        _ => PathBuf::from(raw),
    }
}

fn absolute_under(base: &Path, path: &Path) -> PathBuf {
    if path.is_absolute() {
        path.to_path_buf()
    } else {
        base.join(path)
    }
}

fn read_dotenv(path: &Path) -> Result<HashMap<String, String>, ConfigError> {
    if !path.is_file() {
        return Ok(HashMap::new());
    }
    let entries = dotenvy::from_path_iter(path).map_err(|error| ConfigError::DotEnv {
        path: path.to_path_buf(),
        message: error.to_string(),
    })?;
    entries
        .map(|entry| {
            entry.map_err(|error| ConfigError::DotEnv {
                path: path.to_path_buf(),
                message: error.to_string(),
            })
        })
        .collect()
}

/// The plugin processes `RUMMY_PLUGIN_<NAME>=<command line>` declares, by lowercase name
/// (an empty command line declares none).
fn plugin_processes_from_env(env: &HashMap<String, String>) -> BTreeMap<String, String> {
    env.iter()
        .filter_map(|(key, command)| {
            let name = key.strip_prefix(PLUGIN_PREFIX)?;
            let declared = !name.is_empty() && !command.trim().is_empty();
            declared.then(|| (name.to_ascii_lowercase(), command.trim().to_owned()))
        })
        .collect()
}

fn seed_models_from_env(models: &mut BTreeMap<String, ModelSeed>, env: &HashMap<String, String>) {
    for (key, actual) in env {
        if let Some(alias) = key
            .strip_prefix(MODEL_PREFIX)
            .filter(|alias| !alias.is_empty())
        {
            let context_length = env
                .get(&format!("{CONTEXT_PREFIX}{alias}"))
                .and_then(|value| value.trim().parse().ok());
            models.insert(
                alias.to_string(),
                ModelSeed {
                    actual: actual.clone(),
                    context_length,
                    price: None,
                },
            );
        }
    }
}

/// Applies each `RUMMY_PRICE_<alias>` to its model; one naming no model, or not three
/// numbers, is refused naming it.
fn price_models_from_env(
    models: &mut BTreeMap<String, ModelSeed>,
    env: &HashMap<String, String>,
) -> Result<(), ConfigError> {
    for (key, value) in env {
        let Some(alias) = key.strip_prefix(PRICE_PREFIX) else {
            continue;
        };
        let Some(model) = models.get_mut(alias) else {
            return Err(ConfigError::Invalid(format!(
                "{key} prices a model that is not configured (RUMMY_MODEL_{alias})"
            )));
        };
        let numbers: Vec<Option<f64>> = value
            .split(',')
            .map(|number| number.trim().parse().ok())
            .collect();
        let [Some(input), Some(cached_input), Some(output)] = numbers[..] else {
            return Err(ConfigError::Invalid(format!(
                "{key} must be three numbers, US dollars per million tokens: \
                 <input>,<cached input>,<output>"
            )));
        };
        model.price = Some(ModelPrice {
            input,
            cached_input: Some(cached_input),
            output,
        });
    }
    Ok(())
}

fn optional_secret<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<Secret>, D::Error> {
    let raw = String::deserialize(deserializer)?;
    Ok((!raw.is_empty()).then_some(Secret(raw)))
}

fn optional_text<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<String>, D::Error> {
    let raw = String::deserialize(deserializer)?;
    let raw = raw.trim();
    Ok((!raw.is_empty()).then(|| raw.to_owned()))
}

fn optional_path<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<PathBuf>, D::Error> {
    let raw = String::deserialize(deserializer)?;
    let raw = raw.trim();
    Ok((!raw.is_empty()).then(|| PathBuf::from(raw)))
}

/// A `:`-separated list of absolute paths.
fn colon_paths<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Vec<PathBuf>, D::Error> {
    let raw = String::deserialize(deserializer)?;
    raw.split(':')
        .map(str::trim)
        .filter(|item| !item.is_empty())
        .map(|item| {
            let path = PathBuf::from(item);
            if path.is_absolute() {
                Ok(path)
            } else {
                Err(serde::de::Error::custom(format!(
                    "{item} is not an absolute path"
                )))
            }
        })
        .collect()
}

fn comma_list<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Vec<String>, D::Error> {
    let raw = String::deserialize(deserializer)?;
    Ok(raw
        .split(',')
        .map(str::trim)
        .filter(|item| !item.is_empty())
        .map(str::to_string)
        .collect())
}

/// A comma-separated list of TCP ports.
fn ports<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Vec<u16>, D::Error> {
    comma_list(deserializer)?
        .iter()
        .map(|item| match item.parse::<u16>() {
            Ok(port) if port > 0 => Ok(port),
            _ => Err(serde::de::Error::custom(format!(
                "{item} is not a TCP port"
            ))),
        })
        .collect()
}

/// A comma-separated list of egress destinations.
fn destinations<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Vec<crate::egress::destination::Destination>, D::Error> {
    comma_list(deserializer)?
        .iter()
        .map(|item| item.parse().map_err(serde::de::Error::custom))
        .collect()
}

/// A comma-separated list of `NAME=value` pairs.
fn assignments<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Vec<(String, String)>, D::Error> {
    comma_list(deserializer)?
        .iter()
        .map(|item| match item.split_once('=') {
            Some((name, value)) if !name.trim().is_empty() => {
                Ok((name.trim().to_owned(), value.to_owned()))
            }
            _ => Err(serde::de::Error::custom(format!(
                "{item} is not NAME=value"
            ))),
        })
        .collect()
}

/// A comma-separated list of addresses (one host each) and CIDR networks.
fn networks<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Vec<IpNet>, D::Error> {
    comma_list(deserializer)?
        .iter()
        .map(|item| {
            item.parse::<IpNet>()
                .or_else(|_| item.parse::<IpAddr>().map(IpNet::from))
                .map_err(|_| {
                    serde::de::Error::custom(format!("{item} is neither an address nor a CIDR"))
                })
        })
        .collect()
}

fn optional_f64<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<f64>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum NumberOrText {
        Number(f64),
        Text(String),
    }
    match NumberOrText::deserialize(deserializer)? {
        NumberOrText::Number(value) => Ok(Some(value)),
        NumberOrText::Text(text) if text.trim().is_empty() => Ok(None),
        NumberOrText::Text(text) => text
            .trim()
            .parse()
            .map(Some)
            .map_err(|_| serde::de::Error::custom(format!("not a number: {text}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        pairs
            .iter()
            .map(|(key, value)| (key.to_string(), value.to_string()))
            .collect()
    }

    /// The settings of the repository's `config/` with `RUMMY_HOME` = `home` and `extra`.
    fn load_in(home: &str, extra: &[(&str, &str)]) -> Result<Settings, ConfigError> {
        let mut pairs = vec![("RUMMY_HOME", home)];
        pairs.extend_from_slice(extra);
        Settings::load(&env(&pairs), Path::new("config"))
    }

    #[test]
    fn defaults_bind_loopback_on_3044_under_home() {
        let home = tempfile::tempdir().unwrap();
        let settings = Settings::load(
            &env(&[("RUMMY_HOME", home.path().to_str().unwrap())]),
            Path::new("config"),
        )
        .unwrap();
        assert_eq!(settings.server.port, 3044);
        assert!(settings.server.host.is_loopback());
        assert_eq!(settings.storage.db_path, home.path().join("rummy.db"));
        assert_eq!(settings.agent.temperature, None);
        assert_eq!(settings.agent.apply_edits, ApplyEdits::Client);
        assert_eq!(settings.agent.client_mcp, ClientMcp::Off);
        assert_eq!(
            settings.server.event_bounds(),
            crate::db::queries::run_events::EventBounds {
                per_run: 256,
                run_bytes: 16 * 1024 * 1024,
                total_bytes: 256 * 1024 * 1024,
                keep_ms: 86_400_000,
            }
        );
    }

    #[test]
    fn server_caps_come_from_the_environment_and_none_by_default() {
        let home = tempfile::tempdir().unwrap();
        let home = home.path().to_str().unwrap();
        let defaults = load_in(home, &[]).unwrap();
        assert_eq!(defaults.caps.server, CapLimits::default());
        assert!(defaults.caps.projects.is_empty());
        let capped = load_in(
            home,
            &[
                ("RUMMY_CAP_DAY_TOKENS", "5000"),
                ("RUMMY_CAP_MONTH_DOLLARS", "12.5"),
            ],
        )
        .unwrap();
        assert_eq!(
            capped.caps.server,
            CapLimits {
                day_tokens: Some(5000),
                month_dollars: Some(12.5),
                ..CapLimits::default()
            }
        );
        let empty = load_in(home, &[("RUMMY_CAP_DAY_DOLLARS", "")]);
        let error = empty.unwrap_err().to_string();
        assert!(error.contains("caps.server.day_dollars"), "{error}");
    }

    #[test]
    fn bad_prices_stop_the_start_naming_them() {
        let home = tempfile::tempdir().unwrap();
        let home = home.path().to_str().unwrap();
        let refused = |extra: &[(&str, &str)]| match load_in(home, extra) {
            Err(ConfigError::Invalid(message)) => message,
            other => panic!("{extra:?} was not refused: {other:?}"),
        };
        let model = ("RUMMY_MODEL_local", "openai/smol");
        let negative = refused(&[model, ("RUMMY_PRICE_local", "-1,0,2")]);
        assert!(
            negative.contains("RUMMY_PRICE_local") && negative.contains("input"),
            "{negative}"
        );
        let output = refused(&[model, ("RUMMY_PRICE_local", "1,0,inf")]);
        assert!(output.contains("output"), "{output}");
        let two = refused(&[model, ("RUMMY_PRICE_local", "1,2")]);
        assert!(two.contains("three numbers"), "{two}");
        let words = refused(&[model, ("RUMMY_PRICE_local", "one,two,three")]);
        assert!(words.contains("RUMMY_PRICE_local"), "{words}");
        let nobody = refused(&[("RUMMY_PRICE_ghost", "1,1,1")]);
        assert!(nobody.contains("RUMMY_PRICE_ghost"), "{nobody}");
        let priced = load_in(home, &[model, ("RUMMY_PRICE_local", "3, 0.3, 15")]).unwrap();
        let price = priced.models["local"].price.unwrap();
        assert_eq!(
            price,
            ModelPrice {
                input: 3.0,
                cached_input: Some(0.3),
                output: 15.0
            }
        );
    }

    #[test]
    fn bad_sandbox_settings_stop_the_start_naming_them() {
        let home = tempfile::tempdir().unwrap();
        let home = home.path().to_str().unwrap();
        let refused = |extra: &[(&str, &str)]| match load_in(home, extra) {
            Err(ConfigError::Invalid(message)) => message,
            Err(ConfigError::Layer(error)) => error.to_string(),
            other => panic!("{extra:?} was not refused: {other:?}"),
        };
        let own_port = refused(&[("PORT", "3044"), ("RUMMY_SANDBOX_PORTS", "443,3044")]);
        assert!(own_port.contains("own port 3044"), "{own_port}");
        let secret = refused(&[("RUMMY_SANDBOX_ENV", "GITHUB_TOKEN=x")]);
        assert!(secret.contains("GITHUB_TOKEN"), "{secret}");
        let loader = refused(&[("RUMMY_SANDBOX_ENV", "LD_PRELOAD=/x.so")]);
        assert!(loader.contains("LD_PRELOAD"), "{loader}");
        let zero = refused(&[("RUMMY_SANDBOX_MAX_CPU_SECS", "0")]);
        assert!(zero.contains("RUMMY_SANDBOX_MAX_CPU_SECS"), "{zero}");
        let kill = refused(&[("RUMMY_SANDBOX_KILL_OUTPUT_BYTES", "10")]);
        assert!(kill.contains("RUMMY_SANDBOX_KILL_OUTPUT_BYTES"), "{kill}");
        let port = refused(&[("RUMMY_SANDBOX_PORTS", "http")]);
        assert!(port.contains("not a TCP port"), "{port}");
        let pair = refused(&[("RUMMY_SANDBOX_ENV", "JUSTANAME")]);
        assert!(pair.contains("NAME=value"), "{pair}");
        let fine = load_in(
            home,
            &[
                ("RUMMY_SANDBOX_ENV", "CI=1,LANG=C"),
                ("RUMMY_SANDBOX_PORTS", "443"),
            ],
        );
        assert_eq!(fine.unwrap().commands.ports, [443]);
    }

    #[test]
    fn the_event_log_bounds_come_from_the_environment() {
        let home = tempfile::tempdir().unwrap();
        let settings = Settings::load(
            &env(&[
                ("RUMMY_HOME", home.path().to_str().unwrap()),
                ("RUMMY_REPLAY_PER_RUN", "10000"),
                ("RUMMY_REPLAY_RUN_BYTES", "0"),
                ("RUMMY_REPLAY_SERVER_BYTES", "1024"),
                ("RUMMY_REPLAY_KEEP_SECS", "60"),
            ]),
            Path::new("config"),
        )
        .unwrap();
        assert_eq!(
            settings.server.event_bounds(),
            crate::db::queries::run_events::EventBounds {
                per_run: 10_000,
                run_bytes: 0,
                total_bytes: 1024,
                keep_ms: 60_000,
            }
        );
    }

    #[test]
    fn reference_variable_names_override_defaults() {
        let home = tempfile::tempdir().unwrap();
        let settings = Settings::load(
            &env(&[
                ("RUMMY_HOME", home.path().to_str().unwrap()),
                ("PORT", "4000"),
                ("RUMMY_MAX_TURNS", "99"),
                ("RUMMY_TEMPERATURE", "0.5"),
                ("RUMMY_DB_PATH", "/tmp/elsewhere.db"),
                ("RUMMY_MODEL_local", "openai/smol"),
                ("RUMMY_CONTEXT_local", "8192"),
                ("RUMMY_ALLOWED_ORIGINS", "http://a, http://b"),
            ]),
            Path::new("config"),
        )
        .unwrap();
        assert_eq!(settings.server.port, 4000);
        assert_eq!(settings.agent.max_turns, 99);
        assert_eq!(settings.agent.temperature, Some(0.5));
        assert_eq!(settings.storage.db_path, PathBuf::from("/tmp/elsewhere.db"));
        assert_eq!(
            settings.models.get("local"),
            Some(&ModelSeed {
                actual: "openai/smol".into(),
                context_length: Some(8192),
                price: None,
            })
        );
        assert_eq!(
            settings.server.allowed_origins,
            vec!["http://a", "http://b"]
        );
    }

    #[test]
    fn dotenv_in_home_sits_between_files_and_process_environment() {
        let home = tempfile::tempdir().unwrap();
        std::fs::write(home.path().join(".env"), "PORT=5000\nRUMMY_MAX_TURNS=7\n").unwrap();
        let settings = Settings::load(
            &env(&[
                ("RUMMY_HOME", home.path().to_str().unwrap()),
                ("RUMMY_MAX_TURNS", "8"),
            ]),
            Path::new("config"),
        )
        .unwrap();
        assert_eq!(settings.server.port, 5000);
        assert_eq!(settings.agent.max_turns, 8);
    }

    #[test]
    fn env_file_layer_is_read_from_config_dir() {
        let home = tempfile::tempdir().unwrap();
        let config_dir = tempfile::tempdir().unwrap();
        std::fs::write(
            config_dir.path().join("staging.toml"),
            "[agent]\nmax_turns = 42\n",
        )
        .unwrap();
        let settings = Settings::load(
            &env(&[
                ("RUMMY_HOME", home.path().to_str().unwrap()),
                ("RUMMY_ENV", "staging"),
            ]),
            config_dir.path(),
        )
        .unwrap();
        assert_eq!(settings.agent.max_turns, 42);
    }

    #[test]
    fn outlines_need_time() {
        let home = tempfile::tempdir().unwrap();
        let home = home.path().to_str().unwrap();
        let refused = Settings::load(
            &env(&[("RUMMY_HOME", home), ("RUMMY_OUTLINE_TIMEOUT_MS", "0")]),
            Path::new("config"),
        );
        assert!(
            matches!(refused, Err(ConfigError::Invalid(message)) if message.contains("RUMMY_OUTLINE_TIMEOUT_MS"))
        );
        let settings = Settings::load(
            &env(&[("RUMMY_HOME", home), ("RUMMY_OUTLINE_MAX_BYTES", "0")]),
            Path::new("config"),
        )
        .unwrap();
        assert_eq!(settings.scan.outline_max_bytes, 0);
        assert_eq!(settings.scan.outline_timeout_ms, 500);
    }

    #[test]
    fn non_loopback_bind_requires_a_token() {
        let home = tempfile::tempdir().unwrap();
        let home = home.path().to_str().unwrap();
        let refused = Settings::load(
            &env(&[("RUMMY_HOME", home), ("RUMMY_HOST", "0.0.0.0")]),
            Path::new("config"),
        );
        assert!(matches!(refused, Err(ConfigError::Invalid(_))));
        let accepted = Settings::load(
            &env(&[
                ("RUMMY_HOME", home),
                ("RUMMY_HOST", "0.0.0.0"),
                ("RUMMY_AUTH_TOKEN", "s3cret"),
                ("RUMMY_PROJECTS_DIR", home),
            ]),
            Path::new("config"),
        )
        .unwrap();
        assert_eq!(
            format!("{:?}", accepted.server.auth_token),
            "Some(Secret(..))"
        );
        let with_people = Settings::load(
            &env(&[
                ("RUMMY_HOME", home),
                ("RUMMY_HOST", "0.0.0.0"),
                ("RUMMY_USERS_FILE", "people.toml"),
                ("RUMMY_PROJECTS_DIR", home),
            ]),
            Path::new("config"),
        )
        .unwrap();
        assert!(with_people.server.auth_token.is_none());
        assert_eq!(
            with_people.server.users_file,
            Some(Path::new(home).join("people.toml")),
            "a relative users file is under home"
        );
    }

    #[test]
    fn a_database_url_selects_postgres_and_stays_out_of_debug_output() {
        let home = tempfile::tempdir().unwrap();
        let home = home.path().to_str().unwrap();
        let url = "postgres://rummy:s3cret@db:5432/rummy";
        let settings = Settings::load(
            &env(&[("RUMMY_HOME", home), ("RUMMY_DATABASE_URL", url)]),
            Path::new("config"),
        )
        .unwrap();
        assert_eq!(settings.storage.database_url.expose(), url);
        assert!(!format!("{settings:?}").contains("s3cret"));
        let refused = Settings::load(
            &env(&[
                ("RUMMY_HOME", home),
                ("RUMMY_DATABASE_URL", "mysql://db/rummy"),
            ]),
            Path::new("config"),
        );
        assert!(
            matches!(refused, Err(ConfigError::Invalid(message)) if message.contains("RUMMY_DATABASE_URL"))
        );
        let sqlite = Settings::load(&env(&[("RUMMY_HOME", home)]), Path::new("config")).unwrap();
        assert!(sqlite.storage.database_url.expose().is_empty());
    }

    #[test]
    fn non_loopback_bind_requires_projects_dirs_which_must_exist() {
        let home = tempfile::tempdir().unwrap();
        let projects = tempfile::tempdir().unwrap();
        let teams = tempfile::tempdir().unwrap();
        let home = home.path().to_str().unwrap();
        let load = |dirs: &str| {
            Settings::load(
                &env(&[
                    ("RUMMY_HOME", home),
                    ("RUMMY_HOST", "0.0.0.0"),
                    ("RUMMY_AUTH_TOKEN", "s3cret"),
                    ("RUMMY_PROJECTS_DIR", dirs),
                ]),
                Path::new("config"),
            )
        };
        let refused = load("").unwrap_err();
        assert!(
            refused.to_string().contains("RUMMY_PROJECTS_DIR"),
            "{refused}"
        );
        assert!(load("relative/dir").is_err());
        assert!(load("/no/such/rummy/dir").is_err());
        let both = format!("{}:{}", projects.path().display(), teams.path().display());
        let accepted = load(&both).unwrap();
        assert_eq!(
            accepted.server.projects_dir,
            [
                projects.path().canonicalize().unwrap(),
                teams.path().canonicalize().unwrap()
            ]
        );
        let laptop = Settings::load(&env(&[("RUMMY_HOME", home)]), Path::new("config")).unwrap();
        assert!(laptop.server.projects_dir.is_empty(), "loopback: anywhere");
    }

    #[test]
    fn load_bounds_are_read_from_their_variables() {
        let home = tempfile::tempdir().unwrap();
        let home = home.path().to_str().unwrap();
        let settings = Settings::load(
            &env(&[
                ("RUMMY_HOME", home),
                ("RUMMY_MAX_IN_FLIGHT", "8"),
                ("RUMMY_MAX_IN_FLIGHT_PER_PERSON", "12"),
                ("RUMMY_MAX_FRAME_BYTES", "4096"),
                ("RUMMY_CLIENT_SEND_BUFFER_BYTES", "8192"),
                ("RUMMY_MAX_ACTIVE_LOOPS_PER_PROJECT", "3"),
                ("RUMMY_MAX_ACTIVE_LOOPS_PER_PERSON", "2"),
                ("RUMMY_LOOPS_OVER_LIMIT", "refuse"),
            ]),
            Path::new("config"),
        )
        .unwrap();
        assert_eq!(settings.server.max_in_flight, 8);
        assert_eq!(settings.server.max_in_flight_per_person, 12);
        assert_eq!(settings.server.client_send_buffer_bytes, 8192);
        assert_eq!(settings.agent.max_active_loops_per_project, 3);
        assert_eq!(settings.agent.max_active_loops_per_person, 2);
        assert_eq!(settings.agent.over_limit, OverLimit::Refuse);
        let defaults = Settings::load(&env(&[("RUMMY_HOME", home)]), Path::new("config")).unwrap();
        assert_eq!(defaults.agent.over_limit, OverLimit::Queue);
        let too_small = Settings::load(
            &env(&[
                ("RUMMY_HOME", home),
                ("RUMMY_MAX_FRAME_BYTES", "4096"),
                ("RUMMY_CLIENT_SEND_BUFFER_BYTES", "8191"),
            ]),
            Path::new("config"),
        )
        .unwrap_err();
        assert!(
            too_small
                .to_string()
                .contains("RUMMY_CLIENT_SEND_BUFFER_BYTES"),
            "{too_small}"
        );
    }

    #[test]
    fn a_console_path_is_absolute_plain_and_apart_from_rummys_own() {
        for good in ["/ui", "/team/console", "/a.b_c-d"] {
            assert!(console_path_is_valid(good), "{good}");
        }
        for bad in [
            "", "/", "ui", "/ui/", "//ui", "/a//b", "/a/../b", "/./a", "/rpc", "/rpc/ui",
            "/healthz", "/metrics", "/ui?x", "/ui x", "/ü",
        ] {
            assert!(!console_path_is_valid(bad), "{bad}");
        }
        assert!(
            console_path_is_valid("/rpcx"),
            "only the path itself is taken"
        );
    }

    #[test]
    fn trusted_proxies_are_addresses_or_networks() {
        let home = tempfile::tempdir().unwrap();
        let home = home.path().to_str().unwrap();
        let load = |proxies: &str| {
            Settings::load(
                &env(&[("RUMMY_HOME", home), ("RUMMY_TRUSTED_PROXIES", proxies)]),
                Path::new("config"),
            )
        };
        let defaults = Settings::load(&env(&[("RUMMY_HOME", home)]), Path::new("config"));
        assert!(defaults.unwrap().server.trusted_proxies.is_empty());
        let listed = load("10.0.0.1, 172.30.44.0/24,::1").unwrap();
        let expected: Vec<IpNet> = ["10.0.0.1/32", "172.30.44.0/24", "::1/128"]
            .iter()
            .map(|net| net.parse().unwrap())
            .collect();
        assert_eq!(listed.server.trusted_proxies, expected);
        let refused = load("10.0.0.1,proxy.internal").unwrap_err();
        assert!(refused.to_string().contains("proxy.internal"), "{refused}");
    }

    #[test]
    fn web_settings_read_their_limits_networks_and_search_url() {
        let home = tempfile::tempdir().unwrap();
        let home = home.path().to_str().unwrap();
        let load = |extra: &[(&str, &str)]| load_in(home, extra);
        let defaults = load(&[]).unwrap();
        assert_eq!(
            (
                defaults.web.timeout_ms,
                defaults.web.max_bytes,
                defaults.web.max_redirects
            ),
            (15000, 2_097_152, 5)
        );
        assert!(defaults.web.allow_nets.is_empty() && !defaults.search_available());
        let set = load(&[
            ("RUMMY_WEB_TIMEOUT_MS", "2500"),
            ("RUMMY_WEB_MAX_BYTES", "1024"),
            ("RUMMY_WEB_MAX_REDIRECTS", "0"),
            ("RUMMY_WEB_ALLOW_NETS", "127.0.0.1, fd00::/8"),
            ("RUMMY_SEARXNG_URL", "http://searxng:8080/searx"),
        ])
        .unwrap();
        assert_eq!(
            (set.web.timeout_ms, set.web.max_bytes, set.web.max_redirects),
            (2500, 1024, 0)
        );
        let nets: Vec<IpNet> = ["127.0.0.1/32", "fd00::/8"]
            .iter()
            .map(|net| net.parse().unwrap())
            .collect();
        assert_eq!(set.web.allow_nets, nets);
        assert!(set.search_available());
        let bad_net = load(&[("RUMMY_WEB_ALLOW_NETS", "intranet")]).unwrap_err();
        assert!(bad_net.to_string().contains("intranet"), "{bad_net}");
        for bad in ["searxng:8080", "not a url", "file:///srv/searxng"] {
            let refused = load(&[("RUMMY_SEARXNG_URL", bad)]).unwrap_err();
            assert!(
                refused
                    .to_string()
                    .contains("RUMMY_SEARXNG_URL must be an http"),
                "{bad}: {refused}"
            );
        }
    }

    #[test]
    fn traces_are_exported_only_to_a_configured_endpoint() {
        let home = tempfile::tempdir().unwrap();
        let home = home.path().to_str().unwrap();
        let load = |extra: &[(&str, &str)]| load_in(home, extra).unwrap().log;
        let unset = load(&[]);
        assert_eq!(unset.otlp_endpoint, None);
        assert_eq!(unset.otlp_service_name, "rummy");
        let set = load(&[
            ("RUMMY_OTLP_ENDPOINT", "http://127.0.0.1:4318"),
            ("RUMMY_OTLP_SERVICE_NAME", "rummy-eu"),
        ]);
        assert_eq!(set.otlp_endpoint.as_deref(), Some("http://127.0.0.1:4318"));
        assert_eq!(set.otlp_service_name, "rummy-eu");
    }

    #[test]
    fn log_format_is_text_or_json() {
        let home = tempfile::tempdir().unwrap();
        let home = home.path().to_str().unwrap();
        let load = |extra: &[(&str, &str)]| load_in(home, extra);
        assert_eq!(load(&[]).unwrap().log.format, LogFormat::Text);
        let json = load(&[("RUMMY_LOG_FORMAT", "json")]).unwrap();
        assert_eq!(json.log.format, LogFormat::Json);
        assert!(load(&[("RUMMY_LOG_FORMAT", "xml")]).is_err());
    }

    #[test]
    fn the_rpc_log_settings_default_and_come_from_their_variables() {
        let home = tempfile::tempdir().unwrap();
        let home = home.path().to_str().unwrap();
        let defaults = Settings::load(&env(&[("RUMMY_HOME", home)]), Path::new("config"))
            .unwrap()
            .audit;
        assert_eq!(
            (
                defaults.rpc_log,
                defaults.rpc_log_max_chars,
                defaults.rpc_log_max_days,
                defaults.rpc_log_max_rows
            ),
            (RpcLogMode::Full, 4096, 7, 200_000)
        );
        let set = Settings::load(
            &env(&[
                ("RUMMY_HOME", home),
                ("RUMMY_RPC_LOG", "meta"),
                ("RUMMY_RPC_LOG_MAX_CHARS", "100"),
                ("RUMMY_RPC_LOG_MAX_DAYS", "0"),
                ("RUMMY_RPC_LOG_MAX_ROWS", "50"),
            ]),
            Path::new("config"),
        )
        .unwrap()
        .audit;
        assert_eq!(
            (
                set.rpc_log,
                set.rpc_log_max_chars,
                set.rpc_log_max_days,
                set.rpc_log_max_rows
            ),
            (RpcLogMode::Meta, 100, 0, 50)
        );
        let off = Settings::load(
            &env(&[("RUMMY_HOME", home), ("RUMMY_RPC_LOG", "off")]),
            Path::new("config"),
        );
        assert_eq!(off.unwrap().audit.rpc_log, RpcLogMode::Off);
        let unknown = Settings::load(
            &env(&[("RUMMY_HOME", home), ("RUMMY_RPC_LOG", "verbose")]),
            Path::new("config"),
        );
        assert!(unknown.is_err());
    }

    #[test]
    fn zero_token_divisor_is_refused() {
        let home = tempfile::tempdir().unwrap();
        let result = Settings::load(
            &env(&[
                ("RUMMY_HOME", home.path().to_str().unwrap()),
                ("RUMMY_TOKEN_DIVISOR", "0"),
            ]),
            Path::new("config"),
        );
        assert!(result.is_err());
    }

    #[test]
    fn tilde_expands_to_the_user_home() {
        assert_eq!(
            expand_tilde("~/.rummy", Some("/home/me")),
            PathBuf::from("/home/me/.rummy")
        );
        assert_eq!(
            expand_tilde("/srv/rummy", Some("/home/me")),
            PathBuf::from("/srv/rummy")
        );
    }
}
