//! `$RUMMY_HOME/mcp.toml`: the MCP servers rummy connects to, one `[[server]]` table each.
//!
//! ```toml
//! [[server]]
//! name = "github"                     # the model's tag is <mcp_github>
//! command = "github-mcp-server"       # stdio: a child process …
//! args = ["stdio"]
//! env = { GITHUB_TOKEN = "…" }        # values are secrets: never logged
//! trusted = false                     # changing tools are proposed to the client
//! timeout_secs = 30
//! max_output_bytes = 16384
//! enabled = true
//! projects = ["web", "api-*"]         # project names or globs; "*" (default) is every one
//!
//! [[server]]
//! name = "docs"
//! url = "https://mcp.example.com/mcp" # … or streamable HTTP
//! headers = { Authorization = "Bearer …" }
//!
//! [[server]]
//! name = "tracker"                    # each person's own credential:
//! url = "https://tracker.example/mcp"
//! personal = { header = "Authorization", prefix = "Bearer " }
//!
//! [[server]]
//! name = "gh"
//! command = "github-mcp-server"
//! args = ["stdio"]
//! personal = { env = "GITHUB_PERSONAL_ACCESS_TOKEN" }
//! ```
//!
//! A server with `personal` makes no shared connection: each person whose runs use it
//! connects with their own credential (`mcpCredentials/set`), an HTTP server's sent as the
//! header `header` (its value `prefix` then the credential), a stdio server's set as the
//! environment variable `env` of that person's own process (`crate::mcp::personal`). The
//! header only for a `url`, the variable only for a `command`, neither also among its
//! `headers` or `env`.
//!
//! A missing file is no servers; a file that does not read stops the start with the reason.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;

use crate::config::Secret;
use crate::project::patterns::ProjectPatterns;
use crate::web::NetFilter;

/// The file's name under `$RUMMY_HOME`.
pub(crate) const FILE_NAME: &str = "mcp.toml";

/// The most servers one file may declare (a loop's servers are a 64-bit set).
pub(crate) const MAX_SERVERS: usize = 64;

/// Why `mcp.toml` does not read.
#[derive(Debug, thiserror::Error)]
pub(crate) enum McpConfigError {
    #[error("{path}: {reason}")]
    Unreadable { path: String, reason: String },
    #[error("{file}: server {server:?}: {reason}")]
    Invalid {
        file: String,
        server: String,
        reason: String,
    },
}

/// How rummy reaches a server.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Transport {
    /// A child process speaking MCP on stdin/stdout.
    Stdio {
        command: String,
        args: Vec<String>,
        /// Set in the child's environment.
        env: BTreeMap<String, Secret>,
    },
    /// A streamable-HTTP endpoint.
    Http {
        url: String,
        /// Sent with every request.
        headers: BTreeMap<String, Secret>,
        /// The addresses it may be reached at, checked before each connection; `None` is
        /// any (a configured server, or a client's on a server that takes any).
        reach: Option<NetFilter>,
    },
}

impl Transport {
    /// `stdio` or `http`, for clients and logs.
    pub(crate) fn kind(&self) -> &'static str {
        match self {
            Transport::Stdio { .. } => "stdio",
            Transport::Http { .. } => "http",
        }
    }
}

/// One server as configured.
#[derive(Debug, Clone)]
pub(crate) struct ServerConfig {
    /// Lowercase letters, digits and `_`; the tag is `mcp_<name>`.
    pub name: String,
    pub transport: Transport,
    /// Its changing tools run without the client's approval.
    pub trusted: bool,
    /// How long one call may take before it is a 504.
    pub timeout_secs: u64,
    /// The most bytes of a result the model sees; the rest is cut with a marker.
    pub max_output_bytes: usize,
    /// The projects whose loops are offered its tools.
    pub projects: ProjectPatterns,
    /// Each person connects with their own credential, put where this says.
    pub personal: Option<Personal>,
}

/// Where a server that takes each person's own credential puts it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Personal {
    /// An HTTP server's header, its value `prefix` then the credential.
    Header { name: String, prefix: String },
    /// A stdio server's environment variable.
    Env { name: String },
}

/// `personal = { … }` as written (and as `mcp/add` takes it).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct PersonalEntry {
    #[serde(default)]
    pub header: Option<String>,
    #[serde(default)]
    pub prefix: Option<String>,
    #[serde(default)]
    pub env: Option<String>,
}

impl PersonalEntry {
    /// Where it puts the credential of a server reached by `transport`, or why it cannot.
    fn read(self, transport: &Transport) -> Result<Personal, String> {
        match (self, transport) {
            (
                PersonalEntry {
                    header: Some(name),
                    prefix,
                    env: None,
                },
                Transport::Http { headers, .. },
            ) => {
                if http::HeaderName::from_bytes(name.as_bytes()).is_err() {
                    return Err(format!("personal: header {name:?} is not a header name"));
                }
                if headers.keys().any(|held| held.eq_ignore_ascii_case(&name)) {
                    return Err(format!("personal: header {name} is also in headers"));
                }
                Ok(Personal::Header {
                    name,
                    prefix: prefix.unwrap_or_default(),
                })
            }
            (
                PersonalEntry {
                    header: None,
                    prefix: None,
                    env: Some(name),
                },
                Transport::Stdio { env, .. },
            ) => {
                let well_formed =
                    !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
                if !well_formed {
                    return Err(format!(
                        "personal: env {name:?} is not a variable name (letters, digits, _)"
                    ));
                }
                if env.contains_key(&name) {
                    return Err(format!("personal: env {name} is also in env"));
                }
                Ok(Personal::Env { name })
            }
            _ => Err("personal: { header, prefix } for a url, { env } for a command".to_owned()),
        }
    }
}

impl ServerConfig {
    /// The model's tag (and the scheme of its entries).
    pub(crate) fn tag(&self) -> String {
        format!("mcp_{}", self.name)
    }

    /// Whether loops of `project` are offered its tools.
    pub(crate) fn serves(&self, project: &str) -> bool {
        self.projects.matches(project)
    }

    /// This server as one person reaches it: `credential` put where [`Personal`] says
    /// (a server that takes none is left as it is).
    pub(crate) fn with_credential(&self, credential: &str) -> ServerConfig {
        let mut config = self.clone();
        match (&self.personal, &mut config.transport) {
            (Some(Personal::Header { name, prefix }), Transport::Http { headers, .. }) => {
                headers.insert(name.clone(), Secret::new(format!("{prefix}{credential}")));
            }
            (Some(Personal::Env { name }), Transport::Stdio { env, .. }) => {
                env.insert(name.clone(), Secret::new(credential.to_owned()));
            }
            _ => {}
        }
        config
    }
}

/// One `[[server]]` table as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ServerEntry {
    name: String,
    #[serde(default)]
    command: Option<String>,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    env: BTreeMap<String, Secret>,
    #[serde(default)]
    url: Option<String>,
    #[serde(default)]
    headers: BTreeMap<String, Secret>,
    #[serde(default)]
    trusted: bool,
    #[serde(default = "default_timeout_secs")]
    timeout_secs: u64,
    #[serde(default = "default_max_output_bytes")]
    max_output_bytes: usize,
    #[serde(default = "default_enabled")]
    enabled: bool,
    #[serde(default = "every_project")]
    projects: Vec<String>,
    #[serde(default)]
    personal: Option<PersonalEntry>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct McpFile {
    #[serde(default)]
    server: Vec<ServerEntry>,
}

pub(super) fn default_timeout_secs() -> u64 {
    30
}

pub(super) fn default_max_output_bytes() -> usize {
    16 * 1024
}

fn default_enabled() -> bool {
    true
}

fn every_project() -> Vec<String> {
    vec!["*".to_owned()]
}

/// The enabled servers of `$RUMMY_HOME/mcp.toml` (blocking: read at start).
pub(crate) fn load(home: &Path) -> Result<Vec<ServerConfig>, McpConfigError> {
    let path = home.join(FILE_NAME);
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(error) => {
            return Err(McpConfigError::Unreadable {
                path: path.display().to_string(),
                reason: error.to_string(),
            })
        }
    };
    parse(&text, &path.display().to_string())
}

/// The enabled servers declared in `text` (the contents of `file`).
pub(crate) fn parse(text: &str, file: &str) -> Result<Vec<ServerConfig>, McpConfigError> {
    let parsed: McpFile = toml::from_str(text).map_err(|error| McpConfigError::Unreadable {
        path: file.to_owned(),
        reason: error.to_string(),
    })?;
    if parsed.server.len() > MAX_SERVERS {
        return Err(McpConfigError::Unreadable {
            path: file.to_owned(),
            reason: format!("at most {MAX_SERVERS} servers"),
        });
    }
    let mut names = std::collections::HashSet::new();
    let mut servers = Vec::new();
    for entry in parsed.server {
        let invalid = |reason: String| McpConfigError::Invalid {
            file: file.to_owned(),
            server: entry.name.clone(),
            reason,
        };
        let well_named = !entry.name.is_empty()
            && entry.name.len() <= 32
            && entry
                .name
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
        if !well_named {
            return Err(invalid(
                "name must be 1–32 lowercase letters, digits or _".into(),
            ));
        }
        if !names.insert(entry.name.clone()) {
            return Err(invalid("listed twice".into()));
        }
        let transport = match (entry.command, entry.url) {
            (Some(command), None) if entry.headers.is_empty() => Transport::Stdio {
                command,
                args: entry.args,
                env: entry.env,
            },
            (None, Some(url)) if entry.args.is_empty() && entry.env.is_empty() => Transport::Http {
                url,
                headers: entry.headers,
                reach: None,
            },
            _ => {
                return Err(invalid(
                    "give either command (with args, env) or url (with headers)".into(),
                ))
            }
        };
        if entry.timeout_secs == 0 || entry.max_output_bytes == 0 {
            return Err(invalid(
                "timeout_secs and max_output_bytes must be positive".into(),
            ));
        }
        let projects = ProjectPatterns::new(entry.projects).map_err(invalid)?;
        let personal = entry
            .personal
            .map(|personal| personal.read(&transport))
            .transpose()
            .map_err(invalid)?;
        if !entry.enabled {
            continue;
        }
        servers.push(ServerConfig {
            name: entry.name,
            transport,
            trusted: entry.trusted,
            timeout_secs: entry.timeout_secs,
            max_output_bytes: entry.max_output_bytes,
            projects,
            personal,
        });
    }
    Ok(servers)
}

#[cfg(test)]
mod tests {
    use super::{parse, Transport};

    #[test]
    fn servers_read_with_their_defaults_and_disabled_ones_are_left_out() {
        let servers = parse(
            r#"
            [[server]]
            name = "git_hub"
            command = "gh-mcp"
            args = ["stdio"]
            env = { TOKEN = "s3cret" }
            projects = ["web", "api-*"]

            [[server]]
            name = "docs"
            url = "http://127.0.0.1:9/mcp"
            headers = { Authorization = "Bearer s3cret" }
            trusted = true
            timeout_secs = 5
            max_output_bytes = 100

            [[server]]
            name = "off"
            command = "x"
            enabled = false
            "#,
            "mcp.toml",
        )
        .unwrap();
        assert_eq!(servers.len(), 2);
        let github = &servers[0];
        assert_eq!(github.tag(), "mcp_git_hub");
        assert_eq!(
            (github.trusted, github.timeout_secs, github.max_output_bytes),
            (false, 30, 16 * 1024)
        );
        assert!(github.serves("web") && github.serves("api-v2") && !github.serves("shop"));
        assert!(servers[1].serves("anything"));
        assert!(matches!(servers[1].transport, Transport::Http { .. }));
        let logged = format!("{servers:?}");
        assert!(!logged.contains("s3cret"), "{logged}");
    }

    /// Two servers taking each person's own credential, one per transport.
    const PERSONAL: &str = r#"
            [[server]]
            name = "web"
            url = "http://127.0.0.1:9/mcp"
            headers = { X-Team = "a" }
            personal = { header = "Authorization", prefix = "Bearer " }

            [[server]]
            name = "cli"
            command = "x"
            env = { A = "1" }
            personal = { env = "TOKEN" }
            "#;

    #[test]
    fn a_personal_server_puts_each_persons_credential_where_its_transport_takes_it() {
        let servers = parse(PERSONAL, "mcp.toml").unwrap();
        match servers[0].with_credential("t0k").transport {
            Transport::Http { headers, .. } => {
                assert_eq!(headers["Authorization"].expose(), "Bearer t0k");
                assert_eq!(headers["X-Team"].expose(), "a");
            }
            Transport::Stdio { .. } => panic!("a url became a command"),
        }
        match servers[1].with_credential("t0k").transport {
            Transport::Stdio { env, .. } => {
                assert_eq!((env["TOKEN"].expose(), env["A"].expose()), ("t0k", "1"));
            }
            Transport::Http { .. } => panic!("a command became a url"),
        }
        let refused = [
            "url = \"http://h\"\npersonal = { env = \"T\" }",
            "command = \"x\"\npersonal = { header = \"Authorization\" }",
            "command = \"x\"\npersonal = { env = \"T\", header = \"A\" }",
            "command = \"x\"\npersonal = { env = \"T=1\" }",
            "command = \"x\"\nenv = { T = \"1\" }\npersonal = { env = \"T\" }",
            "url = \"http://h\"\nheaders = { authorization = \"x\" }\npersonal = { header = \"Authorization\" }",
            "url = \"http://h\"\npersonal = { header = \"bad header\" }",
            "url = \"http://h\"\npersonal = { header = \"A\", other = 1 }",
        ];
        for text in refused {
            let text = format!("[[server]]\nname = \"a\"\n{text}");
            let error = parse(&text, "mcp.toml").err();
            assert!(
                error.is_some_and(|error| error.to_string().contains("personal")
                    || error.to_string().contains("unknown field")),
                "{text}"
            );
        }
    }

    #[test]
    fn a_server_needs_one_transport_and_a_tag_name() {
        let errors = [
            "[[server]]\nname = \"a\"",
            "[[server]]\nname = \"a\"\ncommand = \"x\"\nurl = \"http://h\"",
            "[[server]]\nname = \"a\"\nurl = \"http://h\"\nargs = [\"x\"]",
            "[[server]]\nname = \"Bad-Name\"\ncommand = \"x\"",
            "[[server]]\nname = \"a\"\ncommand = \"x\"\n[[server]]\nname = \"a\"\ncommand = \"y\"",
            "[[server]]\nname = \"a\"\ncommand = \"x\"\ntimeout_secs = 0",
            "[[server]]\nname = \"a\"\ncommand = \"x\"\nprojects = [\"[\"]",
            "[[server]]\nname = \"a\"\ncommand = \"x\"\nunknown = 1",
        ];
        for text in errors {
            assert!(parse(text, "mcp.toml").is_err(), "{text}");
        }
    }
}
