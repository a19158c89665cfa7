//! [`AgentContext`]: everything the agent core works with, built by the composition root.

use std::sync::Arc;

use actix::Addr;

use crate::agent::admission::LoopAdmission;
use crate::agent::allow::MayAccept;
use crate::agent::loop_config::LoopConfig;
use crate::agent::paused::Resumer;
use crate::agent::RunRegistry;
use crate::budget::BudgetActor;
use crate::cluster::LeaseHolder;
use crate::config::Settings;
use crate::db::enums::LoopMode;
use crate::db::ids::RunId;
use crate::db::models::run::LoopRow;
use crate::db::DbHandle;
use crate::hub::HubRegistry;
use crate::inbox::Inbox;
use crate::live::LiveText;
use crate::llm::CancellationToken;
use crate::llm::LlmProviders;
use crate::mcp::McpServers;
use crate::metrics::Metrics;
use crate::parser::Command;
use crate::plugins::engine::dispatch::{gather, PreparedWork};
use crate::plugins::gather::Gathering;
use crate::plugins::policy::ToolPolicy;
use crate::plugins::Plugins;
use crate::presence::Presence;
use crate::project_actor::ProjectRegistry;
use crate::sandbox::runner::ServerCommands;
use crate::secrets::SecretStore;
use crate::web::WebClient;
use crate::webhooks::Webhooks;

/// The store, the actors and the plugins a run needs. Cheap to clone.
#[derive(Clone)]
pub(crate) struct AgentContext {
    pub settings: Arc<Settings>,
    pub db: DbHandle,
    /// Notification fan-out per project.
    pub hubs: HubRegistry,
    /// Who is in which run.
    pub presence: Presence,
    /// The connections told of changes to their person's inbox.
    pub inbox: Inbox,
    /// The connections sent the model's words as they come (`run/delta`).
    pub live: LiveText,
    /// Runs executing now, server-wide.
    pub runs: RunRegistry,
    /// `run/abort`, `run/resolve` and `run/inject` of runs executing on other instances.
    pub lease_holder: LeaseHolder,
    /// The bounds on loops running or queued, per project and per person.
    pub admission: LoopAdmission,
    /// One actor per LLM provider.
    pub llm: LlmProviders,
    /// The MCP servers (their tools are among the plugins).
    pub mcp: McpServers,
    /// The plugins: tools (handlers, views, docs), the sections of the packet, observers,
    /// filters and RPC methods.
    pub plugins: Arc<Plugins>,
    /// The calibration of packet estimates, per run.
    pub budget: Addr<BudgetActor>,
    /// One actor per project root: file scans.
    pub projects: ProjectRegistry,
    pub metrics: Arc<Metrics>,
    /// Web searches and page fetches.
    pub web: WebClient,
    /// Accepted commands running on the server, confined.
    pub commands: ServerCommands,
    /// Whether a person may accept in a project now, for applying their command rules.
    pub may_accept: MayAccept,
    /// What this instance knows of the store's webhooks; wakes their worker.
    pub webhooks: Webhooks,
    /// Looks at the loops paused at a spend cap when poked (`agent::paused`).
    pub paused: Resumer,
    /// People's and the server's secrets, sealed at rest (`crate::secrets`).
    pub secrets: SecretStore,
}

/// The reply (or client call) whose commands' work is prepared.
pub(crate) struct Replying<'a> {
    pub run: RunId,
    /// The loop whose reply it is; `None` for a client's tool call.
    pub loop_row: Option<&'a LoopRow>,
    pub policy: &'a ToolPolicy,
    /// The loop's: an abort drops the work under way.
    pub cancel: &'a CancellationToken,
}

impl AgentContext {
    /// What a loop of `run` in `project` may use, with its flags `config`, in `mode`: what
    /// its flags allow, the project's MCP servers and those clients attached to the run,
    /// sub-agents while it is less deep than `RUMMY_SUBAGENT_MAX_DEPTH`, web search when a
    /// backend is configured.
    pub(crate) fn loop_policy(
        &self,
        run: RunId,
        project: &str,
        config: &LoopConfig,
        mode: LoopMode,
    ) -> ToolPolicy {
        ToolPolicy {
            mcp_servers: self.mcp.enabled_for(project),
            plugin_processes: self.plugins.processes_serving(project),
            client_mcp: self.mcp.attached_to(run),
            subagents: config.delegation_depth < self.settings.agent.subagent_max_depth,
            ..config.policy(mode, self.settings.search_available())
        }
    }

    /// The body searches and edits of `commands`, computed beside the writer under the
    /// request limits, and what the tools' gather halves obtain from outside the store, at
    /// once, for the unit of work that then runs the commands ([`PreparedWork::apply`]).
    /// An abort (`replying.cancel`) ends it early, with what was done.
    pub(crate) async fn prepare_work(
        &self,
        replying: Replying<'_>,
        commands: &[Command],
    ) -> PreparedWork {
        let at = Gathering {
            run: replying.run,
            loop_row: replying.loop_row,
            policy: replying.policy,
            cancel: replying.cancel,
            web: &self.web,
            agent: self,
        };
        // An abort drops the body searches and edits (their budget with them); the gather
        // halves stop of themselves, an MCP call telling its server it was cancelled.
        let entry_work = async {
            tokio::select! {
                work = self.prepare_entry_work(replying.run, commands) => work,
                () = replying.cancel.cancelled() => PreparedWork::default(),
            }
        };
        let (work, gathered) = tokio::join!(entry_work, gather(&self.plugins, &at, commands));
        work.with_gathered(gathered)
    }

    /// The body searches and edits of `commands`. A failure only means the writer computes
    /// them.
    async fn prepare_entry_work(&self, run_id: RunId, commands: &[Command]) -> PreparedWork {
        if !commands.iter().any(PreparedWork::needed_for) {
            return PreparedWork::default();
        }
        let commands = commands.to_vec();
        let prepared = self
            .db
            .search(move |conn| PreparedWork::compute(conn, run_id, &commands))
            .await;
        prepared.unwrap_or_else(|error| {
            tracing::warn!(%error, "work not prepared beside the writer");
            PreparedWork::default()
        })
    }
}
