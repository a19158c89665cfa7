//! `Plugins`: the registry of everything plugins add, built once and passed down (a cheap
//! `Arc` clone, no global). Plugins are registered one by one (`Plugins::plugin`, in
//! `plugin.rs`), the bundled ones too (`bundled.rs`), each unless the configuration
//! disables it. It answers which tags the parser recognises (`tags`), what the model may
//! use (`active_tools`, `docs`), how an entry is projected at its fidelity (`project`),
//! which tool handles a scheme, how the packet is assembled (`assembly`), who observes
//! (`emit`) and filters (`filter`) at the hook points, and which RPC methods plugins add.

use std::borrow::Cow;
use std::sync::Arc;

use crate::budget::TokenMath;
use crate::context::view::EntryView;
use crate::context::Projector;
use crate::db::enums::Fidelity;
use crate::db::ids::EntryId;
use crate::db::models::SchemeRow;
use crate::db::paths::scheme_of;
use crate::parser::TagSet;
use crate::plugins::assembly::{Assembly, ToolDocs};
use crate::plugins::clients::Clients;
use crate::plugins::engine::live::LiveTools;
use crate::plugins::events::{Event, EventEntry, Events, Hook};
use crate::plugins::filters::{FilterHook, Filters};
use crate::plugins::method::PluginMethod;
use crate::plugins::policy::ToolPolicy;
use crate::plugins::preparation::{Preparations, PreparingTurn};
use crate::plugins::process::link::Link;
use crate::plugins::reflection::{Reflecting, ReflectionServices, Reflections};
use crate::plugins::tool::{Availability, Tool, ToolSettings};

/// Longest summary shown for an entry without a summary attribute, in characters (the
/// same cut the store uses for its summary token count).
const SUMMARY_PREFIX_CHARS: usize = 80;

/// The offered tools' docs may take at most one part in this many of a known window; past
/// it the optional tools are left out, so a small window keeps its room for the work.
const DOC_SHARE: u64 = 4;

/// The registered plugins' tools (in display order: for the bundled ones gather → reason →
/// act → communicate), sections, observers, filters and methods.
#[derive(Clone)]
pub struct Plugins {
    pub(in crate::plugins) inner: Arc<Registry>,
}

#[derive(Clone)]
pub(in crate::plugins) struct Registry {
    tools: Vec<Arc<dyn Tool>>,
    /// One tag per tool, from its declaration.
    tags: TagSet,
    /// The tools plugins add while the server runs, after `tools`; one of them shadows a
    /// registered tool of its name.
    pub(in crate::plugins) live: Vec<LiveTools>,
    pub(in crate::plugins) settings: ToolSettings,
    pub(in crate::plugins) assembly: Assembly,
    pub(in crate::plugins) events: Events,
    pub(in crate::plugins) filters: Filters,
    pub(in crate::plugins) preparations: Preparations,
    pub(in crate::plugins) reflections: Reflections,
    methods: Vec<Arc<dyn PluginMethod>>,
    /// The plugin processes registered, by their place among those declared.
    pub(in crate::plugins) processes: Vec<(usize, Arc<Link>)>,
    pub(in crate::plugins) clients: Clients,
    /// The plugins registered, in order.
    pub(in crate::plugins) registered: Vec<&'static str>,
    /// The plugins not registered because the configuration disables them.
    pub(in crate::plugins) skipped: Vec<&'static str>,
    /// The plugins the configuration turns off.
    pub(in crate::plugins) disabled: Arc<[String]>,
}

impl Registry {
    pub(in crate::plugins) fn add_tool(&mut self, tool: Arc<dyn Tool>) {
        match self
            .tools
            .iter_mut()
            .find(|registered| registered.name() == tool.name())
        {
            Some(registered) => *registered = tool,
            None => self.tools.push(tool),
        }
        self.tags = self
            .tools
            .iter()
            .map(|tool| (tool.name(), tool.tag()))
            .collect();
    }

    pub(in crate::plugins) fn has_tool(&self, name: &str) -> bool {
        self.tools.iter().any(|tool| tool.name() == name)
    }

    pub(in crate::plugins) fn add_method(&mut self, method: Arc<dyn PluginMethod>) {
        self.methods
            .retain(|registered| registered.name() != method.name());
        self.methods.push(method);
    }
}

impl std::fmt::Debug for Plugins {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Plugins")
            .field("plugins", &self.inner.registered)
            .field("settings", &self.inner.settings)
            .finish()
    }
}

impl Plugins {
    /// No plugins yet, and these limits.
    pub fn new(settings: ToolSettings) -> Plugins {
        Plugins {
            inner: Arc::new(Registry {
                tools: Vec::new(),
                tags: TagSet::default(),
                live: Vec::new(),
                settings,
                assembly: Assembly::empty(),
                events: Events::default(),
                filters: Filters::default(),
                preparations: Preparations::default(),
                reflections: Reflections::default(),
                methods: Vec::new(),
                processes: Vec::new(),
                clients: Clients::default(),
                registered: Vec::new(),
                skipped: Vec::new(),
                disabled: Arc::from([]),
            }),
        }
    }

    /// From now on, a plugin named in `names` is not registered (its tools, sections,
    /// observers, filters and methods never exist).
    pub fn disabling(mut self, names: &[String]) -> Plugins {
        Arc::make_mut(&mut self.inner).disabled = Arc::from(names);
        self
    }

    /// The names of the plugins registered, in order.
    pub fn registered(&self) -> &[&'static str] {
        &self.inner.registered
    }

    /// The disabled names that no plugin offered so far carries (likely misspelt).
    pub fn unknown_disabled(&self) -> Vec<&str> {
        self.inner
            .disabled
            .iter()
            .map(String::as_str)
            .filter(|name| !self.inner.skipped.contains(name))
            .collect()
    }

    /// The two filter chains of the packet.
    pub fn assembly(&self) -> &Assembly {
        &self.inner.assembly
    }

    /// Whether any plugin observes `hook` (to skip preparing what no one would see).
    pub fn observes(&self, hook: Hook) -> bool {
        self.inner.events.observes(hook)
    }

    /// Tells every observer of `event`, in order.
    pub fn emit(&self, event: Event<'_>) {
        self.inner.events.emit(event);
    }

    /// The entry `id` at `path`, written in `turn`, as an event names it: worded when its
    /// scheme's tool stores it at a path made of the model's words.
    pub fn event_entry<'a>(&self, id: EntryId, path: &'a str, turn: i32) -> EventEntry<'a> {
        let worded = scheme_of(path)
            .and_then(|scheme| self.get(scheme))
            .is_some_and(|tool| tool.paths_are_words());
        EventEntry {
            id,
            path,
            turn,
            worded,
        }
    }

    /// Threads `value` through the filters of hook `H`.
    pub async fn filter<H: FilterHook>(&self, value: &mut H::Value, context: &H::Context) {
        if self.has_filters::<H>() {
            self.inner.filters.apply::<H>(value, context).await;
        }
    }

    /// Whether any plugin filters hook `H` (to skip preparing its value when none does).
    pub fn has_filters<H: FilterHook>(&self) -> bool {
        !H::chain(&self.inner.filters).is_empty()
    }

    /// Runs the preparations of a turn about to be assembled (on the writer).
    pub fn prepare(&self, conn: &mut crate::db::Conn, turn: &PreparingTurn<'_>) {
        self.inner.preparations.run(conn, turn);
    }

    /// Whether any plugin reflects on runs.
    pub fn reflects(&self) -> bool {
        !self.inner.reflections.is_empty()
    }

    /// Runs the reflections of `at` (off the writer; see `plugins::reflection`).
    pub async fn reflect(&self, services: &ReflectionServices, at: &Reflecting) {
        self.inner.reflections.run(services, at).await;
    }

    /// The RPC method a plugin added under `name`.
    pub fn method(&self, name: &str) -> Option<&dyn PluginMethod> {
        self.inner
            .methods
            .iter()
            .find(|method| method.name() == name)
            .map(|method| method.as_ref())
    }

    /// Every RPC method plugins added, in registration order.
    pub fn methods(&self) -> impl Iterator<Item = &dyn PluginMethod> + '_ {
        self.inner.methods.iter().map(|method| method.as_ref())
    }

    /// How plugins reach the clients (connected by the composition root).
    pub fn clients(&self) -> &Clients {
        &self.inner.clients
    }

    /// The tags the parser recognises: one per tool (made anew only while tools were
    /// added since the start).
    pub fn tags(&self) -> Cow<'_, TagSet> {
        let added = self.added();
        if added.is_empty() {
            return Cow::Borrowed(&self.inner.tags);
        }
        let tags = self
            .inner
            .tools
            .iter()
            .map(|tool| (tool.name(), tool.tag()));
        Cow::Owned(
            tags.chain(added.iter().map(|tool| (tool.name(), tool.tag())))
                .collect(),
        )
    }

    /// The tools added since the start.
    fn added(&self) -> Vec<&'static dyn Tool> {
        self.inner.live.iter().flat_map(LiveTools::now).collect()
    }

    /// The limits the handlers enforce.
    pub fn settings(&self) -> ToolSettings {
        self.inner.settings
    }

    /// The tool named `name` (also the scheme it owns).
    pub fn get(&self, name: &str) -> Option<&dyn Tool> {
        let added = self.inner.live.iter().find_map(|live| live.find(name));
        added.or_else(|| {
            self.inner
                .tools
                .iter()
                .find(|tool| tool.name() == name)
                .map(|tool| tool.as_ref())
        })
    }

    /// The tools whose commands can become proposals.
    pub fn proposing(&self) -> Vec<&'static str> {
        self.names()
            .filter(|name| self.get(name).is_some_and(|tool| tool.proposes()))
            .collect()
    }

    /// Every tool name, in display order (`think` included).
    pub fn names(&self) -> impl Iterator<Item = &'static str> + '_ {
        let added = self.added().into_iter().map(|tool| tool.name());
        self.inner.tools.iter().map(|tool| tool.name()).chain(added)
    }

    /// The tools the model may use under `policy`, in display order.
    pub fn active_tools(&self, policy: &ToolPolicy) -> Vec<&'static str> {
        self.offered(policy).map(|tool| tool.name()).collect()
    }

    /// `(name, doc)` of each active tool, in display order.
    pub fn docs(&self, policy: &ToolPolicy) -> Vec<(&'static str, &'static str)> {
        self.offered(policy)
            .map(|tool| (tool.name(), tool.doc()))
            .collect()
    }

    /// `policy` for a loop whose window is `window` tokens (0: unknown): without the
    /// optional tools when the docs of every tool it offers would take more than a
    /// [`DOC_SHARE`] part of the window.
    pub fn fitted(&self, policy: ToolPolicy, window: u64) -> ToolPolicy {
        if window == 0 {
            return policy;
        }
        let tokens = TokenMath::new(self.inner.settings.token_divisor);
        let doc_tokens: u64 = self
            .docs(&policy)
            .iter()
            .map(|(_, doc)| tokens.entry_tokens(doc).get())
            .sum();
        ToolPolicy {
            optional_tools: policy.optional_tools && doc_tokens.saturating_mul(DOC_SHARE) <= window,
            ..policy
        }
    }

    /// The scheme rows the tools need registered.
    pub fn scheme_rows(&self) -> Vec<SchemeRow> {
        self.inner
            .tools
            .iter()
            .map(|tool| {
                let spec = tool.scheme();
                SchemeRow {
                    name: tool.name().to_owned(),
                    model_visible: spec.model_visible,
                    category: spec.category,
                }
            })
            .collect()
    }

    fn offered<'a>(&'a self, policy: &'a ToolPolicy) -> impl Iterator<Item = &'a dyn Tool> + 'a {
        let added = self.added().into_iter();
        self.inner
            .tools
            .iter()
            .map(|tool| tool.as_ref())
            .chain(added)
            .filter(move |tool| tool.availability(policy) == Availability::Offered)
    }

    /// The text the model sees for `entry` at its fidelity.
    ///
    /// Index shows the summary attribute (or nothing). Summary shows the tool's summary
    /// view after the summary attribute; when the view is empty, the attribute alone.
    /// Schemes without a tool (files, `http(s)`, `skill`, `budget`, `prompt`,
    /// `instructions`) show their body at full fidelity; at summary fidelity a file shows
    /// its `symbols` attribute, and every such scheme falls back to the first 80
    /// characters of the body when no summary attribute exists.
    pub fn project(&self, entry: &EntryView<'_>) -> String {
        let summary = entry.attribute("summary").filter(|text| !text.is_empty());
        let tool = self.get(entry.plugin_scheme());
        match entry.fidelity {
            Fidelity::Index | Fidelity::Archive => summary.unwrap_or_default().to_owned(),
            Fidelity::Full => match tool {
                Some(tool) => tool.full_view(entry),
                None => entry.body.to_owned(),
            },
            Fidelity::Summary => {
                let view = match tool {
                    Some(tool) => tool.summary_view(entry),
                    None => passive_summary(entry, summary.is_some()),
                };
                match (summary, view.is_empty()) {
                    (Some(summary), false) => format!("{summary}\n{view}"),
                    (Some(summary), true) => summary.to_owned(),
                    (None, _) => view,
                }
            }
        }
    }
}

/// The summary view of a scheme no tool owns.
fn passive_summary(entry: &EntryView<'_>, has_summary: bool) -> String {
    if let Some(symbols) = entry.attribute("symbols").filter(|text| !text.is_empty()) {
        return symbols.to_owned();
    }
    if has_summary {
        return String::new();
    }
    entry.body.chars().take(SUMMARY_PREFIX_CHARS).collect()
}

impl ToolDocs for Plugins {
    fn active_tools(&self, policy: &ToolPolicy) -> Vec<&str> {
        Plugins::active_tools(self, policy)
    }

    fn docs(&self, policy: &ToolPolicy) -> Vec<(&'static str, &'static str)> {
        Plugins::docs(self, policy)
    }
}

impl Projector for Plugins {
    fn project(&self, entry: &EntryView<'_>) -> String {
        Plugins::project(self, entry)
    }
}

#[cfg(test)]
mod tests {
    use crate::db::enums::EntryStatus;
    use serde_json::{json, Map, Value};

    use super::*;
    use crate::db::enums::{Category, LoopMode};
    use crate::db::ids::{ProjectId, RunId};
    use crate::plugins::filters::{LlmCall, LlmResponse};
    use crate::plugins::plugin::{Plugin, Registrar};
    use crate::plugins::tool::ToolEffect;

    fn plugins() -> Plugins {
        Plugins::bundled(ToolSettings::default())
    }

    #[test]
    fn each_tool_says_what_its_commands_do() {
        let plugins = plugins();
        let mut proposing = plugins.proposing();
        proposing.sort_unstable();
        assert_eq!(
            proposing,
            ["ask_user", "cp", "env", "mv", "rm", "set", "sh"]
        );
        let effect = |name: &str| plugins.get(name).map(|tool| tool.effect());
        let investigating: Vec<&str> = plugins
            .names()
            .filter(|name| effect(name).is_some_and(ToolEffect::investigates))
            .collect();
        assert_eq!(investigating, ["get", "env", "search", "ask_user"]);
        for name in ["summarize", "update"] {
            assert_eq!(effect(name), Some(ToolEffect::Signals), "{name}");
        }
        for name in ["set", "rm", "sh", "mv", "cp"] {
            assert_eq!(effect(name), Some(ToolEffect::Changes), "{name}");
        }
    }

    fn view<'a>(
        path: &'a str,
        fidelity: Fidelity,
        body: &'a str,
        attributes: &'a Map<String, Value>,
    ) -> EntryView<'a> {
        EntryView {
            path,
            scheme: crate::db::paths::scheme_of(path),
            status: EntryStatus::Ok,
            fidelity,
            category: Category::Data,
            body,
            attributes,
            turn: 1,
        }
    }

    fn object(value: Value) -> Map<String, Value> {
        match value {
            Value::Object(map) => map,
            _ => Map::new(),
        }
    }

    #[test]
    fn act_offers_everything_but_search_and_think_in_display_order() {
        assert_eq!(
            plugins().active_tools(&ToolPolicy::act()),
            [
                "get",
                "set",
                "known",
                "unknown",
                "env",
                "sh",
                "rm",
                "cp",
                "mv",
                "summarize",
                "update",
                "ask_user"
            ]
        );
        let with_search = ToolPolicy {
            search_available: true,
            ..ToolPolicy::act()
        };
        assert!(plugins().active_tools(&with_search).contains(&"search"));
    }

    #[test]
    fn modes_and_flags_exclude_tools() {
        let ask = ToolPolicy {
            mode: LoopMode::Ask,
            ..ToolPolicy::act()
        };
        assert!(!plugins().active_tools(&ask).contains(&"sh"));
        assert!(plugins().active_tools(&ask).contains(&"env"));
        let quiet = ToolPolicy {
            no_interaction: true,
            no_web: true,
            search_available: true,
            ..ToolPolicy::act()
        };
        let active = plugins().active_tools(&quiet);
        assert!(!active.contains(&"ask_user") && !active.contains(&"search"));
        let no_proposals = ToolPolicy {
            no_proposals: true,
            ..ToolPolicy::act()
        };
        let active = plugins().active_tools(&no_proposals);
        assert!(["ask_user", "env", "sh"]
            .iter()
            .all(|tool| !active.contains(tool)));
        let panic = ToolPolicy {
            mode: LoopMode::Panic,
            search_available: true,
            ..ToolPolicy::act()
        };
        assert_eq!(
            plugins().active_tools(&panic),
            [
                "get",
                "set",
                "known",
                "unknown",
                "rm",
                "cp",
                "mv",
                "summarize",
                "update"
            ]
        );
    }

    #[test]
    fn a_window_too_small_for_every_doc_goes_without_the_optional_tools() {
        let plugins = plugins();
        let roomy = ToolPolicy {
            search_available: true,
            ..ToolPolicy::act()
        };
        let doc_tokens: u64 = plugins
            .docs(&roomy)
            .iter()
            .map(|(_, doc)| TokenMath::new(4).entry_tokens(doc).get())
            .sum();
        let fits = doc_tokens * DOC_SHARE;
        assert_eq!(
            plugins.fitted(roomy, 0),
            roomy,
            "an unknown window fits all"
        );
        assert_eq!(plugins.fitted(roomy, fits), roomy);
        let small = plugins.fitted(roomy, fits - 1);
        assert!(!small.optional_tools);
        let offered = plugins.active_tools(&small);
        assert!(plugins.active_tools(&roomy).contains(&"search"));
        assert!(!offered.contains(&"search"));
        for core in [
            "get",
            "set",
            "known",
            "unknown",
            "summarize",
            "update",
            "sh",
        ] {
            assert!(offered.contains(&core), "{core}");
        }
        assert!(
            !plugins.fitted(small, u64::MAX).optional_tools,
            "never re-added"
        );
    }

    #[test]
    fn every_active_tool_is_documented_and_excluded_ones_are_not() {
        let everything = ToolPolicy {
            search_available: true,
            ..ToolPolicy::act()
        };
        let docs = plugins().docs(&everything);
        assert_eq!(docs.len(), 13);
        for (name, doc) in &docs {
            assert!(doc.starts_with("## <"), "{name}");
            assert!(doc.contains("Example:"), "{name}");
            assert!(doc.contains("YOU "), "{name}");
        }
        let ask = ToolPolicy {
            mode: LoopMode::Ask,
            ..ToolPolicy::act()
        };
        let names: Vec<&str> = plugins().docs(&ask).iter().map(|(name, _)| *name).collect();
        assert!(!names.contains(&"sh") && !names.contains(&"search") && !names.contains(&"think"));
    }

    #[test]
    fn projection_follows_fidelity() {
        let plugins = plugins();
        let with_summary = object(json!({ "summary": "auth,session" }));
        let none = Map::new();
        let full = view(
            "known://auth",
            Fidelity::Full,
            "cookie ttl 24h",
            &with_summary,
        );
        assert_eq!(
            plugins.project(&full),
            "# known known://auth\ncookie ttl 24h"
        );
        let summary = view(
            "known://auth",
            Fidelity::Summary,
            "cookie ttl 24h",
            &with_summary,
        );
        assert_eq!(plugins.project(&summary), "auth,session");
        let bare = view("known://auth", Fidelity::Summary, "cookie ttl 24h", &none);
        assert_eq!(plugins.project(&bare), "cookie ttl 24h");
        let index = view("known://auth", Fidelity::Index, "", &with_summary);
        assert_eq!(plugins.project(&index), "auth,session");
        let file = view("src/a.js", Fidelity::Full, "let a;", &none);
        assert_eq!(plugins.project(&file), "let a;");
        let symbols = object(json!({ "symbols": "fn a" }));
        let file = view("src/a.js", Fidelity::Summary, "let a;", &symbols);
        assert_eq!(plugins.project(&file), "fn a");
        let sh = object(json!({ "command": "npm test" }));
        let done = view("sh://turn_1/npm%20test", Fidelity::Summary, "ok", &sh);
        assert_eq!(plugins.project(&done), "npm test");
        let done = view("sh://turn_1/npm%20test", Fidelity::Full, "ok", &sh);
        assert_eq!(plugins.project(&done), "# sh npm test\nok");
    }

    #[test]
    fn schemes_cover_every_tool() {
        let rows = plugins().scheme_rows();
        assert_eq!(rows.len(), 16);
        for reasoning in ["think", "thought", "mcp"] {
            let row = rows.iter().find(|row| row.name == reasoning);
            assert_eq!(row.map(|row| row.model_visible), Some(false), "{reasoning}");
        }
    }

    #[test]
    fn bundled_tools_and_sections_are_plugins_of_their_names() {
        let plugins = plugins();
        assert_eq!(plugins.registered().len(), 16 + 7);
        assert!(["get", "sh", "mcp", "instructions", "knowns", "prompt"]
            .iter()
            .all(|name| plugins.registered().contains(name)));
    }

    #[test]
    fn a_disabled_plugin_is_never_registered_and_a_name_no_plugin_has_is_reported() {
        let disabled = ["sh", "knowns", "nope"].map(String::from);
        let plugins = Plugins::new(ToolSettings::default())
            .disabling(&disabled)
            .with_bundled();
        assert!(plugins.get("sh").is_none());
        assert!(!plugins.active_tools(&ToolPolicy::act()).contains(&"sh"));
        assert!(crate::parser::parse("<sh>ls</sh>", &plugins.tags())
            .commands
            .is_empty());
        assert!(!plugins.registered().contains(&"knowns"));
        assert!(plugins.get("env").is_some());
        assert_eq!(plugins.unknown_disabled(), ["nope"]);
    }

    /// Appends its name to every reply.
    struct Suffix(&'static str);

    impl Plugin for Suffix {
        fn name(&self) -> &'static str {
            self.0
        }

        fn register(self: Box<Self>, registrar: &mut Registrar<'_>) {
            let name = self.0;
            registrar.filter::<LlmResponse>(100, move |reply, _| reply.push_str(name));
        }
    }

    #[tokio::test]
    async fn a_registry_shared_before_a_registration_keeps_what_it_had() {
        let base = Plugins::new(ToolSettings::default()).plugin(Suffix("a"));
        let more = base.clone().plugin(Suffix("b"));
        let call = LlmCall {
            project: ProjectId(1),
            run: RunId(1),
            turn: 1,
            purpose: crate::db::enums::CallPurpose::Turn,
        };
        let reply = async |plugins: &Plugins| {
            let mut reply = String::new();
            plugins.filter::<LlmResponse>(&mut reply, &call).await;
            reply
        };
        assert_eq!(reply(&base).await, "a");
        assert_eq!(reply(&more).await, "ab");
        assert_eq!(more.registered(), ["a", "b"]);
    }

    #[test]
    fn a_tool_of_a_taken_name_replaces_it_in_place_and_the_tags_follow() {
        let parsed = |plugins: &Plugins| {
            crate::parser::parse("<search>rust</search>", &plugins.tags())
                .commands
                .len()
        };
        let without = Plugins::new(ToolSettings::default());
        assert_eq!(parsed(&without), 0, "no tool, no tag");
        let bundled = plugins();
        let replaced = bundled
            .clone()
            .with(crate::plugins::bundled::tools::kept::Kept::THOUGHT);
        assert!(replaced.names().eq(bundled.names()));
        assert_eq!(parsed(&replaced), 1);
    }
}
