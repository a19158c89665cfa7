//! One server as the tools see it: where it comes from ([`Origin`]), its tag, its
//! connection, and what becomes of a call written to it ([`Plan`]).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use crate::db::enums::{EntryStatus, LoopMode};
use crate::mcp::config::ServerConfig;
use crate::mcp::connection::{Connection, Link, ToolSpec};
use crate::mcp::outcome::CallOutcome;
use crate::parser::{Command, TaggedText};
use crate::plugins::bundled::tools::extra_text;
use crate::plugins::policy::ToolPolicy;

/// A server and its connection.
pub(crate) struct Server {
    pub origin: Origin,
    pub config: Arc<ServerConfig>,
    /// A configured server's own `mcp_<name>` (made once per server, as the registry names
    /// tools); [`CLIENT_TAG`] for a client's.
    pub tag: &'static str,
    pub connection: Connection,
    /// Removed from `mcp.toml` while rummy runs: offered to no loop, its calls 502s.
    removed: AtomicBool,
}

/// The one tag of every server a client attached: `<mcp server="…" tool="…">`.
pub(super) const CLIENT_TAG: &str = "mcp";

/// Where a server comes from, and so which loops are offered it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Origin {
    /// The `index`-th of `mcp.toml` (its bit in [`crate::plugins::policy::ConfiguredSet`]).
    Configured { index: usize },
    /// Attached to one run by a client (`run/mcp`), called by name under [`CLIENT_TAG`].
    Client,
}

/// One call as written.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct McpCall {
    /// The tool's name ("" when missing).
    pub tool: String,
    /// The body as a JSON object, or why it is not one.
    pub arguments: Result<Map<String, Value>, String>,
}

impl McpCall {
    /// The arguments as written to the entry (compact JSON), or why they are invalid.
    pub(crate) fn arguments_text(&self) -> String {
        match &self.arguments {
            Ok(arguments) => Value::Object(arguments.clone()).to_string(),
            Err(reason) => reason.clone(),
        }
    }
}

/// What becomes of a call.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Plan {
    /// Refused with this status and message before reaching the server.
    Refused(EntryStatus, String),
    /// Proposed to the client (a changing tool of a server that is not trusted).
    Proposed,
    /// Made at once (read-only, trusted, or a server that is down and answers 502).
    Direct,
}

impl Server {
    /// Starts connecting to the server `config` declares, the `index`-th of the file; one
    /// that takes each person's own credential makes no connection of its own (each
    /// person's is [`Server::start_personal`]).
    pub(crate) fn start(index: usize, config: ServerConfig) -> Server {
        let config = Arc::new(config);
        let connection = if config.personal.is_some() {
            let reason = format!(
                "server {} takes each person's own credential: each person's runs connect \
                 with theirs",
                config.name
            );
            Connection::none(Arc::clone(&config), reason)
        } else {
            Connection::start(Arc::clone(&config))
        };
        Server {
            origin: Origin::Configured { index },
            tag: config.tag().leak(),
            connection,
            config,
            removed: AtomicBool::new(false),
        }
    }

    /// Starts connecting to this server as one person reaches it (`config`: this one's with
    /// their credential): the same place and tag, a connection of its own.
    pub(crate) fn start_personal(&self, config: ServerConfig) -> Server {
        let config = Arc::new(config);
        Server {
            origin: self.origin,
            tag: self.tag,
            connection: Connection::start(Arc::clone(&config)),
            config,
            removed: AtomicBool::new(false),
        }
    }

    /// Starts connecting to a server a client attached.
    pub(crate) fn start_client(config: ServerConfig) -> Server {
        let config = Arc::new(config);
        Server {
            origin: Origin::Client,
            tag: CLIENT_TAG,
            connection: Connection::start(Arc::clone(&config)),
            config,
            removed: AtomicBool::new(false),
        }
    }

    /// How a call opens its tag: `mcp_<name>`, or `mcp server="<name>"` for a client's.
    pub(crate) fn address(&self) -> String {
        match self.origin {
            Origin::Configured { .. } => self.tag.to_owned(),
            Origin::Client => format!("{} server=\"{}\"", self.tag, self.config.name),
        }
    }

    /// Whether a loop under `policy` is offered its tag (while the server is down, its
    /// calls are 502s).
    pub(crate) fn offered(&self, policy: &ToolPolicy) -> bool {
        let enabled = match self.origin {
            Origin::Configured { index } => policy.mcp_servers.contains(index),
            Origin::Client => policy.client_mcp,
        };
        enabled && policy.optional_tools && policy.mode != LoopMode::Panic && !self.is_removed()
    }

    /// Closes the server for good, saying `reason` to the calls still written to it.
    pub(crate) fn remove(&self, reason: &str) {
        self.removed.store(true, Ordering::Release);
        self.connection.close(reason);
    }

    /// Whether it was removed while rummy runs.
    pub(crate) fn is_removed(&self) -> bool {
        self.removed.load(Ordering::Acquire)
    }

    /// The call `command` makes, if it is written to this server: its own tag, or for a
    /// client's the shared one with its name as `server`.
    pub(crate) fn call_of(&self, command: &Command) -> Option<McpCall> {
        let Command::Other { name, content } = command else {
            return None;
        };
        let addressed = name == self.tag
            && match self.origin {
                Origin::Configured { .. } => true,
                Origin::Client => server_name(content) == self.config.name,
            };
        addressed.then(|| parse_call(content))
    }

    /// What becomes of `call` now.
    pub(crate) fn plan(&self, call: &McpCall) -> Plan {
        if call.tool.is_empty() {
            return Plan::Refused(EntryStatus::BadRequest, "tool is required".into());
        }
        if let Err(reason) = &call.arguments {
            return Plan::Refused(EntryStatus::BadRequest, reason.clone());
        }
        let tools = match self.connection.link() {
            Link::Up { tools, .. } => tools,
            Link::Connecting | Link::Down { .. } => return Plan::Direct,
        };
        match tools.iter().find(|spec| spec.name == call.tool) {
            None => Plan::Refused(
                EntryStatus::NotFound,
                format!(
                    "server {} has no tool {:?}; its tools: {}",
                    self.config.name,
                    call.tool,
                    tools
                        .iter()
                        .map(|spec| spec.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            ),
            Some(spec) if self.asks_first(spec) => Plan::Proposed,
            Some(_) => Plan::Direct,
        }
    }

    /// Why `policy` forbids `call` although the server is offered.
    pub(crate) fn forbids(&self, call: &McpCall, policy: &ToolPolicy) -> Option<String> {
        let changes = self
            .connection
            .tools()
            .iter()
            .any(|spec| spec.name == call.tool && !spec.read_only);
        if policy.mode == LoopMode::Ask && changes {
            return Some(format!("{} changes things: not in ask mode", call.tool));
        }
        if policy.no_proposals && self.plan(call) == Plan::Proposed {
            return Some(format!("{} asks first, and proposals are off", call.tool));
        }
        None
    }

    /// Whether a call of `spec` waits for the client's approval.
    pub(crate) fn asks_first(&self, spec: &ToolSpec) -> bool {
        !self.config.trusted && !spec.read_only
    }

    /// Makes `call` (its arguments valid) within the server's timeout, or until `cancel`.
    pub(crate) async fn call(&self, call: &McpCall, cancel: &CancellationToken) -> CallOutcome {
        let arguments = call.arguments.clone().unwrap_or_default();
        let timeout = Duration::from_secs(self.config.timeout_secs);
        self.connection
            .call(&call.tool, arguments, timeout, cancel)
            .await
    }
}

/// A call from its tag's text and attributes. The parser heals the first attribute it
/// does not know (`tool`, as the doc teaches it) into `path` when there is none.
pub(super) fn parse_call(content: &TaggedText) -> McpCall {
    let tool = extra_text(&content.attributes, "tool")
        .or_else(|| extra_text(&content.attributes, "path"))
        .unwrap_or_default()
        .trim()
        .to_owned();
    McpCall {
        tool,
        arguments: parse_arguments(&content.body),
    }
}

/// The server a call of [`CLIENT_TAG`] names. The parser heals the first attribute it does
/// not know into `path` when there is none: `server` when it comes before `tool`.
pub(super) fn server_name(content: &TaggedText) -> String {
    extra_text(&content.attributes, "server")
        .or_else(|| extra_text(&content.attributes, "path"))
        .unwrap_or_default()
        .trim()
        .to_owned()
}

/// The arguments a body (or a proposal's `arguments` attribute) holds: `{}` when empty.
pub(super) fn parse_arguments(text: &str) -> Result<Map<String, Value>, String> {
    let text = text.trim();
    if text.is_empty() {
        return Ok(Map::new());
    }
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(arguments)) => Ok(arguments),
        Ok(_) => Err("the arguments must be one JSON object".to_owned()),
        Err(error) => Err(format!("the arguments are not JSON: {error}")),
    }
}

#[cfg(test)]
mod tests {
    use super::{parse_arguments, Plan, Server};
    use crate::mcp::config;
    use crate::parser::{AttrValue, Command, TaggedText};
    use crate::plugins::policy::ToolPolicy;

    /// A server `a` whose command does not exist: never connected.
    fn down_server() -> Server {
        let text = "[[server]]\nname = \"a\"\ncommand = \"/nonexistent/mcp\"";
        let config = config::parse(text, "mcp.toml").unwrap().remove(0);
        Server::start(0, config)
    }

    fn command(tag: &str, tool: &str, body: &str) -> Command {
        Command::Other {
            name: tag.to_owned(),
            content: TaggedText {
                body: body.to_owned(),
                attributes: vec![("tool".to_owned(), AttrValue::Text(tool.to_owned()))],
            },
        }
    }

    #[tokio::test]
    async fn a_server_reads_the_calls_of_its_own_tag_only() {
        let server = down_server();
        assert_eq!(server.call_of(&command("mcp_b", "t", "")), None);
        let call = server
            .call_of(&command("mcp_a", "t", "{\"q\": 1}"))
            .unwrap();
        assert_eq!(call.tool, "t");
        assert_eq!(call.arguments_text(), "{\"q\":1}");
        let empty = server.call_of(&command("mcp_a", "", "")).unwrap();
        assert_eq!(
            server.plan(&empty),
            Plan::Refused(
                crate::db::enums::EntryStatus::BadRequest,
                "tool is required".into()
            )
        );
    }

    #[tokio::test]
    async fn a_call_to_a_server_that_is_down_is_made_to_fail_and_never_forbidden() {
        let server = down_server();
        let call = server.call_of(&command("mcp_a", "t", "")).unwrap();
        assert_eq!(server.plan(&call), Plan::Direct);
        let policy = ToolPolicy {
            no_proposals: true,
            ..ToolPolicy::act()
        };
        assert_eq!(server.forbids(&call, &policy), None);
    }

    #[tokio::test]
    async fn a_clients_server_reads_the_shared_tag_naming_it_in_either_order() {
        let text = "[[server]]\nname = \"a\"\ncommand = \"/nonexistent/mcp\"";
        let server = Server::start_client(config::parse(text, "mcp.toml").unwrap().remove(0));
        let written = |tag: &str, attributes: &[(&str, &str)]| Command::Other {
            name: tag.to_owned(),
            content: TaggedText {
                body: String::new(),
                attributes: attributes
                    .iter()
                    .map(|(name, value)| ((*name).to_owned(), AttrValue::Text((*value).to_owned())))
                    .collect(),
            },
        };
        // As the parser heals them: the first of the two becomes `path`.
        let server_first = written("mcp", &[("path", "a"), ("tool", "t")]);
        let tool_first = written("mcp", &[("path", "t"), ("server", "a")]);
        for command in [server_first, tool_first] {
            assert_eq!(
                server.call_of(&command).map(|call| call.tool),
                Some("t".into())
            );
        }
        assert_eq!(
            server.call_of(&written("mcp", &[("server", "b"), ("tool", "t")])),
            None
        );
        assert_eq!(server.call_of(&written("mcp_a", &[("tool", "t")])), None);
        assert_eq!(server.address(), "mcp server=\"a\"");
        assert_eq!(down_server().address(), "mcp_a");
    }

    #[test]
    fn arguments_are_one_json_object() {
        assert!(parse_arguments("  ").unwrap().is_empty());
        assert!(parse_arguments("[1]").is_err());
        assert!(parse_arguments("{oops").is_err());
        assert_eq!(parse_arguments("{\"a\": 2}").unwrap()["a"], 2);
    }
}
