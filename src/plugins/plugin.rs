//! [`Plugin`]: one named unit of extension, and the [`Registrar`] it registers through. A
//! plugin adds tools, packet sections, observers, filters, preparations, reflections and RPC methods; the bundled
//! tools, sections and the transcript are plugins too, registered the same way. A plugin
//! whose name the configuration disables (`RUMMY_PLUGINS_DISABLED`) is never registered,
//! so none of what it adds exists. [`Plugins::plugin`] registers one.

use std::sync::Arc;

use crate::plugins::assembly::{AssemblyFilter, Chain};
use crate::plugins::clients::Clients;
use crate::plugins::engine::live::LiveTools;
use crate::plugins::engine::registry::{Plugins, Registry};
use crate::plugins::events::Observer;
use futures_util::future::BoxFuture;

use crate::plugins::filters::{AsyncFilterFn, FilterFn, FilterHook};
use crate::plugins::method::{PluginMethod, TypedMethod};
use crate::plugins::preparation::Preparation;
use crate::plugins::process::link::Link;
use crate::plugins::reflection::Reflection;
use crate::plugins::tool::{Tool, ToolSettings};

/// A named set of additions to the server.
pub trait Plugin {
    /// What the configuration calls it (`RUMMY_PLUGINS_DISABLED`), unique among plugins.
    fn name(&self) -> &'static str;

    /// Adds what the plugin brings.
    fn register(self: Box<Self>, registrar: &mut Registrar<'_>);
}

/// What a plugin registers through, while it registers.
pub struct Registrar<'a> {
    pub(super) registry: &'a mut Registry,
}

impl Registrar<'_> {
    /// A model tool: from now on the parser recognises its tag, the model reads its doc when
    /// it is offered, and its commands run. A tool of a taken name replaces it in place.
    pub fn tool(&mut self, tool: impl Tool + 'static) {
        self.registry.add_tool(Arc::new(tool));
    }

    /// The list of tools the plugin adds while the server runs (see [`LiveTools`]).
    pub fn live_tools(&mut self, tools: LiveTools) {
        self.registry.live.push(tools);
    }

    /// A section of the packet: appended to `chain` after every section of lower or equal
    /// priority.
    pub fn section(&mut self, chain: Chain, section: impl AssemblyFilter + 'static) {
        self.registry.assembly.register(chain, Arc::new(section));
    }

    /// An observer of every event.
    pub fn observer(&mut self, observer: impl Observer + 'static) {
        self.registry.events.register(Arc::new(observer));
    }

    /// A filter of hook `H` at `priority` (lower runs first; the bundled ones use 100).
    pub fn filter<H: FilterHook>(
        &mut self,
        priority: i32,
        filter: impl Fn(&mut H::Value, &H::Context) + Send + Sync + 'static,
    ) {
        let filter: Arc<FilterFn<H>> = Arc::new(filter);
        self.registry.filters.register::<H>(priority, filter);
    }

    /// A filter of hook `H` at `priority` that answers later (it is given a copy of the
    /// value and answers the value to go on with), ordered as [`Registrar::filter`].
    pub fn filter_async<H: FilterHook>(
        &mut self,
        priority: i32,
        filter: impl Fn(H::Value, H::Context) -> BoxFuture<'static, H::Value> + Send + Sync + 'static,
    ) {
        let filter: Arc<AsyncFilterFn<H>> = Arc::new(filter);
        self.registry.filters.register_async::<H>(priority, filter);
    }

    /// Whether a tool of this name is registered already (a plugin from outside the
    /// crate may refuse to replace it).
    pub fn has_tool(&self, name: &str) -> bool {
        self.registry.has_tool(name)
    }

    /// Work on the store before each turn's packet is assembled.
    pub fn preparation(&mut self, preparation: impl Preparation + 'static) {
        self.registry.preparations.register(Arc::new(preparation));
    }

    /// Work on a run after its turns, off the writer (it may call the run's model).
    pub fn reflection(&mut self, reflection: impl Reflection + 'static) {
        self.registry.reflections.register(Arc::new(reflection));
    }

    /// An RPC method, listed by `discover`.
    pub fn method(&mut self, method: impl TypedMethod) {
        self.registry.add_method(Arc::new(method));
    }

    /// An RPC method already erased (a plugin process's, whose params are its own).
    pub(crate) fn method_erased(&mut self, method: Arc<dyn PluginMethod>) {
        self.registry.add_method(method);
    }

    /// The plugin process at `index` among those declared: the projects it serves decide
    /// its bit in each loop's policy.
    pub(crate) fn process(&mut self, index: usize, link: Arc<Link>) {
        self.registry.processes.push((index, link));
    }

    /// The clients of every project, to send `ui/render` and `ui/notify` (keep a clone).
    pub fn clients(&self) -> Clients {
        self.registry.clients.clone()
    }

    /// The limits the tools enforce (memory's methods check a fact by them).
    pub fn settings(&self) -> ToolSettings {
        self.registry.settings
    }
}

impl Plugins {
    /// These plugins and `plugin` after them, unless the configuration disables it.
    pub fn plugin(mut self, plugin: impl Plugin + 'static) -> Plugins {
        let name = plugin.name();
        let registry = Arc::make_mut(&mut self.inner);
        if registry.disabled.iter().any(|disabled| disabled == name) {
            tracing::info!(plugin = name, "plugin disabled by configuration");
            registry.skipped.push(name);
            return self;
        }
        Box::new(plugin).register(&mut Registrar { registry });
        if !registry.registered.contains(&name) {
            registry.registered.push(name);
        }
        self
    }

    /// These plugins and `tool` after them, as a plugin of the tool's name (in the place of
    /// the tool of the same name, when one is registered): from now on the parser
    /// recognises its tag, the model reads its doc when it is offered, and its commands run.
    pub fn with(self, tool: impl Tool + 'static) -> Plugins {
        self.plugin(ToolPlugin(tool))
    }
}

/// One tool as a plugin of its name ([`Plugins::with`]).
struct ToolPlugin<T>(pub T);

impl<T: Tool + 'static> Plugin for ToolPlugin<T> {
    fn name(&self) -> &'static str {
        self.0.name()
    }

    fn register(self: Box<Self>, registrar: &mut Registrar<'_>) {
        registrar.tool(self.0);
    }
}
