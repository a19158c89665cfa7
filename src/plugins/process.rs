//! Plugins as processes: a program in any language, declared by a line of configuration
//! (`declaration`), started by rummy, which speaks JSON-RPC 2.0 with it over its stdin and
//! stdout (`protocol`; the process kept running, restarted and disabled by `link`, its
//! pipes read by `pipes`). At its
//! handshake it declares what it adds, and that is registered through the same
//! [`Registrar`] as an in-process plugin's: tools (`tool`), an observer (`reach`, which also
//! learns which runs and projects the plugin serves), filters (`filter`), packet sections
//! (`section`) and RPC methods (`method`), so the engine knows no second kind of plugin.
//! Each start of a process (`child`) is a process group and a cgroup of its own, killed as
//! one tree; while it runs (`running`) its calls wait for their answers. `plugins/status` tells a client how each process is, `plugins/restart` starts
//! one afresh. A plugin whose handshake fails at start adds nothing (its state says why);
//! the server's stop shuts every process down ([`Plugins::close_processes`]).

mod child;
mod declaration;
mod filter;
pub(in crate::plugins) mod link;
mod method;
mod pipes;
mod protocol;
mod reach;
mod restart;
mod running;
mod section;
mod status;
mod tool;

use std::sync::Arc;
use std::time::Duration;

use futures_util::future::join_all;

pub(crate) use declaration::{load as declarations, Declaration};
use link::Link;
use method::ProcessMethod;
use protocol::{Manifest, SectionChain};
use reach::{ProcessObserver, Reach};
use restart::RestartMethod;
use section::{ProcessSection, SectionRefresh};
use status::{Status, StatusMethod};
use tool::ProcessTool;

use crate::config::PluginSettings;
use crate::plugins::assembly::Chain;
use crate::plugins::events::Hook;
use crate::plugins::filters::{
    BudgetEnforce, EntryRecording, LlmMessages, LlmResponse, RunConfig, TurnProposing,
};
use crate::plugins::plugin::{Plugin, Registrar};
use crate::plugins::policy::ConfiguredSet;
use crate::plugins::Plugins;

/// The most plugin processes (a loop's are a 64-bit set).
const MAX_PROCESSES: usize = 64;

/// One declared plugin process, started (or not: disabled by configuration, or its
/// handshake failed).
struct Declared {
    name: &'static str,
    link: Option<Arc<Link>>,
    manifest: Result<Manifest, String>,
}

/// The plugin processes, their handshakes made.
pub(crate) struct ProcessPlugins {
    declared: Vec<Declared>,
}

impl ProcessPlugins {
    /// Starts each of `declarations` (the first [`MAX_PROCESSES`]) the configuration does
    /// not disable and makes their handshakes, all at once.
    pub(crate) async fn start(
        declarations: Vec<Declaration>,
        settings: &PluginSettings,
    ) -> ProcessPlugins {
        if declarations.len() > MAX_PROCESSES {
            tracing::warn!(
                declared = declarations.len(),
                "only the first 64 plugin processes start"
            );
        }
        let timeout = Duration::from_millis(settings.timeout_ms.max(1));
        let started = declarations.into_iter().take(MAX_PROCESSES).map(|declaration| async move {
            let name: &'static str = declaration.name.clone().leak();
            if settings.disabled.iter().any(|disabled| disabled == name) {
                return Declared {
                    name,
                    link: None,
                    manifest: Err("disabled by configuration".into()),
                };
            }
            let (link, manifest) = Link::start(declaration, timeout, settings.max_failures).await;
            if let Err(error) = &manifest {
                tracing::error!(plugin = name, %error, "plugin process did not start; it adds nothing");
            }
            Declared {
                name,
                link: Some(link),
                manifest: manifest.map_err(|error| error.to_string()),
            }
        });
        ProcessPlugins {
            declared: join_all(started).await,
        }
    }

    /// `plugins` with each process plugin, and `plugins/status` and `plugins/restart` when
    /// there is one.
    pub(crate) fn register(self, mut plugins: Plugins) -> Plugins {
        if self.declared.is_empty() {
            return plugins;
        }
        let mut statuses = Vec::new();
        for (index, declared) in self.declared.into_iter().enumerate() {
            statuses.push(Status {
                name: declared.name,
                link: declared.link.clone(),
                manifest: declared.manifest.clone(),
            });
            plugins = plugins.plugin(ProcessPlugin { index, declared });
        }
        plugins.plugin(ProcessAdmin(Arc::new(statuses)))
    }
}

/// `plugins/status` and `plugins/restart`, over every declared plugin process.
struct ProcessAdmin(Arc<Vec<Status>>);

impl Plugin for ProcessAdmin {
    fn name(&self) -> &'static str {
        "plugin_status"
    }

    fn register(self: Box<Self>, registrar: &mut Registrar<'_>) {
        registrar.method(RestartMethod(Arc::clone(&self.0)));
        registrar.method(StatusMethod(self.0));
    }
}

/// One plugin process as a plugin of its configured name.
struct ProcessPlugin {
    index: usize,
    declared: Declared,
}

impl Plugin for ProcessPlugin {
    fn name(&self) -> &'static str {
        self.declared.name
    }

    fn register(self: Box<Self>, registrar: &mut Registrar<'_>) {
        let (Some(link), Ok(manifest)) = (self.declared.link, self.declared.manifest) else {
            return;
        };
        let index = self.index;
        registrar.process(index, Arc::clone(&link));
        let reach = Arc::new(Reach::new(Arc::clone(&link)));
        let name = self.declared.name;
        for declared in manifest.tools {
            if !tool_name_fits(&declared.name) || registrar.has_tool(&declared.name) {
                tracing::warn!(
                    plugin = name,
                    tool = declared.name,
                    "a plugin tool is not registered: its name is taken or not a tag"
                );
                continue;
            }
            registrar.tool(ProcessTool::new(Arc::clone(&reach), index, declared));
        }
        let observed: Vec<Hook> = manifest
            .observes
            .iter()
            .filter_map(|wanted| Hook::ALL.into_iter().find(|hook| hook.name() == wanted))
            .collect();
        let mut hooks = observed.clone();
        hooks.extend(ProcessObserver::TEACHING);
        registrar.observer(ProcessObserver {
            reach: Arc::clone(&reach),
            hooks,
            observed,
        });
        for filter in manifest.filters {
            let reach = Arc::clone(&reach);
            match filter.hook.as_str() {
                "entry.recording" => registrar.filter_async::<EntryRecording>(
                    filter.priority,
                    filter::entry_recording(reach),
                ),
                "llm.request" => registrar
                    .filter_async::<LlmMessages>(filter.priority, filter::llm_request(reach)),
                "llm.response" => registrar
                    .filter_async::<LlmResponse>(filter.priority, filter::llm_response(reach)),
                "run.config" => {
                    registrar.filter_async::<RunConfig>(filter.priority, filter::run_config(reach))
                }
                "budget.enforce" => registrar
                    .filter_async::<BudgetEnforce>(filter.priority, filter::budget_enforce(reach)),
                "turn.proposing" => registrar
                    .filter_async::<TurnProposing>(filter.priority, filter::turn_proposing(reach)),
                other => tracing::warn!(
                    plugin = name,
                    hook = other,
                    "a plugin process cannot filter this hook"
                ),
            }
        }
        if !manifest.sections.is_empty() {
            let texts = SectionRefresh::texts();
            let mut names = Vec::new();
            for (slot, section) in manifest.sections.into_iter().enumerate() {
                let chain = match section.chain {
                    SectionChain::System => Chain::System,
                    SectionChain::User => Chain::User,
                };
                registrar.section(
                    chain,
                    ProcessSection {
                        texts: Arc::clone(&texts),
                        slot,
                        index,
                        priority: section.priority,
                    },
                );
                names.push(section.name);
            }
            registrar.reflection(SectionRefresh {
                reach: Arc::clone(&reach),
                texts,
                names,
            });
        }
        for method in manifest.methods {
            registrar.method_erased(Arc::new(ProcessMethod::new(Arc::clone(&reach), method)));
        }
    }
}

/// A tag: a lowercase letter, then lowercase letters, digits and `_`, at most 40.
fn tool_name_fits(name: &str) -> bool {
    name.len() <= 40
        && name.starts_with(|c: char| c.is_ascii_lowercase())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
}

impl Plugins {
    /// The plugin processes that serve `project`.
    pub(crate) fn processes_serving(&self, project: &str) -> ConfiguredSet {
        self.inner
            .processes
            .iter()
            .filter(|(_, link)| link.serves(project))
            .fold(ConfiguredSet::NONE, |set, (index, _)| set.with(*index))
    }

    /// Shuts every plugin process down for good, all at once (the server stops): each is
    /// told `shutdown`, its stdin closed, and its tree killed after the grace; nothing of
    /// any is left when this returns.
    pub(crate) async fn close_processes(&self) {
        join_all(self.inner.processes.iter().map(|(_, link)| link.close())).await;
    }
}
