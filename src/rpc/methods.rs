//! The method table: every method the server answers, declared once with its typed params,
//! its handler, whether it needs `init`, whether it is long-running (exempt from the RPC
//! timeout) and what `discover` says of it. Routing and the `discover` catalogue are derived
//! from the table; the names of a method's params come from its params type (as serde reads
//! them), the table gives each a description, and a test holds the two together. Beside
//! the table, every tool of the registry without a method of its own is a method
//! ([`Method::Tool`]), and so is every method a plugin adds ([`Method::Plugin`]), which
//! declares its own description and params.

use serde_aux::serde_introspection::serde_introspect;
use serde_json::{json, Map, Value};

use crate::access::Role;
use crate::agent::AgentContext;
use crate::error::AppError;
use crate::plugins::method::PluginMethod;
use crate::plugins::policy::ToolPolicy;
use crate::plugins::tool::{Availability, ToolKind};
use crate::plugins::Plugins;
use crate::rpc::call::{CallContext, Reply};
use crate::rpc::handlers::{
    admin_changes, cancel, caps_edit, changes, entries, folders, fork, host_credentials, inbox,
    keys, loops, mcp, mcp_credentials, mcp_edit, model_test, models, people, people_edit,
    plugin_methods, presence, project_config, replay, resume, rules, runs, session, skills, tokens,
    tools, usage, webhooks,
};
use crate::rpc::params::{decode, NoParams, Page};

/// What `discover` says of one method, and how it is served.
pub(crate) struct MethodSpec {
    /// One line on what the method does.
    pub description: &'static str,
    /// Parameter name (as on the wire) → informal type and meaning.
    pub params: &'static [(&'static str, &'static str)],
    /// The parameter names of its params type, as serde reads them (asked only by
    /// `discover`, not on every call); `None` for a plugin's method, whose names are those
    /// of `params`.
    pub fields: Option<fn() -> &'static [&'static str]>,
    /// The connection must have called `init`.
    pub needs_init: bool,
    /// Runs until its loop ends; exempt from the RPC timeout.
    pub long_running: bool,
    /// The least role that may call it.
    pub role: Role,
}

/// Declares the methods: `Variant "wire/name" (ParamsType) handler, init?, long?, role,
/// "description" { "param": "description", ... };`
macro_rules! method_table {
    ($(
        $variant:ident $name:literal ($params:ty) $handler:path,
        needs_init: $init:literal, long_running: $long:literal, role: $role:ident,
        $description:literal $fields:expr;
    )*) => {
        /// Every RPC method, by name.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub(crate) enum Method {
            $(
                #[doc = concat!("`", $name, "`")]
                $variant,
            )*
            /// A model tool called directly by a client (`set`, `rm`, ...): every tool of
            /// the registry that has no method of its own and is not reasoning.
            Tool(&'static str),
            /// A method a plugin added.
            Plugin(PluginSpec),
        }

        impl Method {
            /// Every explicitly declared method (tools excluded), in catalogue order.
            pub(crate) const NAMED: &'static [Method] = &[$(Method::$variant),*];

            /// The wire name.
            pub(crate) fn name(self) -> &'static str {
                match self {
                    $(Method::$variant => $name,)*
                    Method::Tool(tool) => tool,
                    Method::Plugin(spec) => spec.name,
                }
            }

            /// The method's entry in the table.
            pub(crate) fn spec(self) -> MethodSpec {
                match self {
                    $(Method::$variant => MethodSpec {
                        description: $description,
                        params: $fields,
                        fields: Some(serde_introspect::<$params>),
                        needs_init: $init,
                        long_running: $long,
                        role: Role::$role,
                    },)*
                    Method::Tool(_) => MethodSpec {
                        description: "Dispatch a model tool on a run.",
                        params: TOOL_PARAMS,
                        fields: Some(serde_introspect::<tools::ToolParams>),
                        needs_init: true,
                        long_running: false,
                        role: Role::Member,
                    },
                    Method::Plugin(spec) => MethodSpec {
                        description: spec.description,
                        params: spec.params,
                        fields: None,
                        needs_init: spec.needs_init,
                        long_running: false,
                        role: spec.role,
                    },
                }
            }
        }

        /// Decodes the params of `method` and runs its handler.
        pub(crate) async fn route(
            context: CallContext,
            method: Method,
            params: Value,
        ) -> Result<Reply, AppError> {
            match method {
                $(Method::$variant => $handler(context, decode::<$params>(params)?).await,)*
                Method::Tool(tool) => tools::dispatch(context, tool, decode(params)?).await,
                Method::Plugin(spec) => plugin_methods::call(context, spec.name, params).await,
            }
        }
    };
}

/// What a plugin's method declares of itself (taken from the registry on each lookup).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct PluginSpec {
    pub name: &'static str,
    pub description: &'static str,
    pub params: &'static [(&'static str, &'static str)],
    pub needs_init: bool,
    pub role: Role,
}

impl PluginSpec {
    fn of(method: &dyn PluginMethod) -> PluginSpec {
        PluginSpec {
            name: method.name(),
            description: method.description(),
            params: method.params(),
            needs_init: method.needs_init(),
            role: method.role(),
        }
    }
}

const TOOL_PARAMS: &[(&str, &str)] = &[
    ("run", "string — run alias"),
    ("path", "string — target path, URI or pattern"),
    ("body", "string? — tool body"),
    ("to", "string? — destination (mv, cp)"),
    ("attributes", "object? — extra tool attributes"),
];

const RUN_FLAGS: &[(&str, &str)] = &[
    ("model", "string — model alias"),
    ("prompt", "string — the prompt"),
    ("run", "string? — continue this run"),
    ("fork", "boolean? — with run: continue in a copy"),
    ("temperature", "number? — 0..2"),
    ("persona", "string? — persona text for a new run"),
    (
        "contextLimit",
        "integer? — cap on the context window, ≥ 1024",
    ),
    ("noRepo", "boolean? — skip project file scanning"),
    ("noInteraction", "boolean? — no ask_user"),
    ("noWeb", "boolean? — no search"),
    ("noProposals", "boolean? — no ask_user, env or sh"),
    (
        "caps",
        "object? — the run's own spend caps {day_tokens, day_dollars, month_tokens, month_dollars}, never above the caller's",
    ),
];

const PAGE: &[(&str, &str)] = &[("limit", "number?"), ("offset", "number?")];

method_table! {
    Ping "ping" (NoParams) session::ping,
        needs_init: false, long_running: false, role: Viewer,
        "Liveness check; answers {}." &[];
    Discover "discover" (NoParams) discover,
        needs_init: false, long_running: false, role: Viewer,
        "This catalogue of methods and notifications." &[];
    Init "init" (session::InitParams) session::init,
        needs_init: false, long_running: false, role: Viewer,
        "Bind this connection to a project: created at its root the first time, opened at that root after." &[
            ("name", "string — project identity"),
            ("projectRoot", "string — absolute path of the project tree"),
            ("client", "object? — {name, kind: editor|console|api}: what other clients of a run this connection is in see (default {name: \"api\", kind: \"api\"})"),
        ];
    GetProjects "getProjects" (NoParams) session::projects,
        needs_init: false, long_running: false, role: Viewer,
        "The projects the caller may open, by name: [{name, projectRoot, created}]." &[];
    GetPeople "getPeople" (NoParams) people::list,
        needs_init: false, long_running: false, role: Admin,
        "The people of the users file, in its order: [{name, role, projects}] (never a token or its hash)." &[];
    PeopleAdd "people/add" (people_edit::AddParams) people_edit::add,
        needs_init: false, long_running: false, role: Admin,
        "Add a person to the users file (its comments kept, written atomically, in effect at once): {name, role, projects, token}, the token shown this once and stored only as its SHA-256." &[
            ("name", "string — 1–64 letters, digits or ._@-, from a letter or digit"),
            ("role", "string — viewer, member or admin"),
            ("projects", "[string]? — project names or globs (\"*\": every project; default none)"),
        ];
    PeopleUpdate "people/update" (people_edit::UpdateParams) people_edit::update,
        needs_init: false, long_running: false, role: Admin,
        "Change a person's role, projects or both in the users file, in effect at once on their open connections: {name, role, projects}." &[
            ("name", "string — the person"),
            ("role", "string? — viewer, member or admin"),
            ("projects", "[string]? — project names or globs, replacing theirs"),
        ];
    PeopleRemove "people/remove" (people_edit::NameParams) people_edit::remove,
        needs_init: false, long_running: false, role: Admin,
        "Remove a person from the users file; their open connections can do nothing more: {removed: name}." &[
            ("name", "string — the person"),
        ];
    PeopleToken "people/token" (people_edit::NameParams) people_edit::token,
        needs_init: false, long_running: false, role: Admin,
        "Give a person a new token, shown this once ({name, token}); the old one opens nothing more." &[
            ("name", "string — the person"),
        ];
    CapsSet "caps/set" (caps_edit::SetParams) caps_edit::set,
        needs_init: false, long_running: false, role: Admin,
        "Set spend caps of a person, a project or the server, kept in the store; each replaces the configured cap of the same period and unit, and loops paused at a cap now raised go on: {scope, subject, caps}." &[
            ("scope", "string — person, project or server"),
            ("subject", "string? — the person's or project's name (none for the server)"),
            ("caps", "object — {day_tokens?, day_dollars?, month_tokens?, month_dollars?}, at least one; replaces the scope's stored caps"),
        ];
    CapsClear "caps/clear" (caps_edit::ClearParams) caps_edit::clear,
        needs_init: false, long_running: false, role: Admin,
        "Remove the stored caps of a person, a project or the server (the configured ones hold again): {scope, subject, cleared}." &[
            ("scope", "string — person, project or server"),
            ("subject", "string? — the person's or project's name (none for the server)"),
        ];
    CapsList "caps/list" (NoParams) caps_edit::list,
        needs_init: false, long_running: false, role: Admin,
        "The spend caps set with caps/set: {caps: [{scope, subject, caps, setBy, setAt}]}." &[];
    McpAdd "mcp/add" (mcp_edit::AddParams) mcp_edit::add,
        needs_init: false, long_running: false, role: Admin,
        "Add an MCP server to mcp.toml (its comments kept, written atomically) and start it: {name, tag}; getMcpServers lists it at once, and its tag is offered to the loops of the projects it serves from their next turn. Env values and headers are never shown or audited, only their names." &[
            ("name", "string — 1–32 lowercase letters, digits or _ (the tag is mcp_<name>)"),
            ("command", "string? — a child process on stdio (with args, env) …"),
            ("args", "[string]? — its arguments"),
            ("env", "object? — {KEY: value} set in its environment (secrets)"),
            ("url", "string? — … or a streamable-HTTP endpoint (with headers)"),
            ("headers", "object? — {Name: value} sent with each request (secrets)"),
            ("trusted", "boolean? — its changing tools run without the client's approval (default false)"),
            ("timeout_secs", "integer? — one call's limit (default 30)"),
            ("max_output_bytes", "integer? — the most of a result the model sees (default 16384)"),
            ("projects", "[string]? — project names or globs it serves (default [\"*\"])"),
            ("personal", "object? — each person reaches it with their own credential (mcpCredentials/set): {header, prefix?} for a url, {env} for a command; no shared connection"),
        ];
    McpRemove "mcp/remove" (mcp_edit::NameParams) mcp_edit::remove,
        needs_init: false, long_running: false, role: Admin,
        "Remove an MCP server from mcp.toml and stop it: its tag is offered to no loop's next turn, and a call already written to it is a 502: {removed: name}." &[
            ("name", "string — the server"),
        ];
    McpRestart "mcp/restart" (mcp_edit::NameParams) mcp_edit::restart,
        needs_init: false, long_running: false, role: Admin,
        "End a running MCP server's session (a child process is stopped) and connect again: {restarted: name}." &[
            ("name", "string — the server"),
        ];
    AdminChanges "admin/changes" (admin_changes::ChangesParams) admin_changes::list,
        needs_init: false, long_running: false, role: Admin,
        "Admins' changes to people, caps and MCP servers, and personal access tokens minted, revoked and refused, newest first: {changes: [{id, at, by, action, subject, detail}]} (never a token)." &[
            ("limit", "integer? — 1 to 200, default 50"),
            ("before", "integer? — only changes before this id (the next page)"),
        ];
    TokensMint "tokens/mint" (tokens::MintParams) tokens::mint,
        needs_init: false, long_running: false, role: Viewer,
        "Mint a personal access token of the caller's for an editor (a person, not through a token): {id, name, token, prefix, readOnly, project, createdAt, expiresAt}, the token shown this once and stored only as its SHA-256; it opens a WebSocket as the caller's own token does, within its scope; audited." &[
            ("name", "string — what it is for (\"laptop\"), 1–64 characters"),
            ("expiresInDays", "integer — 1 to 366: it opens nothing after"),
            ("readOnly", "boolean? — it acts as a viewer at most (default false)"),
            ("project", "string? — the one project it opens (one of the caller's; default all of theirs)"),
        ];
    TokensList "tokens/list" (tokens::ListParams) tokens::list,
        needs_init: false, long_running: false, role: Viewer,
        "The caller's personal access tokens, newest first, never a token: {tokens: [{id, person, name, prefix, readOnly, project, createdAt, expiresAt, lastUsedAt, revokedAt, revokedBy, state}]} (unix seconds; state live, expired or revoked; lastUsedAt to the minute)." &[
            ("all", "boolean? — everyone's tokens (admins)"),
        ];
    TokensRevoke "tokens/revoke" (tokens::RevokeParams) tokens::revoke,
        needs_init: false, long_running: false, role: Viewer,
        "Revoke a personal access token: the caller's own, or an admin anyone's; it opens nothing more, and a connection it opened can do nothing more: {id, revoked} (false: it was revoked already); audited." &[
            ("id", "integer — the token's id (tokens/list)"),
        ];
    KeysSet "keys/set" (keys::SetParams) keys::set,
        needs_init: false, long_running: false, role: Viewer,
        "Set the caller's own key for a provider, replacing theirs: the runs they start call that provider with it (sealed at rest, never returned or logged; audited as keys/set): {provider}." &[
            ("provider", "string — openai, openrouter or xai"),
            ("key", "string — the provider's API key (secret)"),
        ];
    KeysList "keys/list" (NoParams) keys::list,
        needs_init: false, long_running: false, role: Viewer,
        "The providers the caller has an own key for, never the key: {keys: [{provider, setAt, updatedAt, lastUsedAt}]} (UTC)." &[];
    KeysRemove "keys/remove" (keys::RemoveParams) keys::remove,
        needs_init: false, long_running: false, role: Viewer,
        "Forget the caller's own key for a provider (audited as keys/remove): {provider, removed}." &[
            ("provider", "string — openai, openrouter or xai"),
        ];
    HostCredentialsSet "hostCredentials/set" (host_credentials::SetParams) host_credentials::set,
        needs_init: false, long_running: false, role: Viewer,
        "Set the caller's own credential for a host, replacing theirs: the egress proxy adds it as a header to each request the sandboxed commands of the runs they start make to that host (sealed at rest, never returned or logged, never seen by the command; audited as hostCredentials/set): {host}." &[
            ("host", "string — one host name, no port or wildcard"),
            ("header", "string — the header's name (Authorization, PRIVATE-TOKEN, …)"),
            ("value", "string — the header's value (secret)"),
        ];
    HostCredentialsList "hostCredentials/list" (NoParams) host_credentials::list,
        needs_init: false, long_running: false, role: Viewer,
        "The hosts the caller has a credential for, never the credential: {credentials: [{host, setAt, updatedAt, lastUsedAt}]} (UTC)." &[];
    HostCredentialsRemove "hostCredentials/remove" (host_credentials::RemoveParams) host_credentials::remove,
        needs_init: false, long_running: false, role: Viewer,
        "Forget the caller's credential for a host (audited as hostCredentials/remove): {host, removed}." &[
            ("host", "string — the host name"),
        ];
    McpCredentialsSet "mcpCredentials/set" (mcp_credentials::SetParams) mcp_credentials::set,
        needs_init: false, long_running: false, role: Viewer,
        "Set the caller's own credential for an MCP server that takes each person's own (personal in mcp.toml), replacing theirs: the runs they start reach that server on a connection of theirs made with it, a connection made with the old one closed (sealed at rest, never returned or logged; audited as mcpCredentials/set, each connection made with it as mcp/credential): {server}." &[
            ("server", "string — the server's name in mcp.toml"),
            ("value", "string — the credential (secret): a token the server's header or variable carries"),
        ];
    McpCredentialsList "mcpCredentials/list" (NoParams) mcp_credentials::list,
        needs_init: false, long_running: false, role: Viewer,
        "The MCP servers that take each person's own credential, and those the caller has one for, never the credential: {servers: [name], credentials: [{server, setAt, updatedAt, lastUsedAt}]} (UTC)." &[];
    McpCredentialsRemove "mcpCredentials/remove" (mcp_credentials::RemoveParams) mcp_credentials::remove,
        needs_init: false, long_running: false, role: Viewer,
        "Forget the caller's credential for an MCP server, closing their connection to it (audited as mcpCredentials/remove): {server, removed}." &[
            ("server", "string — the server's name"),
        ];
    KeysRequired "keys/required" (keys::RequiredParams) keys::required,
        needs_init: true, long_running: false, role: Viewer,
        "Whether the project's runs must call providers with their starter's own key (a run whose starter has none stops before any model call); with required, admins set it: {required}." &[
            ("required", "boolean? — admins: require people's own keys, or not"),
        ];
    GetModels "getModels" (Page) models::list,
        needs_init: false, long_running: false, role: Viewer,
        "List the model catalogue: [{alias, actual, provider, keySet, context_length, price: {input, cached_input, output}}] (keySet: its provider's calls carry an API key, never shown), prices in US dollars per million tokens, spelt as addModel takes them." PAGE;
    ProjectConfig "project/config" (project_config::ProjectConfigParams) project_config::config,
        needs_init: true, long_running: false, role: Viewer,
        "The project's own settings and those in effect: where accepted commands run and their sandbox's limits; with params, admins set them." &[
            ("commands", "string? — \"client\" or \"server\": where accepted sh/env commands run (admins)"),
            ("sandbox", "object? — {cpuSecs, wallSecs, memoryMb, processes, fileMb, openFiles, outputBytes, ports, unixSockets, env}, each within the server's maxima (admins)"),
        ];
    UsageReport "usage/report" (usage::ReportParams) usage::report,
        needs_init: false, long_running: false, role: Viewer,
        "What model calls used and cost (cost in US dollars, cost_micros exact), summed by one key over a UTC time range: a person's own runs' calls, or (admins) everyone's." &[
            ("by", "string — \"person\", \"project\", \"model\", \"purpose\" or \"day\""),
            ("from", "string? — from this UTC time on: YYYY-MM-DD or YYYY-MM-DD HH:MM:SS"),
            ("to", "string? — before this UTC time"),
            ("person", "string? — admins: one person's calls (\"\": the runs no person started)"),
        ];
    UsageCaps "usage/caps" (usage::CapsParams) usage::caps,
        needs_init: true, long_running: false, role: Viewer,
        "The spend caps a person's calls count against in this project (a run's, theirs, the project's, the server's), each with what was spent in its UTC day or month, what is left and when it resets: one's own, or (admins) anyone's." &[
            ("run", "string? — with this run's own caps (counted for the person who started it)"),
            ("person", "string? — admins: another person (\"\": the operator)"),
        ];
    WebhooksAdd "webhooks/add" (webhooks::AddParams) webhooks::add,
        needs_init: true, long_running: false, role: Admin,
        "Add a webhook to the project: the events POSTed to a URL, signed (X-Rummy-Signature); answers {id, url, events, format, createdBy, created, secret}, the secret shown this once." &[
            ("url", "string — http or https URL, no user or password in it"),
            ("events", "[string] — approval.pending, run.finished, run.failed, cap.warning, cap.reached"),
            ("format", "string? — \"json\" (default) or \"slack\" ({\"text\": …})"),
            ("secret", "string? — the signing secret, 16 to 256 characters (default: one drawn)"),
        ];
    WebhooksList "webhooks/list" (NoParams) webhooks::list,
        needs_init: true, long_running: false, role: Admin,
        "The project's webhooks: {webhooks: [{id, url, events, format, createdBy, created}]}, never a secret." &[];
    WebhooksRemove "webhooks/remove" (webhooks::RemoveParams) webhooks::remove,
        needs_init: true, long_running: false, role: Admin,
        "Remove a webhook of the project, its pending deliveries and its log." &[("id", "string — the webhook's id")];
    WebhooksDeliveries "webhooks/deliveries" (webhooks::DeliveriesParams) webhooks::deliveries,
        needs_init: true, long_running: false, role: Admin,
        "A webhook's latest deliveries, newest first: {deliveries: [{id, event, run, state: pending|delivered|failed, created, next?, attempts: [{attempt, at, atMs, durationMs, status?, error?}]}]}." &[
            ("id", "string — the webhook's id"),
            ("limit", "integer? — 1 to 200, default 20"),
        ];
    GetMcpServers "getMcpServers" (NoParams) mcp::list,
        needs_init: true, long_running: false, role: Viewer,
        "List the MCP servers, whether this project uses them, and their tools." &[];
    AddModel "addModel" (models::AddModelParams) models::add,
        needs_init: false, long_running: false, role: Admin,
        "Add or update a model alias." &[
            ("alias", "string — name clients use"),
            ("actual", "string — provider-prefixed model id"),
            ("contextLength", "number? — context window in tokens"),
            ("price", "{input, cached_input?, output}? — US dollars per million tokens (cached_input: input's when absent), as getModels shows it; applies to calls recorded after it"),
            ("provider", "string? — openai (OpenAI-compatible), ollama, openrouter or xai; with it, actual is the model's name in the provider's terms (its prefix is added)"),
            ("baseUrl", "string? — with provider: its http(s) base URL, in effect at once and kept"),
            ("apiKey", "string? — with provider: its API key, in effect at once and kept; never answered back (getModels says keySet)"),
        ];
    RemoveModel "removeModel" (models::RemoveModelParams) models::remove,
        needs_init: false, long_running: false, role: Admin,
        "Remove a model alias." &[("alias", "string")];
    ModelTest "model/test" (model_test::TestParams) model_test::test,
        needs_init: false, long_running: false, role: Admin,
        "One call to a catalogue model (no retry, outside any run's usage): {ok, reply?, error?, latencyMs, promptTokens, completionTokens}; a provider's refusal is ok: false with its words." &[("alias", "string — the model's alias")];
    ProjectsFolders "projects/folders" (NoParams) folders::folders,
        needs_init: false, long_running: false, role: Admin,
        "The folders a project may be created at: {anyFolder, projectsDirs, folders: [{name, path}]}, the directories directly under each RUMMY_PROJECTS_DIR directory that are not, hold or lie in a project's root; anyFolder (no projects directory, a server on loopback): any existing directory may be named." &[];
    ProjectsCreate "projects/create" (folders::CreateParams) folders::create,
        needs_init: false, long_running: false, role: Admin,
        "Create a project at an existing folder, by init's rules (inside a projects directory when set, symlinks resolved, no overlapping roots): {name, projectRoot}; a client then opens it with init." &[
            ("name", "string — the project's name"),
            ("path", "string — absolute path of an existing directory"),
        ];
    Get "get" (entries::GetParams) entries::get,
        needs_init: true, long_running: false, role: Member,
        "Promote matching entries to full fidelity; optionally pin a file constraint." &[
            ("path", "string — path, URI or pattern"),
            ("run", "string? — run alias (required unless persist)"),
            ("persist", "boolean? — save a project file constraint"),
            ("readonly", "boolean? — with persist: read-only"),
        ];
    Store "store" (entries::StoreParams) entries::store,
        needs_init: true, long_running: false, role: Member,
        "Archive matching entries; manage file constraints." &[
            ("path", "string — path, URI or pattern"),
            ("run", "string? — run alias (required unless persist or clear)"),
            ("persist", "boolean? — save a project file constraint"),
            ("ignore", "boolean? — with persist: hide the file"),
            ("clear", "boolean? — delete the constraint"),
        ];
    GetEntries "getEntries" (entries::GetEntriesParams) entries::list,
        needs_init: true, long_running: false, role: Viewer,
        "List a run's entries whose path matches a pattern." &[
            ("pattern", "string? — path pattern (default *)"),
            ("body", "string? — body search pattern"),
            ("run", "string? — run alias (default: the newest run)"),
            ("limit", "number?"),
            ("offset", "number?"),
        ];
    StartRun "startRun" (runs::StartRunParams) runs::start,
        needs_init: true, long_running: false, role: Member,
        "Create an idle run." &[
            ("model", "string — model alias"),
            ("temperature", "number? — 0..2"),
            ("persona", "string? — persona text"),
            ("contextLimit", "integer? — ≥ 1024"),
        ];
    Ask "ask" (loops::AskParams) loops::ask,
        needs_init: true, long_running: true, role: Member,
        "Run a loop in ask mode (no file changes)." RUN_FLAGS;
    Act "act" (loops::AskParams) loops::act,
        needs_init: true, long_running: true, role: Member,
        "Run a loop in act mode." RUN_FLAGS;
    RunResolve "run/resolve" (loops::ResolveParams) loops::resolve,
        needs_init: true, long_running: true, role: Member,
        "Accept, reject or fail a pending proposal." &[
            ("run", "string — run alias"),
            ("resolution", "object — {path, action: accept|reject|error, output?, always?}: always (an accepted command) makes the resolver's rule allowing such commands always, true for the default pattern (program and first argument, then *), or a pattern"),
        ];
    RulesList "rules/list" (rules::ListParams) rules::list,
        needs_init: false, long_running: false, role: Viewer,
        "Command rules (allow always) of a project: one's own, or (admins) everyone's: {rules: [{id, project, person, pattern, madeBy, madeAt}]}." &[
            ("project", "string? — a project by name (default: the bound one)"),
        ];
    RulesRevoke "rules/revoke" (rules::RevokeParams) rules::revoke,
        needs_init: false, long_running: false, role: Member,
        "Revoke a command rule: one's own, or (admins) anyone's: {revoked: id}." &[
            ("id", "integer — the rule's id"),
        ];
    RunAbort "run/abort" (runs::RunParams) runs::abort,
        needs_init: true, long_running: false, role: TO_ABORT,
        "Abort a run: its running loop stopped, every loop queued on it dropped (a loop paused at a spend cap too), its pending proposals withdrawn." &[("run", "string")];
    RunResume "run/resume" (runs::RunParams) resume::resume,
        needs_init: true, long_running: false, role: Admin,
        "Take up again a run's loop paused at a spend cap (the server does once its caps no longer stand); while a cap stands, -32011 names it and the loop stays paused." &[("run", "string")];
    RunCancel "run/cancel" (cancel::CancelParams) cancel::cancel,
        needs_init: true, long_running: false, role: Viewer,
        "Cancel your own loops of a run (running, queued, or waiting on their proposals, which are withdrawn); others' go on: {run, cancelled: [loop], withdrawn: [path]}." &[
            ("run", "string"),
            ("loop", "integer? — the loop's number (getRun's loops); another's needs the role run/abort needs"),
        ];
    RunChanges "run/changes" (changes::ChangesParams) changes::changes,
        needs_init: true, long_running: false, role: Viewer,
        "The files a run's accepted proposals changed, each combined from its content before the first change to after the last: {run, loop, files: [{path, status: added|modified|deleted, added, removed, diff, turns, by}], loops: [the loops that changed a file]}." &[
            ("run", "string"),
            ("loop", "integer? — one loop's changes (its number, getRun's loops); none: the whole run's"),
        ];
    RunRevert "run/revert" (changes::RevertParams) changes::revert,
        needs_init: true, long_running: false, role: Member,
        "Propose putting a file the run changed back as it was before the run (or the loop) changed it: an edit (set), or the removal (rm) of a file it added, pending like any proposal (run/proposal, run/action revert) until run/resolve; refused (-32004) unless the run is idle: {run, path, type}." &[
            ("run", "string"),
            ("path", "string — the file, as run/changes names it"),
            ("loop", "integer? — undo that loop's change (its number); none: the whole run's"),
        ];
    RunRename "run/rename" (runs::RenameParams) runs::rename,
        needs_init: true, long_running: false, role: Member,
        "Rename a run and/or title it: a person's title, which its prompt's and its session notes' no longer replace." &[
            ("run", "string"),
            ("name", "string? — [A-Za-z0-9_]+ (needed without title)"),
            ("title", "string? — one line of at most 80 characters (default: the new name)"),
        ];
    RunInject "run/inject" (loops::InjectParams) loops::inject,
        needs_init: true, long_running: true, role: Member,
        "Add a message to a run: the running loop sees it next turn, else a new loop runs." &[
            ("run", "string"),
            ("message", "string"),
        ];
    RunMcp "run/mcp" (mcp::AttachParams) mcp::attach,
        needs_init: true, long_running: false, role: Member,
        "Attach MCP servers to a run while this connection lasts (RUMMY_CLIENT_MCP says which the server takes); replaces this connection's earlier ones." &[
            ("run", "string"),
            ("servers", "[{name, command?, args?, env?, url?, headers?}] — [] detaches"),
        ];
    RunConfig "run/config" (runs::RunConfigParams) runs::configure,
        needs_init: true, long_running: false, role: Member,
        "Change a run's stored settings." &[
            ("run", "string"),
            ("temperature", "number?"),
            ("persona", "string?"),
            ("contextLimit", "integer?"),
            ("model", "string?"),
        ];
    GetRuns "getRuns" (Page) runs::list,
        needs_init: true, long_running: false, role: Viewer,
        "List the project's runs, newest first, each with its cost so far (cost, cost_micros)." PAGE;
    GetRun "getRun" (runs::RunParams) runs::detail,
        needs_init: true, long_running: false, role: Viewer,
        "One run in detail; a run paused at a spend cap (402) with `paused`: {error, cap}, the cap its loop waits on." &[("run", "string")];
    RunFork "run/fork" (fork::ForkParams) fork::fork,
        needs_init: true, long_running: false, role: Member,
        "Copy a run (its settings and entries) into a new run of the project, to continue apart: {run, forkedFrom}." &[
            ("run", "string — run alias"),
        ];
    RunReplay "run/replay" (replay::ReplayParams) replay::replay,
        needs_init: true, long_running: false, role: Viewer,
        "A run's notifications after seq `since`, in order, as sent: {notifications: [{method, params}]}. \
         Call it after init and none is missed; one may also arrive live, so keep one per seq. \
         -32009: some are no longer kept (data: {resync, latest}), call getRun and follow from its seq." &[
            ("run", "string — run alias"),
            ("since", "integer — the latest seq of the run received, 0 for none"),
        ];
    RunWatch "run/watch" (presence::WatchParams) presence::watch,
        needs_init: true, long_running: false, role: Viewer,
        "Be in a run's presence (out of any other run) until run/unwatch, another run/watch or the connection's close; every client of the run is told (run/presence): {run, present}. With deltas, the connection is sent the model's words as they come (run/delta) until then." &[
            ("run", "string — run alias"),
            ("deltas", "boolean? — send run/delta, default false"),
        ];
    RunUnwatch "run/unwatch" (presence::UnwatchParams) presence::unwatch,
        needs_init: true, long_running: false, role: Viewer,
        "Leave a run's presence: {run, left}." &[("run", "string — run alias")];
    Inbox "inbox" (inbox::InboxParams) inbox::list,
        needs_init: false, long_running: false, role: Viewer,
        "What waits for the caller across their projects, newest first: {items: [{id, project, run, title, why: approval|capped|failed|finished, status, since}], next}; the connection is then told of changes (inbox/changed)." &[
            ("limit", "integer? — 1..200, default 50"),
            ("before", "string? — the next of the page before"),
        ];
    InboxDismiss "inbox/dismiss" (inbox::DismissParams) inbox::dismiss,
        needs_init: false, long_running: false, role: Viewer,
        "Take an item out of the caller's inbox until its run has something new: {dismissed}." &[
            ("id", "string — an item's id"),
        ];
    SkillAdd "skill/add" (skills::SkillParams) skills::add,
        needs_init: true, long_running: false, role: Member,
        "Load $RUMMY_HOME/skills/<name>.md into a run." &[("run", "string"), ("name", "string")];
    SkillRemove "skill/remove" (skills::SkillParams) skills::remove,
        needs_init: true, long_running: false, role: Member,
        "Remove a skill from a run." &[("run", "string"), ("name", "string")];
    GetSkills "getSkills" (skills::RunOnlyParams) skills::of_run,
        needs_init: true, long_running: false, role: Viewer,
        "The skills loaded in a run." &[("run", "string")];
    ListSkills "listSkills" (NoParams) skills::list_skills,
        needs_init: true, long_running: false, role: Viewer,
        "The skill files available." &[];
    PersonaSet "persona/set" (skills::PersonaParams) skills::set_persona,
        needs_init: true, long_running: false, role: Member,
        "Set a run's persona from text or $RUMMY_HOME/personas/<name>.md." &[
            ("run", "string"),
            ("name", "string?"),
            ("text", "string?"),
        ];
    ListPersonas "listPersonas" (NoParams) skills::list_personas,
        needs_init: true, long_running: false, role: Viewer,
        "The persona files available." &[];
}

impl Method {
    /// Looks a method up by its wire name; tools and plugins' methods come from the
    /// registry (a declared method first, then a tool, then a plugin's method).
    pub(crate) fn from_name(name: &str, tools: &ToolCatalogue<'_>) -> Option<Method> {
        if name == "rpc/discover" {
            return Some(Method::Discover);
        }
        Method::NAMED
            .iter()
            .copied()
            .find(|method| method.name() == name)
            .or_else(|| tools.methods().find(|tool| *tool == name).map(Method::Tool))
            .or_else(|| {
                tools
                    .tools
                    .method(name)
                    .map(|method| Method::Plugin(PluginSpec::of(method)))
            })
    }
}

/// `discover`: the catalogue generated from the method table and the tool registry.
async fn discover(context: CallContext, _: NoParams) -> Result<Reply, AppError> {
    Reply::of(catalogue(&ToolCatalogue::of(&context.agent)))
}

/// Server → client notifications, for `discover`.
const NOTIFICATIONS: &[(&str, &str)] = &[
    (
        "run/state",
        "A turn finished: history, unknowns, proposals, telemetry.",
    ),
    ("run/progress", "A turn is thinking or processing."),
    ("run/proposal", "A new proposal awaits resolution."),
    (
        "run/output",
        "Output of an accepted command running on the server, as it comes: {run, path, \
         text | skipped}, then {run, path, done: true, status, exit?}. Not numbered nor kept \
         for replay: the command's entry keeps it.",
    ),
    (
        "usage/capReached",
        "A model call was refused, a spend cap being reached: {scope, subject, period, unit, \
         limit, spent, left, resets}. Sent to the project of the call.",
    ),
    (
        "usage/capWarning",
        "Spending passed the warning share (RUMMY_CAP_WARNING_PERCENT, 80 % by default) of a spend cap, the first time in its period: {scope, subject, \
         period, unit, limit, spent, left, resets}.",
    ),
    (
        "run/delta",
        "The model's words as they come, to a connection that watches the run with deltas: \
         {run, loop, turn, text}, text following what the connection was sent of that turn \
         (from its start). At most every 75 ms, coalesced. Not numbered nor kept for replay: \
         run/state brings the whole reply.",
    ),
    (
        "run/presence",
        "Who is in a run now, after each change: {run, present: [{person, client: {name, \
         kind}, driving, since}]}. Not numbered nor kept for replay: getRun says the current \
         presence.",
    ),
    (
        "inbox/changed",
        "What waits for the person may have changed: {project, run} or {dismissed}. Sent to \
         the person's connections that called inbox, on every instance.",
    ),
    ("ui/render", "Display text from a plugin: {text, append}."),
    (
        "ui/notify",
        "A toast message from a plugin: {text, level: info|warn|error}.",
    ),
];

/// The registry's tools and plugins' methods as RPC methods.
pub(crate) struct ToolCatalogue<'a> {
    pub tools: &'a Plugins,
    /// A search backend is configured (otherwise `search` is no method).
    pub search_available: bool,
}

impl<'a> ToolCatalogue<'a> {
    /// The catalogue of the agent's tool registry.
    pub(crate) fn of(agent: &'a AgentContext) -> ToolCatalogue<'a> {
        ToolCatalogue {
            tools: &agent.plugins,
            search_available: agent.settings.search_available(),
        }
    }

    /// The tools a client may call by name: those without a method of their own that the
    /// server can offer at all (reasoning excluded; search only with a backend; no
    /// `<delegate>`, whose child runs from a loop's reply only).
    fn methods(&self) -> impl Iterator<Item = &'static str> + '_ {
        let policy = ToolPolicy {
            search_available: self.search_available,
            subagents: false,
            ..ToolPolicy::act()
        };
        self.tools
            .names()
            .filter(|name| !Method::NAMED.iter().any(|method| method.name() == *name))
            .filter(move |name| {
                self.tools.get(name).is_some_and(|tool| {
                    tool.kind() != ToolKind::Reasoning
                        && tool.availability(&policy) != Availability::Excluded
                })
            })
    }
}

/// The `discover` result, generated from the table and the tool registry.
pub(crate) fn catalogue(tools: &ToolCatalogue<'_>) -> Value {
    let mut methods = Map::new();
    let plugin_methods = tools
        .tools
        .methods()
        .map(|method| Method::Plugin(PluginSpec::of(method)));
    let all = Method::NAMED
        .iter()
        .copied()
        .chain(tools.methods().map(Method::Tool))
        .chain(plugin_methods);
    for method in all {
        let spec = method.spec();
        if methods.contains_key(method.name()) {
            continue;
        }
        let names: Vec<&str> = match spec.fields {
            Some(fields) => fields().to_vec(),
            None => spec.params.iter().map(|(name, _)| *name).collect(),
        };
        let params: Map<String, Value> = names
            .iter()
            .map(|name| {
                let text = spec
                    .params
                    .iter()
                    .find(|(described, _)| described == name)
                    .map_or("", |(_, text)| text);
                ((*name).to_string(), Value::from(text))
            })
            .collect();
        methods.insert(
            method.name().to_string(),
            json!({
                "description": spec.description,
                "params": params,
                "role": spec.role.to_string(),
            }),
        );
    }
    let notifications: Map<String, Value> = NOTIFICATIONS
        .iter()
        .map(|(name, text)| ((*name).to_string(), json!({"description": text})))
        .collect();
    json!({"methods": methods, "notifications": notifications})
}

#[cfg(test)]
mod tests {
    use super::*;

    fn registry() -> Plugins {
        Plugins::bundled(crate::plugins::tool::ToolSettings::default())
    }

    #[test]
    fn every_method_round_trips_through_its_name() {
        let registry = registry();
        let tools = ToolCatalogue {
            tools: &registry,
            search_available: false,
        };
        for &method in Method::NAMED {
            assert_eq!(Method::from_name(method.name(), &tools), Some(method));
        }
        for tool in [
            "set", "known", "unknown", "env", "sh", "rm", "cp", "mv", "ask_user",
        ] {
            assert_eq!(Method::from_name(tool, &tools), Some(Method::Tool(tool)));
        }
        assert_eq!(Method::from_name("get", &tools), Some(Method::Get));
        assert_eq!(
            Method::from_name("think", &tools),
            None,
            "reasoning is not callable"
        );
        assert_eq!(
            Method::from_name("rpc/discover", &tools),
            Some(Method::Discover)
        );
        assert_eq!(Method::from_name("nope", &tools), None);
        assert_eq!(
            Method::from_name("search", &tools),
            None,
            "no backend, no search"
        );
        let with_search = ToolCatalogue {
            tools: &registry,
            search_available: true,
        };
        assert_eq!(
            Method::from_name("search", &with_search),
            Some(Method::Tool("search"))
        );
    }

    #[test]
    fn catalogue_lists_methods_tools_and_notifications() {
        let registry = registry();
        let catalogue = catalogue(&ToolCatalogue {
            tools: &registry,
            search_available: false,
        });
        for name in [
            "ask",
            "act",
            "run/resolve",
            "get",
            "store",
            "getEntries",
            "addModel",
            "rm",
        ] {
            assert!(catalogue["methods"].get(name).is_some(), "{name} missing");
        }
        assert!(catalogue["methods"].get("rpc/discover").is_none());
        assert!(catalogue["notifications"].get("run/state").is_some());
        assert_eq!(catalogue["methods"]["ping"]["params"], json!({}));
    }

    #[test]
    fn every_param_of_every_method_is_described_and_every_description_is_a_param() {
        let methods = Method::NAMED.iter().copied().chain([Method::Tool("set")]);
        for method in methods {
            let spec = method.spec();
            let mut fields: Vec<&str> = spec.fields.map(|fields| fields().to_vec()).unwrap();
            let mut described: Vec<&str> = spec.params.iter().map(|(name, _)| *name).collect();
            fields.sort_unstable();
            described.sort_unstable();
            assert_eq!(fields, described, "{}", method.name());
        }
    }

    /// The reference's; `getProjects`, which a client calls to choose what to `init`; and
    /// the methods about the caller or the server, not a project (`getPeople`,
    /// `usage/report`, the catalogue, a person's own keys, command rules and inbox).
    #[test]
    fn only_the_reference_pre_init_methods_and_those_of_no_project_skip_init() {
        let open: Vec<&str> = Method::NAMED
            .iter()
            .copied()
            .filter(|method| !method.spec().needs_init)
            .map(Method::name)
            .collect();
        assert_eq!(
            open,
            [
                "ping",
                "discover",
                "init",
                "getProjects",
                "getPeople",
                "people/add",
                "people/update",
                "people/remove",
                "people/token",
                "caps/set",
                "caps/clear",
                "caps/list",
                "mcp/add",
                "mcp/remove",
                "mcp/restart",
                "admin/changes",
                "tokens/mint",
                "tokens/list",
                "tokens/revoke",
                "keys/set",
                "keys/list",
                "keys/remove",
                "hostCredentials/set",
                "hostCredentials/list",
                "hostCredentials/remove",
                "mcpCredentials/set",
                "mcpCredentials/list",
                "mcpCredentials/remove",
                "getModels",
                "usage/report",
                "addModel",
                "removeModel",
                "model/test",
                "projects/folders",
                "projects/create",
                "rules/list",
                "rules/revoke",
                "inbox",
                "inbox/dismiss"
            ]
        );
    }
}
