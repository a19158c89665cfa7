//! The method table: every method the server answers, its parameters for `discover`,
//! whether it needs `init`, and whether it is long-running (exempt from the RPC timeout).

use serde_json::{json, Map, Value};

use crate::agent::AgentContext;
use crate::plugins::policy::ToolPolicy;
use crate::plugins::tool::{Availability, ToolKind};
use crate::plugins::Plugins;

/// Every RPC method, by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Method {
    /// `ping`
    Ping,
    /// `discover` (alias `rpc/discover`)
    Discover,
    /// `init`
    Init,
    /// `getModels`
    GetModels,
    /// `addModel`
    AddModel,
    /// `removeModel`
    RemoveModel,
    /// `get`
    Get,
    /// `store`
    Store,
    /// `getEntries`
    GetEntries,
    /// `startRun`
    StartRun,
    /// `ask`
    Ask,
    /// `act`
    Act,
    /// `run/resolve`
    RunResolve,
    /// `run/abort`
    RunAbort,
    /// `run/rename`
    RunRename,
    /// `run/inject`
    RunInject,
    /// `run/config`
    RunConfig,
    /// `getRuns`
    GetRuns,
    /// `getRun`
    GetRun,
    /// `skill/add`
    SkillAdd,
    /// `skill/remove`
    SkillRemove,
    /// `getSkills`
    GetSkills,
    /// `listSkills`
    ListSkills,
    /// `persona/set`
    PersonaSet,
    /// `listPersonas`
    ListPersonas,
    /// A model tool called directly by a client (`set`, `rm`, ...): every tool of the
    /// registry that has no method of its own and is not reasoning.
    Tool(&'static str),
}

/// What `discover` says of one method.
pub struct MethodSpec {
    /// One line on what the method does.
    pub description: &'static str,
    /// Parameter name → informal type and meaning.
    pub params: &'static [(&'static str, &'static str)],
    /// The connection must have called `init`.
    pub needs_init: bool,
    /// Runs until its loop ends; exempt from the RPC timeout.
    pub long_running: bool,
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
];

impl Method {
    /// Every explicitly registered method (tools excluded), in catalogue order.
    pub const NAMED: [Method; 25] = [
        Method::Ping,
        Method::Discover,
        Method::Init,
        Method::GetModels,
        Method::AddModel,
        Method::RemoveModel,
        Method::Get,
        Method::Store,
        Method::GetEntries,
        Method::StartRun,
        Method::Ask,
        Method::Act,
        Method::RunResolve,
        Method::RunAbort,
        Method::RunRename,
        Method::RunInject,
        Method::RunConfig,
        Method::GetRuns,
        Method::GetRun,
        Method::SkillAdd,
        Method::SkillRemove,
        Method::GetSkills,
        Method::ListSkills,
        Method::PersonaSet,
        Method::ListPersonas,
    ];

    /// Looks a method up by its wire name; tools come from the registry.
    pub fn from_name(name: &str, tools: &ToolCatalogue<'_>) -> Option<Method> {
        if name == "rpc/discover" {
            return Some(Method::Discover);
        }
        Method::NAMED
            .into_iter()
            .find(|method| method.name() == name)
            .or_else(|| tools.methods().find(|tool| *tool == name).map(Method::Tool))
    }

    /// The wire name.
    pub fn name(self) -> &'static str {
        match self {
            Method::Ping => "ping",
            Method::Discover => "discover",
            Method::Init => "init",
            Method::GetModels => "getModels",
            Method::AddModel => "addModel",
            Method::RemoveModel => "removeModel",
            Method::Get => "get",
            Method::Store => "store",
            Method::GetEntries => "getEntries",
            Method::StartRun => "startRun",
            Method::Ask => "ask",
            Method::Act => "act",
            Method::RunResolve => "run/resolve",
            Method::RunAbort => "run/abort",
            Method::RunRename => "run/rename",
            Method::RunInject => "run/inject",
            Method::RunConfig => "run/config",
            Method::GetRuns => "getRuns",
            Method::GetRun => "getRun",
            Method::SkillAdd => "skill/add",
            Method::SkillRemove => "skill/remove",
            Method::GetSkills => "getSkills",
            Method::ListSkills => "listSkills",
            Method::PersonaSet => "persona/set",
            Method::ListPersonas => "listPersonas",
            Method::Tool(tool) => tool,
        }
    }

    /// The method's entry in the table.
    pub fn spec(self) -> MethodSpec {
        let (description, params): (&str, &[(&str, &str)]) = match self {
            Method::Ping => ("Liveness check; answers {}.", &[]),
            Method::Discover => ("This catalogue of methods and notifications.", &[]),
            Method::Init => (
                "Bind this connection to a project (created or updated by name).",
                &[
                    ("name", "string — project identity"),
                    ("projectRoot", "string — absolute path of the project tree"),
                    ("configPath", "string? — project configuration file"),
                ],
            ),
            Method::GetModels => (
                "List the model catalogue.",
                &[("limit", "number?"), ("offset", "number?")],
            ),
            Method::AddModel => (
                "Add or update a model alias.",
                &[
                    ("alias", "string — name clients use"),
                    ("actual", "string — provider-prefixed model id"),
                    ("contextLength", "number? — context window in tokens"),
                ],
            ),
            Method::RemoveModel => ("Remove a model alias.", &[("alias", "string")]),
            Method::Get => (
                "Promote matching entries to full fidelity; optionally pin a file constraint.",
                &[
                    ("path", "string — path, URI or pattern"),
                    ("run", "string? — run alias (required unless persist)"),
                    ("persist", "boolean? — save a project file constraint"),
                    ("readonly", "boolean? — with persist: read-only"),
                ],
            ),
            Method::Store => (
                "Archive matching entries; manage file constraints.",
                &[
                    ("path", "string — path, URI or pattern"),
                    (
                        "run",
                        "string? — run alias (required unless persist or clear)",
                    ),
                    ("persist", "boolean? — save a project file constraint"),
                    ("ignore", "boolean? — with persist: hide the file"),
                    ("clear", "boolean? — delete the constraint"),
                ],
            ),
            Method::GetEntries => (
                "List a run's entries whose path matches a pattern.",
                &[
                    ("pattern", "string? — path pattern (default *)"),
                    ("body", "string? — body search pattern"),
                    ("run", "string? — run alias (default: the newest run)"),
                    ("limit", "number?"),
                    ("offset", "number?"),
                ],
            ),
            Method::StartRun => (
                "Create an idle run.",
                &[
                    ("model", "string — model alias"),
                    ("temperature", "number? — 0..2"),
                    ("persona", "string? — persona text"),
                    ("contextLimit", "integer? — ≥ 1024"),
                ],
            ),
            Method::Ask => ("Run a loop in ask mode (no file changes).", RUN_FLAGS),
            Method::Act => ("Run a loop in act mode.", RUN_FLAGS),
            Method::RunResolve => (
                "Accept, reject or fail a pending proposal.",
                &[
                    ("run", "string — run alias"),
                    (
                        "resolution",
                        "object — {path, action: accept|reject|error, output?}",
                    ),
                ],
            ),
            Method::RunAbort => ("Abort a run's current loop.", &[("run", "string")]),
            Method::RunRename => (
                "Rename a run.",
                &[("run", "string"), ("name", "string — [A-Za-z0-9_]+")],
            ),
            Method::RunInject => (
                "Add a message to a run: the running loop sees it next turn, else a new loop runs.",
                &[("run", "string"), ("message", "string")],
            ),
            Method::RunConfig => (
                "Change a run's stored settings.",
                &[
                    ("run", "string"),
                    ("temperature", "number?"),
                    ("persona", "string?"),
                    ("contextLimit", "integer?"),
                    ("model", "string?"),
                ],
            ),
            Method::GetRuns => (
                "List the project's runs, newest first.",
                &[("limit", "number?"), ("offset", "number?")],
            ),
            Method::GetRun => ("One run in detail.", &[("run", "string")]),
            Method::SkillAdd => (
                "Load $RUMMY_HOME/skills/<name>.md into a run.",
                &[("run", "string"), ("name", "string")],
            ),
            Method::SkillRemove => (
                "Remove a skill from a run.",
                &[("run", "string"), ("name", "string")],
            ),
            Method::GetSkills => ("The skills loaded in a run.", &[("run", "string")]),
            Method::ListSkills => ("The skill files available.", &[]),
            Method::PersonaSet => (
                "Set a run's persona from text or $RUMMY_HOME/personas/<name>.md.",
                &[("run", "string"), ("name", "string?"), ("text", "string?")],
            ),
            Method::ListPersonas => ("The persona files available.", &[]),
            Method::Tool(_) => ("Dispatch a model tool on a run.", TOOL_PARAMS),
        };
        let needs_init = !matches!(
            self,
            Method::Ping
                | Method::Discover
                | Method::Init
                | Method::GetModels
                | Method::AddModel
                | Method::RemoveModel
        );
        let long_running = matches!(
            self,
            Method::Ask | Method::Act | Method::RunResolve | Method::RunInject
        );
        MethodSpec {
            description,
            params,
            needs_init,
            long_running,
        }
    }
}

/// Server → client notifications, for `discover`.
const NOTIFICATIONS: &[(&str, &str)] = &[
    (
        "run/state",
        "A turn finished: history, unknowns, proposals, telemetry.",
    ),
    ("run/progress", "A turn is thinking or processing."),
    ("run/proposal", "A new proposal awaits resolution."),
    ("ui/render", "Display text (reserved)."),
    ("ui/notify", "A toast message (reserved)."),
];

/// The registry's tools as RPC methods.
pub struct ToolCatalogue<'a> {
    /// The tool registry.
    pub tools: &'a Plugins,
    /// A search backend is configured (otherwise `search` is no method).
    pub search_available: bool,
}

impl<'a> ToolCatalogue<'a> {
    /// The catalogue of the agent's tool registry.
    pub fn of(agent: &'a AgentContext) -> ToolCatalogue<'a> {
        ToolCatalogue {
            tools: &agent.plugins,
            search_available: agent.settings.search_available(),
        }
    }

    /// The tools a client may call by name: those without a method of their own that the
    /// server can offer at all (reasoning excluded; search only with a backend).
    fn methods(&self) -> impl Iterator<Item = &'static str> + '_ {
        let policy = ToolPolicy {
            search_available: self.search_available,
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
pub fn catalogue(tools: &ToolCatalogue<'_>) -> Value {
    let mut methods = Map::new();
    let all = Method::NAMED
        .into_iter()
        .chain(tools.methods().map(Method::Tool));
    for method in all {
        let spec = method.spec();
        let params: Map<String, Value> = spec
            .params
            .iter()
            .map(|(name, text)| ((*name).to_string(), Value::from(*text)))
            .collect();
        methods.insert(
            method.name().to_string(),
            json!({"description": spec.description, "params": params}),
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
        for method in Method::NAMED {
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
    fn only_the_reference_pre_init_methods_skip_init() {
        let open: Vec<&str> = Method::NAMED
            .into_iter()
            .filter(|method| !method.spec().needs_init)
            .map(Method::name)
            .collect();
        assert_eq!(
            open,
            [
                "ping",
                "discover",
                "init",
                "getModels",
                "addModel",
                "removeModel"
            ]
        );
    }
}
