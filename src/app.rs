//! The composition root: opens the store, builds the actors, the agent core and the HTTP
//! server, and stops them. Nothing imports it but the binary and the tests.
//!
//! On the SQLite store it first holds the home ([`crate::home_lock`], let go once the server
//! has stopped). Before it listens it runs the start-up work, in order: the schemes, the
//! retention purge with the RPC log's pruning, the model seeds, the providers' endpoints
//! admins set from the console ([`first_run`]), and the recovery of the runs
//! a stopped server left running.

mod first_run;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use actix::Actor;
use actix_web::dev::ServerHandle;
use actix_web::web;
use anyhow::Context as _;
use tokio::sync::mpsc::UnboundedReceiver;
use tokio_util::sync::CancellationToken;

use crate::access::{Access, Caller, Role};
use crate::agent::admission::LoopAdmission;
use crate::agent::allow::MayAccept;
use crate::agent::delegation::Subagents;
use crate::agent::paused::Resumer;
use crate::agent::{AgentContext, RunRegistry};
use crate::budget::{BudgetActor, TokenMath};
use crate::cluster::bus::{BusMessage, FrameBus};
use crate::cluster::Instance;
use crate::cluster::LeaseHolder;
use crate::config::RunCommands;
use crate::config::{ModelPrice, Settings};
use crate::db::entry_changes::EntryChangeSink;
use crate::db::events::EventSink;
use crate::db::models::ModelInsertForm;
use crate::db::queries::rpc_log::RpcLogBounds;
use crate::db::queries::runs::now_ms;
use crate::db::queries::{instances, project_settings};
use crate::db::{self, queries, ConnectionSetup, DbError, DbHandle, DbOptions, Store};
use crate::home_lock::{HomeLock, HomeLockError};
use crate::hub::notifications::UiNotification;
use crate::hub::HubRegistry;
use crate::inbox::Inbox;
use crate::live::LiveText;
use crate::llm::{
    CapBook, CapNotice, ConcurrencyLimits, Ledger, LlmOptions, LlmProviders, RetryPolicy, Spending,
    StoredCaps,
};
use crate::mcp::{self, McpServers};
use crate::memory::Memory;
use crate::metrics::{Metrics, WorkCounters};
use crate::plugins::bundled::transcript::{self, Transcript};
use crate::plugins::events::{Event, Hook};
use crate::plugins::process::{self, ProcessPlugins};
use crate::plugins::tool::ToolSettings;
use crate::plugins::Plugins;
use crate::presence::Presence;
use crate::project_actor::ProjectRegistry;
use crate::rpc::handlers::held;
use crate::sandbox::policy::ProjectChoice;
use crate::sandbox::runner::ServerCommands;
use crate::secrets::{Keyring, SecretStore};
use crate::usage::Clock;
use crate::web::{WebClient, WebOptions};
use crate::webhooks::payload::ConsoleLinks;
use crate::webhooks::worker::Worker;
use crate::webhooks::Webhooks;
use crate::ws::state::ServerState;

/// Seconds in a day of `RUMMY_RETENTION_DAYS`.
const SECONDS_PER_DAY: u64 = 86_400;

/// A server started by [`start`].
pub struct RunningServer {
    /// The address it listens on (the real port when 0 was asked for).
    pub addr: SocketAddr,
    /// What its sessions share.
    pub(crate) state: ServerState,
    /// Resolves when the server has stopped.
    done: actix_web::rt::task::JoinHandle<std::io::Result<()>>,
    beside: Beside,
    /// Its home, on a SQLite store; let go when it has stopped.
    _home: Option<HomeLock>,
}

/// What a server runs beside its workers: ended in order by [`RunningServer::stop`], and at
/// once when the server is dropped unstopped (an embedder's error, a test's end) or its start
/// fails after they began, so that none of it outlives the server: the frame bus would try
/// its PostgreSQL database every second (and keep the agent alive), the heartbeat renew
/// leases, for as long as the process lives.
struct Beside {
    /// The HTTP server's; `None` until it started.
    handle: Option<ServerHandle>,
    /// Stops this instance's heartbeat.
    heartbeat: CancellationToken,
    /// Stops the webhooks' delivery worker.
    webhooks: CancellationToken,
    /// The frame bus to the other instances, on a PostgreSQL store.
    bus: Option<FrameBus>,
}

impl Drop for Beside {
    fn drop(&mut self) {
        self.heartbeat.cancel();
        self.webhooks.cancel();
        if let Some(bus) = &self.bus {
            bus.stop();
        }
        if let Some(handle) = &self.handle {
            // The command is sent now; whether anything waits for its completion or not.
            drop(handle.stop(false));
        }
    }
}

impl RunningServer {
    /// Hands over and stops: claims no more loops (and `/readyz` answers 503), lets the
    /// loops running finish, and their ends' reflections (session notes), within the
    /// shutdown grace while their clients stay connected,
    /// gives back this instance's leases (a loop cut short ends its run 499, pending, as
    /// after a crash; loops not started stay pending, for any instance), then stops
    /// accepting, closes every connection with 1001, shuts the plugin processes down (nothing
    /// they started is left), lets in-flight writes finish and empties the database's
    /// write-ahead log.
    pub async fn stop(self) {
        let agent = &self.state.agent;
        agent.runs.stop_claiming();
        let grace = Duration::from_secs(crate::http::SHUTDOWN_SECS);
        if !agent.runs.settle(grace).await {
            tracing::warn!("loops still running at the end of the shutdown grace are cut short");
        }
        self.beside.heartbeat.cancel();
        self.beside.webhooks.cancel();
        match agent.runs.instance().leave(&agent.db).await {
            Ok((runs, vacated)) => {
                if runs > 0 {
                    tracing::info!(runs, "runs cut short by the stop are aborted");
                }
                agent.presence.retell(vacated).await;
            }
            Err(error) => tracing::warn!(%error, "cannot give back this instance's leases"),
        }
        self.state.connections.shutdown_all();
        if let Some(bus) = &self.beside.bus {
            bus.stop();
        }
        if let Some(handle) = &self.beside.handle {
            handle.stop(true).await;
        }
        let _ = self.done.await;
        self.state.agent.plugins.close_processes().await;
        self.state.agent.db.close().await;
    }
}

/// Applies pending migrations to the configured store (a SQLite store with its home held:
/// not under a running server).
pub fn migrate(settings: &Settings) -> anyhow::Result<()> {
    let store = store(settings);
    let _home = hold_home(&settings.storage.home, &store)?;
    if let Store::Sqlite(path) = &store {
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .map_err(|error| DbError::Internal(format!("{}: {error}", parent.display())))?;
        }
    }
    let mut connection = db::open_connection(&store, connection_setup(settings))?;
    Ok(db::run_migrations(&mut connection)?)
}

/// `home`, held for a server on the SQLite `store` ([`crate::home_lock`]); not for a
/// PostgreSQL store, which instances share.
fn hold_home(home: &Path, store: &Store) -> Result<Option<HomeLock>, HomeLockError> {
    match store {
        Store::Sqlite(_) => HomeLock::take(home).map(Some),
        Store::Postgres(_) => Ok(None),
    }
}

/// Holds the home (on a SQLite store), makes its `skills/` and `personas/` where missing and
/// reads its MCP servers: file work, done on the blocking pool.
/// What the home holds: its lock, the MCP servers and the plugin processes (those of
/// `plugin_variables`, `RUMMY_PLUGIN_<NAME>`, too).
fn read_home(
    home: &Path,
    store: &Store,
    plugin_variables: &BTreeMap<String, String>,
) -> anyhow::Result<HomeHolds> {
    let held = hold_home(home, store)?;
    std::fs::create_dir_all(home.join("skills"))?;
    std::fs::create_dir_all(home.join("personas"))?;
    let declared = process::declarations(home, plugin_variables)?;
    Ok((held, mcp::config::load(home)?, declared))
}

/// The home's lock, its MCP servers and its plugin processes.
type HomeHolds = (
    Option<HomeLock>,
    Vec<mcp::config::ServerConfig>,
    Vec<process::Declaration>,
);

/// Where the store is: PostgreSQL when `RUMMY_DATABASE_URL` is set, else the SQLite file.
pub fn store(settings: &Settings) -> Store {
    Store::from_settings(
        settings.storage.database_url.expose(),
        settings.storage.db_path.clone(),
    )
}

/// Opens the database, seeds the catalogue and starts listening, with the bundled tools.
pub async fn start(settings: Settings) -> anyhow::Result<RunningServer> {
    start_with(settings, |plugins| plugins).await
}

/// [`start`] with the plugins `register` adds to the bundled ones
/// (`|plugins| plugins.plugin(MyPlugin)`, or `plugins.with(MyTool)` for a lone tool); a
/// plugin the configuration disables is not registered.
pub async fn start_with(
    settings: Settings,
    register: impl FnOnce(Plugins) -> Plugins,
) -> anyhow::Result<RunningServer> {
    let (home_dir, held) = (settings.storage.home.clone(), store(&settings));
    let variables = settings.plugins.processes.clone();
    let (home, mcp_servers, declared) =
        web::block(move || read_home(&home_dir, &held, &variables)).await??;
    let mcp = McpServers::start(mcp_servers, Some(settings.storage.home.clone()));
    let processes = ProcessPlugins::start(declared, &settings.plugins).await;
    let plugins = processes.register(register(
        bundled_plugins(&settings)
            .plugin(mcp.plugin())
            .plugin(Subagents),
    ));
    for name in plugins.unknown_disabled() {
        tracing::warn!(plugin = name, "RUMMY_PLUGINS_DISABLED names no plugin");
    }
    let server_settings = settings.server.clone();
    let groups = settings
        .oidc
        .client
        .is_some()
        .then(|| settings.oidc.groups.clone());
    let access =
        web::block(move || Access::load_with(&server_settings, groups.as_deref())).await??;
    let key_settings = (settings.secrets.clone(), settings.storage.home.clone());
    let keyring = web::block(move || Keyring::load(&key_settings.0, &key_settings.1))
        .await?
        .context("loading the server key of secrets at rest")?;
    let (agent, arrived) = agent_context(&settings, plugins, mcp, &access, keyring)?;
    let mut beside = Beside {
        handle: None,
        heartbeat: CancellationToken::new(),
        webhooks: CancellationToken::new(),
        bus: agent.hubs.bus().cloned(),
    };
    actix_web::rt::spawn(take_from_the_bus(agent.clone(), arrived));
    register_schemes(&agent).await?;
    purge_expired(&agent).await?;
    seed_models(&agent).await?;
    reseal_secrets(&agent).await?;
    first_run::apply_endpoints(&agent).await?;
    recover_interrupted_runs(&agent, store(&settings).is_shared()).await?;
    prepare_commands(&agent).await?;
    beside.heartbeat = start_heartbeat(&agent);
    follow_stored_caps(&agent, store(&settings).is_shared(), &beside.heartbeat).await?;
    beside.webhooks = start_webhooks(&agent, store(&settings).is_shared());
    actix_web::rt::spawn(crate::agent::paused::watch(
        agent.clone(),
        beside.heartbeat.clone(),
    ));
    if let Some(path) = access.users_file() {
        tracing::info!(users_file = %path.display(), "people read from the users file");
        let paused = agent.paused.clone();
        actix_web::rt::spawn(crate::access::watch(access.clone(), move || paused.poke()));
    }
    let state = ServerState::new(agent, access);
    crate::console::oidc::recall(&state).await?;
    let (server, addr) = crate::http::server(state.clone())?;
    beside.handle = Some(server.handle());
    let done = actix_web::rt::spawn(server);
    tracing::info!(%addr, instance = state.agent.runs.instance().id(), "rummy listening");
    first_run::log_console(&state.agent, addr).await;
    Ok(RunningServer {
        addr,
        state,
        done,
        beside,
        _home: home,
    })
}

/// The agent's shared context: the database opened, this instance drawn, and on a shared
/// store the bus connected to the hubs and the lease holder; what arrives on the bus comes
/// out of the receiver returned.
fn agent_context(
    settings: &Settings,
    plugins: Plugins,
    mcp: McpServers,
    access: &Access,
    keyring: Keyring,
) -> anyhow::Result<(AgentContext, UnboundedReceiver<BusMessage>)> {
    let metrics = Arc::new(Metrics::default());
    let hubs = HubRegistry::new(metrics.work());
    let webhooks = Webhooks::default();
    let db = open_db(settings, &plugins, &hubs, &webhooks, metrics.work())?;
    let instance = Instance::new(Duration::from_secs(settings.storage.lease_ttl_secs))
        .map_err(|error| anyhow::anyhow!("cannot draw this instance's id: {error}"))?;
    let lease_holder = LeaseHolder::default();
    // The listener's thread is no actor's: what arrives crosses to the runtime, which may
    // start a project's hub or execute a client's call.
    let (received, arrived) = tokio::sync::mpsc::unbounded_channel();
    if let Store::Postgres(url) = store(settings) {
        let bus = FrameBus::start(&url, instance.id(), metrics.work(), move |message| {
            let _ = received.send(message);
        })?;
        hubs.connect_bus(bus.clone());
        lease_holder.connect(bus);
    }
    plugins.clients().connect(hubs.clone());
    let admission = if store(settings).is_shared() {
        LoopAdmission::shared(&settings.agent, db.clone(), instance.id())
    } else {
        LoopAdmission::new(&settings.agent)
    };
    let keyring = Arc::new(keyring);
    let ledger = Ledger::new(
        db.clone(),
        Arc::clone(&keyring),
        metrics.clone(),
        spending(settings, access, &hubs)?,
        TokenMath::new(settings.tokens.divisor),
    );
    let llm = LlmProviders::start(provider_settings(settings), ledger)?;
    let presence = Presence::new(instance.id(), db.clone(), hubs.clone());
    let inbox = Inbox::new(db.clone(), hubs.clone());
    let watching = inbox.clone();
    hubs.watch_frames(Box::new(move |project, frame| watching.saw(project, frame)));
    let secrets = SecretStore::new(db.clone(), keyring);
    mcp.connect_store(secrets.clone());
    let agent = AgentContext {
        settings: Arc::new(settings.clone()),
        presence,
        inbox,
        live: LiveText::new(Arc::clone(metrics.work())),
        db: db.clone(),
        commands: ServerCommands::new(
            settings,
            hubs.clone(),
            instance.id(),
            db.clone(),
            crate::egress::sealed_credentials(secrets.clone()),
        ),
        hubs,
        runs: RunRegistry::new(instance),
        lease_holder,
        admission,
        llm,
        plugins: Arc::new(plugins),
        mcp,
        budget: BudgetActor::default().start(),
        projects: ProjectRegistry::default(),
        metrics,
        web: WebClient::new(web_options(settings))?,
        may_accept: may_accept(access),
        webhooks,
        paused: Resumer::default(),
        secrets,
    };
    Ok((agent, arrived))
}

/// Whether a person may accept a proposal in a project, by `access` as last read: the
/// role and the projects `run/resolve` needs (the operator may).
fn may_accept(access: &Access) -> MayAccept {
    let access = access.clone();
    Arc::new(move |person, project| {
        let Some(name) = person else {
            return true;
        };
        access
            .grant(&Caller::Person(Arc::from(name)))
            .is_ok_and(|grant| {
                grant.require(Role::Member, "run/resolve").is_ok() && grant.open(project).is_ok()
            })
    })
}

/// The spend caps: the server's and the projects' from `settings`, the people's as `access`
/// reads the users file, periods cut by the server's clock, notices sent to the hubs.
fn spending(settings: &Settings, access: &Access, hubs: &HubRegistry) -> anyhow::Result<Spending> {
    let (server, projects) = settings.caps.checked()?;
    let (access, capped) = (access.clone(), access.clone());
    let book = CapBook {
        server,
        projects,
        warning_percent: settings.caps.warning_percent,
        people: Box::new(move |name| access.caps_of(name)),
        anyone_capped: Box::new(move || capped.anyone_capped()),
        stored: StoredCaps::default(),
    };
    let hubs = hubs.clone();
    let notify = Arc::new(move |project, notice| {
        let notification = match notice {
            CapNotice::Reached(cap) => UiNotification::CapReached(cap.view()),
            CapNotice::Warning(cap) => UiNotification::CapWarning(cap.view()),
        };
        hubs.broadcast(project, notification);
    });
    Ok(Spending::new(book, Clock::default(), notify))
}

/// Opens the store with the limits the settings give, its entry changes handed to the
/// plugins that watch them and its notifications, once written, to the hubs (and shown to
/// the webhooks' worker), its work counted in `work`.
fn open_db(
    settings: &Settings,
    plugins: &Plugins,
    hubs: &HubRegistry,
    webhooks: &Webhooks,
    work: &Arc<WorkCounters>,
) -> Result<DbHandle, DbError> {
    let hubs = hubs.clone();
    let webhooks = webhooks.clone();
    DbHandle::open(
        &store(settings),
        DbOptions {
            setup: connection_setup(settings),
            writer_limits: settings.work.writer_limits(),
            request_limits: settings.work.request_limits(),
            readers: settings.work.readers,
            rpc_log: rpc_log_bounds(settings),
            entry_changes: entry_changed(plugins),
            events: settings.server.event_bounds(),
            sent: Some(EventSink::new(move |events| {
                webhooks.saw(&events);
                hubs.offer(events);
            })),
            work: Arc::clone(work),
        },
    )
}

/// Seals again under the current server key every stored secret an old key sealed (the
/// rotation's second half: docs/src/secrets.md).
async fn reseal_secrets(agent: &AgentContext) -> anyhow::Result<()> {
    let resealed = agent
        .secrets
        .reseal_all()
        .await
        .context("re-sealing stored secrets under the current server key")?;
    if resealed > 0 {
        tracing::info!(
            secrets = resealed,
            key.id = agent.secrets.keyring().current_id(),
            "stored secrets re-sealed under the current server key"
        );
    }
    Ok(())
}

/// Gets the server ready to run commands: when the default or any project runs them here,
/// the start fails unless they can be confined (or `RUMMY_SANDBOX=off`).
async fn prepare_commands(agent: &AgentContext) -> anyhow::Result<()> {
    let stored = agent.db.read(project_settings::all).await?;
    let server = &agent.settings.commands;
    let needed = server.run == RunCommands::Server
        || stored.iter().any(|json| {
            serde_json::from_str::<ProjectChoice>(json)
                .is_ok_and(|choice| choice.policy(server).commands == RunCommands::Server)
        });
    let alive = agent
        .db
        .read(|conn| instances::alive(conn, now_ms()))
        .await?;
    agent
        .commands
        .prepare(needed, alive)
        .await
        .map_err(|reason| anyhow::anyhow!(reason))
}

/// Starts the webhooks' delivery worker (`webhooks::worker`); the token returned stops it.
fn start_webhooks(agent: &AgentContext, shared: bool) -> CancellationToken {
    let stop = CancellationToken::new();
    let settings = &agent.settings;
    let public_url = settings.server.public_url.trim();
    let worker = Worker {
        db: agent.db.clone(),
        hooks: agent.webhooks.clone(),
        settings: settings.webhooks.clone(),
        instance: agent.runs.instance().id().to_owned(),
        shared,
        beat: agent.runs.instance().beat_interval(),
        links: (!public_url.is_empty()).then(|| ConsoleLinks {
            base: format!("{public_url}{}", settings.server.console_path),
        }),
    };
    actix_web::rt::spawn({
        let stop = stop.clone();
        async move {
            if let Err(error) = worker.run(stop).await {
                tracing::error!(%error, "webhooks are not delivered");
            }
        }
    });
    stop
}

/// Starts this instance's heartbeat; when another instance found this one expired, the
/// runs it still runs are cancelled, and when it released a dead instance, the paused loops
/// are looked at again (a dead instance's timer is this one's now). The token returned stops
/// the heartbeat (and the watch of paused loops).
fn start_heartbeat(agent: &AgentContext) -> CancellationToken {
    let heartbeat = CancellationToken::new();
    let runs = agent.runs.clone();
    let paused = agent.paused.clone();
    let presence = agent.presence.clone();
    actix_web::rt::spawn(agent.runs.instance().clone().beat(
        agent.db.clone(),
        heartbeat.clone(),
        move || runs.cancel_all(),
        move || paused.poke(),
        move |vacated| {
            let presence = presence.clone();
            actix_web::rt::spawn(async move { presence.retell(vacated).await });
        },
    ));
    heartbeat
}

/// Takes the spend caps admins set at run time; on a shared store, reads them again every
/// heartbeat until `stop` (another instance may set one), looking at the paused loops again
/// when they changed. Learns whether a person's own key may pay (`llm::personal_keys`).
async fn follow_stored_caps(
    agent: &AgentContext,
    shared: bool,
    stop: &CancellationToken,
) -> anyhow::Result<()> {
    let stored = agent.llm.spending().book().stored.clone();
    stored.reload(&agent.db).await?;
    agent
        .llm
        .spending()
        .personal_keys()
        .learn(&agent.db, shared)
        .await?;
    if shared {
        let paused = agent.paused.clone();
        actix_web::rt::spawn(crate::llm::follow_stored_caps(
            stored,
            agent.db.clone(),
            agent.runs.instance().beat_interval(),
            stop.clone(),
            move || paused.poke(),
        ));
    }
    Ok(())
}

/// Runs the server until SIGTERM or SIGINT, then stops it gracefully.
pub async fn serve(settings: Settings) -> anyhow::Result<()> {
    let running = start(settings).await?;
    wait_for_signal().await;
    tracing::info!("stopping");
    running.stop().await;
    Ok(())
}

async fn wait_for_signal() {
    let interrupt = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut terminate =
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(terminate) => terminate,
                Err(error) => {
                    tracing::warn!(%error, "cannot listen for SIGTERM");
                    let _ = interrupt.await;
                    return;
                }
            };
        tokio::select! {
            _ = interrupt => {}
            _ = terminate.recv() => {}
        }
    }
    #[cfg(not(unix))]
    {
        let _ = interrupt.await;
    }
}

/// Runs a stopped server left executing end aborted — on a store other instances share,
/// those of instances whose leases expired (`cluster::Instance::join`) —, and this instance
/// joins; their loops wait, pending, until a client drives the run again, so no LLM call is
/// spent that no client asked for.
async fn recover_interrupted_runs(agent: &AgentContext, shared: bool) -> Result<(), DbError> {
    let aborted = agent.runs.instance().join(&agent.db, shared).await?;
    if aborted > 0 {
        tracing::info!(
            runs = aborted,
            "runs interrupted by the last stop are aborted"
        );
    }
    Ok(())
}

/// Hands on what other instances sent: frames to the hubs, commands to the `LeaseHolder`
/// (a call executed by `rpc::handlers::held`); until the bus stops.
async fn take_from_the_bus(agent: AgentContext, mut arrived: UnboundedReceiver<BusMessage>) {
    while let Some(message) = arrived.recv().await {
        match message {
            BusMessage::Frame(frame) => agent.hubs.relayed(frame),
            BusMessage::Broadcast(broadcast) => agent.hubs.relayed_broadcast(broadcast),
            BusMessage::Inbox(inbox) => agent.inbox.relayed(inbox),
            BusMessage::Command(command) => {
                let agent = agent.clone();
                actix_web::rt::spawn(async move {
                    let executing = agent.clone();
                    agent
                        .lease_holder
                        .take(command, |call| held::execute(executing, call))
                        .await;
                });
            }
        }
    }
}

/// Finished runs and transcripts older than `RUMMY_RETENTION_DAYS` are removed at start, and
/// the RPC log is pruned to its bounds (which it is again with each batch of rows it gets).
async fn purge_expired(agent: &AgentContext) -> anyhow::Result<()> {
    let settings = &agent.settings;
    let days = u32::try_from(settings.storage.retention_days).unwrap_or(u32::MAX);
    let bounds = rpc_log_bounds(settings);
    let events = settings.server.event_bounds();
    let (runs, rpc_log, notifications) = agent
        .db
        .call(move |conn| {
            let runs = queries::retention::purge_older_than(conn, days)?;
            let rpc_log = queries::rpc_log::prune(conn, bounds)?;
            let notifications = queries::run_events::prune_all(conn, &events, now_ms())?;
            Ok((runs, rpc_log, notifications))
        })
        .await?;
    let transcripts = match days {
        0 => 0,
        _ => {
            let folder = transcripts_folder(settings);
            let age = Duration::from_secs(u64::from(days) * SECONDS_PER_DAY);
            web::block(move || transcript::purge_older_than(&folder, age))
                .await?
                .map_err(|error| anyhow::anyhow!("cannot purge transcripts: {error}"))?
        }
    };
    if runs + rpc_log + notifications + transcripts > 0 {
        tracing::info!(
            runs,
            rpc_log,
            notifications,
            transcripts,
            days,
            "purged old data"
        );
    }
    Ok(())
}

/// How much of the RPC log is kept (`RUMMY_RPC_LOG_MAX_DAYS`, `RUMMY_RPC_LOG_MAX_ROWS`).
fn rpc_log_bounds(settings: &Settings) -> RpcLogBounds {
    RpcLogBounds {
        max_days: settings.audit.rpc_log_max_days,
        max_rows: settings.audit.rpc_log_max_rows,
    }
}

/// Every tool's scheme is in the registry, so its entries are visible as it says.
async fn register_schemes(agent: &AgentContext) -> Result<(), DbError> {
    let rows = agent.plugins.scheme_rows();
    agent
        .db
        .call(move |conn| {
            for row in &rows {
                queries::schemes::register_scheme(conn, row)?;
            }
            Ok(())
        })
        .await
}

/// The model aliases of the settings are in the catalogue.
async fn seed_models(agent: &AgentContext) -> Result<(), DbError> {
    for (alias, seed) in &agent.settings.models {
        let form = ModelInsertForm {
            alias: alias.clone(),
            actual: seed.actual.clone(),
            context_length: seed
                .context_length
                .map(|length| i32::try_from(length).unwrap_or(i32::MAX)),
            price: seed
                .price
                .as_ref()
                .map(ModelPrice::checked)
                .transpose()
                .map_err(|error| DbError::Invalid(format!("models.{alias}.price: {error}")))?,
        };
        agent
            .db
            .call(move |conn| queries::models::upsert_model(conn, &form))
            .await?;
    }
    Ok(())
}

/// Where the writer's committed changes to entries become `entry.changed` events; none
/// (and no change log) when no plugin observes that hook.
fn entry_changed(plugins: &Plugins) -> Option<EntryChangeSink> {
    let plugins = plugins.clone();
    plugins.observes(Hook::EntryChanged).then(|| {
        EntryChangeSink::new(move |changes| {
            for change in changes {
                plugins.emit(Event::EntryChanged {
                    run: change.run_id,
                    entry: plugins.event_entry(change.entry_id, &change.path, change.turn),
                    change: change.change_type,
                });
            }
        })
    })
}

/// The bundled plugins (tools, packet sections, each run's transcript under
/// `$RUMMY_HOME/transcripts`, memory across runs) but those `RUMMY_PLUGINS_DISABLED` names.
fn bundled_plugins(settings: &Settings) -> Plugins {
    Plugins::new(ToolSettings {
        token_divisor: settings.tokens.divisor,
        max_entry_tokens: i32::try_from(settings.tokens.max_entry_tokens).unwrap_or(i32::MAX),
        max_commands: settings.agent.max_commands.max(1),
    })
    .disabling(&settings.plugins.disabled)
    .with_bundled()
    .plugin(Transcript::new(transcripts_folder(settings)))
    .plugin(Memory::new(settings.memory.clone()))
}

/// `$RUMMY_HOME/transcripts`: one folder per project, one file per run.
fn transcripts_folder(settings: &Settings) -> PathBuf {
    settings.storage.home.join("transcripts")
}

/// What every database connection is set up with.
fn connection_setup(settings: &Settings) -> ConnectionSetup {
    ConnectionSetup {
        token_divisor: settings.tokens.divisor,
        mmap_bytes: settings.storage.mmap_mb.saturating_mul(1024 * 1024),
    }
}

/// What the web layer needs of the settings.
fn web_options(settings: &Settings) -> WebOptions {
    let searxng_url = settings.search.searxng_url.trim();
    WebOptions {
        // `Settings::load` refused a URL that does not parse.
        searxng_url: (!searxng_url.is_empty())
            .then(|| reqwest::Url::parse(searxng_url).ok())
            .flatten(),
        timeout: Duration::from_millis(settings.web.timeout_ms.max(1)),
        max_bytes: settings.web.max_bytes,
        max_redirects: settings.web.max_redirects,
        allow_nets: settings.web.allow_nets.clone(),
    }
}

/// What the LLM layer needs of the settings.
fn provider_settings(settings: &Settings) -> LlmOptions {
    let providers = &settings.providers;
    let text = |value: &str| (!value.is_empty()).then(|| value.to_string());
    let concurrency = providers.concurrency.max(1);
    LlmOptions {
        openai_base_url: text(&providers.openai_base_url),
        openai_api_key: text(providers.openai_api_key.expose()),
        ollama_base_url: text(&providers.ollama_base_url),
        openrouter_base_url: providers.openrouter_base_url.clone(),
        openrouter_api_key: text(providers.openrouter_api_key.expose()),
        http_referer: text(&providers.http_referer),
        x_title: text(&providers.x_title),
        xai_base_url: text(&providers.xai_base_url),
        xai_api_key: text(providers.xai_api_key.expose()),
        openrouter_context_size: u32::try_from(providers.context_size)
            .ok()
            .filter(|size| *size > 0),
        fetch_timeout: Duration::from_millis(providers.fetch_timeout_ms.max(1)),
        retry: RetryPolicy {
            max_attempts: providers.attempts.max(1),
            base_delay: Duration::from_millis(providers.retry_base_ms),
            max_delay: Duration::from_secs(60),
        },
        concurrency: ConcurrencyLimits {
            openai: concurrency,
            ollama: concurrency,
            openrouter: concurrency,
            xai: concurrency,
        },
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::path::Path;

    use super::*;

    #[test]
    fn no_bundled_plugin_observes_entry_changes_so_the_writer_logs_none() {
        let home = tempfile::tempdir().unwrap();
        let env = HashMap::from([(
            "RUMMY_HOME".to_string(),
            home.path().to_str().unwrap().to_string(),
        )]);
        let settings = Settings::load(&env, Path::new("config")).unwrap();
        let plugins = bundled_plugins(&settings);
        assert!(
            plugins.observes(Hook::TurnResponse),
            "the transcript observes"
        );
        assert!(entry_changed(&plugins).is_none());
    }
}
