//! Builds the actors and the HTTP server, and owns the shared [`AppState`].

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use actix::{Actor, Addr};
use actix_web::dev::ServerHandle;
use actix_web::{web, App, HttpServer};
use serde_json::Value;

use diesel::SqliteConnection;

use crate::agent::RunRegistry;
use crate::budget::BudgetActor;
use crate::config::Settings;
use crate::db::actor::WriterOptions;
use crate::db::actor::{CheckReady, LogRpc, TruncateWal};
use crate::db::ids::{ProjectId, RunId};
use crate::db::models::{ModelInsertForm, RpcLogInsertForm};
use crate::db::{self, queries, ConnectionSetup, DbActor, DbError, DbWatch, ReadPool, Transact};
use crate::error::AppError;
use crate::hub::HubRegistry;
use crate::llm::{ConcurrencyLimits, LlmProviders, ProviderSettings, RetryPolicy};
use crate::metrics::Metrics;
use crate::parser::Command;
use crate::plugins::assembly::Assembly;
use crate::plugins::dispatch::PreparedWork;
use crate::plugins::events::Events;
use crate::plugins::tool::ToolSettings;
use crate::plugins::transcript::{self, Transcript};
use crate::plugins::Plugins;
use crate::project_actor::ProjectRegistry;
use crate::rpc::dispatch::Reply;
use crate::rpc::envelope::Request;
use crate::rpc::methods::ToolCatalogue;
use crate::ws::registry::ConnectionRegistry;

/// Seconds in a day of `RUMMY_RETENTION_DAYS`.
const SECONDS_PER_DAY: u64 = 86_400;

/// What every handler and actor shares. Cheap to clone.
#[derive(Clone)]
pub struct AppState {
    /// The settings built in `main`.
    pub settings: Arc<Settings>,
    /// The database actor (the single writer).
    pub db: Addr<DbActor>,
    /// How long the writer's current unit of work has run (for `/readyz`).
    pub db_watch: DbWatch,
    /// Read-only connections for pattern reads beside the writer.
    pub readers: ReadPool,
    /// Notification fan-out per project.
    pub hubs: HubRegistry,
    /// Open connections.
    pub connections: ConnectionRegistry,
    /// Process counters.
    pub metrics: Arc<Metrics>,
    /// Runs executing now, server-wide.
    pub runs: RunRegistry,
    /// One actor per LLM provider.
    pub llm: LlmProviders,
    /// The tool plugins (handlers, views, docs).
    pub plugins: Arc<Plugins>,
    /// The assembly plugins (the tags of the packet).
    pub assembly: Arc<Assembly>,
    /// The calibration of packet estimates, per run with work under way.
    pub budget: Addr<BudgetActor>,
    /// One actor per project root: file scans.
    pub projects: ProjectRegistry,
    /// The observers of runs (the transcript).
    pub events: Arc<Events>,
}

/// A server started by [`start`].
pub struct RunningServer {
    /// The address it listens on (the real port when 0 was asked for).
    pub addr: SocketAddr,
    /// Stops it.
    pub handle: ServerHandle,
    /// Its shared state.
    pub state: AppState,
    /// Resolves when the server has stopped.
    pub done: actix_web::rt::task::JoinHandle<std::io::Result<()>>,
}

impl RunningServer {
    /// Stops accepting, closes every connection with 1001, lets in-flight writes finish,
    /// then empties the database's write-ahead log.
    pub async fn stop(self) {
        self.state.connections.shutdown_all();
        self.handle.stop(true).await;
        let _ = self.done.await;
        self.state.readers.close();
        match self.state.db.send(TruncateWal).await {
            Ok(Ok(true)) => {}
            Ok(Ok(false)) => tracing::warn!("a reader kept the database log from being truncated"),
            Ok(Err(error)) => tracing::warn!(%error, "cannot truncate the database log"),
            Err(error) => {
                tracing::warn!(%error, "the database stopped before its log was truncated")
            }
        }
    }
}

/// Applies pending migrations to the configured database; returns how many ran.
pub fn migrate(settings: &Settings) -> Result<(), DbError> {
    if let Some(parent) = settings.storage.db_path.parent() {
        std::fs::create_dir_all(parent)
            .map_err(|error| DbError::Internal(format!("{}: {error}", parent.display())))?;
    }
    let mut connection =
        db::open_connection(&settings.storage.db_path, connection_setup(settings))?;
    db::run_migrations(&mut connection)
}

/// Opens the database, seeds the catalogue and starts listening.
pub async fn start(settings: Settings) -> anyhow::Result<RunningServer> {
    std::fs::create_dir_all(settings.storage.home.join("skills"))?;
    std::fs::create_dir_all(settings.storage.home.join("personas"))?;
    let db_watch = DbWatch::default();
    let setup = connection_setup(&settings);
    let writer = WriterOptions {
        setup,
        limits: settings.work.writer_limits(),
        watch: db_watch.clone(),
    };
    let db = db::start_db(&settings.storage.db_path, writer)?;
    let readers = ReadPool::new(&settings.storage.db_path, setup, settings.work.readers);
    let state = AppState {
        settings: Arc::new(settings.clone()),
        db,
        db_watch,
        readers,
        hubs: HubRegistry::default(),
        connections: ConnectionRegistry::default(),
        metrics: Arc::new(Metrics::default()),
        runs: RunRegistry::default(),
        llm: LlmProviders::start(provider_settings(&settings))?,
        plugins: Arc::new(Plugins::bundled(ToolSettings {
            token_divisor: settings.tokens.divisor,
            max_entry_tokens: i32::try_from(settings.tokens.max_entry_tokens).unwrap_or(i32::MAX),
            max_commands: settings.agent.max_commands.max(1),
        })),
        assembly: Arc::new(Assembly::bundled()),
        budget: BudgetActor::default().start(),
        projects: ProjectRegistry::default(),
        events: Arc::new(bundled_events(&settings)),
    };
    state.register_schemes().await?;
    state.purge_expired().await?;
    state.seed_models().await?;
    state.recover_interrupted_runs().await?;
    let data = web::Data::new(state.clone());
    let max_frame = state.settings.server.max_frame_bytes;
    let server = HttpServer::new(move || {
        App::new()
            .app_data(data.clone())
            .app_data(web::PayloadConfig::new(max_frame))
            .configure(crate::http::configure)
    })
    .disable_signals()
    .tcp_nodelay(true)
    .shutdown_timeout(10)
    .bind((state.settings.server.host, state.settings.server.port))?;
    let addr = server
        .addrs()
        .first()
        .copied()
        .ok_or_else(|| anyhow::anyhow!("the server bound no address"))?;
    let server = server.run();
    let handle = server.handle();
    let done = actix_web::rt::spawn(server);
    tracing::info!(%addr, "rummy listening");
    Ok(RunningServer {
        addr,
        handle,
        state,
        done,
    })
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

impl AppState {
    /// Runs a stopped server left executing end aborted; their loops wait, pending, until a
    /// client drives the run again, so no LLM call is spent that no client asked for.
    async fn recover_interrupted_runs(&self) -> Result<(), AppError> {
        let aborted = self.db_call(queries::runs::recover_after_restart).await?;
        if aborted > 0 {
            tracing::info!(
                runs = aborted,
                "runs interrupted by the last stop are aborted"
            );
        }
        Ok(())
    }

    /// Finished runs, RPC log rows and transcripts older than `RUMMY_RETENTION_DAYS` are
    /// removed at start.
    async fn purge_expired(&self) -> Result<(), AppError> {
        let days = u32::try_from(self.settings.storage.retention_days).unwrap_or(u32::MAX);
        let purged = self
            .db_call(move |conn| queries::retention::purge_older_than(conn, days))
            .await?;
        let transcripts = match days {
            0 => 0,
            _ => {
                let folder = transcripts_folder(&self.settings);
                let age = Duration::from_secs(u64::from(days) * SECONDS_PER_DAY);
                blocking(move || {
                    transcript::purge_older_than(&folder, age).map_err(|error| {
                        AppError::Internal(format!("cannot purge transcripts: {error}"))
                    })
                })
                .await?
            }
        };
        if purged.runs + purged.rpc_log + transcripts > 0 {
            tracing::info!(
                runs = purged.runs,
                rpc_log = purged.rpc_log,
                transcripts,
                days,
                "purged old data"
            );
        }
        Ok(())
    }

    /// Every tool's scheme is in the registry, so its entries are visible as it says.
    async fn register_schemes(&self) -> Result<(), AppError> {
        let rows = self.plugins.scheme_rows();
        self.db_call(move |conn| {
            for row in &rows {
                queries::schemes::register_scheme(conn, row)?;
            }
            Ok(())
        })
        .await
    }

    async fn seed_models(&self) -> Result<(), AppError> {
        for (alias, seed) in &self.settings.models {
            let form = ModelInsertForm {
                alias: alias.clone(),
                actual: seed.actual.clone(),
                context_length: seed
                    .context_length
                    .map(|length| i32::try_from(length).unwrap_or(i32::MAX)),
            };
            self.db_call(move |conn| queries::models::upsert_model(conn, &form))
                .await?;
        }
        Ok(())
    }

    /// The registry's tools as RPC methods.
    pub fn tool_catalogue(&self) -> ToolCatalogue<'_> {
        ToolCatalogue {
            tools: &self.plugins,
            search_available: self.settings.search_available(),
        }
    }

    /// Runs `work` on the database thread, in a transaction, and waits for its result.
    pub async fn db_call<T, F>(&self, work: F) -> Result<T, AppError>
    where
        F: FnOnce(&mut SqliteConnection) -> Result<T, DbError> + Send + 'static,
        T: Send + 'static,
    {
        Ok(self.db.send(Transact::new(work)).await.map_err(mailbox)??)
    }

    /// Runs `work` over a read-only connection on the blocking pool, with the request limits
    /// for its pattern work: for reads that evaluate patterns, which must not hold the writer.
    pub async fn db_read<T, F>(&self, work: F) -> Result<T, AppError>
    where
        F: FnOnce(&mut SqliteConnection) -> Result<T, DbError> + Send + 'static,
        T: Send + 'static,
    {
        let limits = self.settings.work.request_limits();
        Ok(self.readers.read(limits, work).await?)
    }

    /// The body searches and edits of `commands`, computed beside the writer under the
    /// request limits, for the unit of work that then runs the commands to look up
    /// ([`PreparedWork::apply`]). A failure only means the writer computes them.
    pub async fn prepare_work(&self, run_id: RunId, commands: &[Command]) -> PreparedWork {
        if !commands.iter().any(PreparedWork::needed_for) {
            return PreparedWork::default();
        }
        let commands = commands.to_vec();
        let prepared = self
            .db_read(move |conn| PreparedWork::compute(conn, run_id, &commands))
            .await;
        prepared.unwrap_or_else(|error| {
            tracing::warn!(%error, "work not prepared beside the writer");
            PreparedWork::default()
        })
    }

    /// Whether the database answers and its migrations are applied. Not while the writer
    /// has been busy with one unit of work for longer than `RUMMY_DB_STALL_MS`: that is
    /// read from its watchdog, and the probe itself waits no longer than that.
    pub async fn database_ready(&self) -> Result<(), AppError> {
        let stall = Duration::from_millis(self.settings.work.stall_ms);
        if let Some(busy) = self.db_watch.busy_for().filter(|busy| *busy > stall) {
            return Err(AppError::Internal(format!(
                "the database thread has been busy with one unit of work for {} ms",
                busy.as_millis()
            )));
        }
        let ready = tokio::time::timeout(stall, self.db.send(CheckReady {}))
            .await
            .map_err(|_| {
                AppError::Internal(format!(
                    "the database thread did not answer within {} ms",
                    stall.as_millis()
                ))
            })?
            .map_err(mailbox)??;
        if ready {
            Ok(())
        } else {
            Err(AppError::Internal("migrations are pending".into()))
        }
    }

    /// Runs counted by stored status, for `/metrics`.
    pub async fn runs_by_status(&self) -> Result<Vec<(i32, i64)>, AppError> {
        let counts = self.db_call(queries::runs::count_by_status).await?;
        Ok(counts
            .into_iter()
            .map(|(status, count)| (status.code(), count))
            .collect())
    }

    /// Records one call in `rpc_log`, without waiting.
    pub fn audit_rpc(
        &self,
        project: Option<ProjectId>,
        request: &Request,
        outcome: &Result<Reply, AppError>,
    ) {
        let (result, error) = match outcome {
            Ok(reply) => (Some(reply.result.to_string()), None),
            Err(error) => (None, Some(error.to_string())),
        };
        self.db.do_send(LogRpc {
            form: RpcLogInsertForm {
                project_id: project,
                method: request.method.clone(),
                rpc_id: request.id.as_ref().map(Value::to_string),
                params: Some(request.params.to_string()),
                result,
                error,
            },
        });
    }
}

/// The bundled observers: each run's transcript under `$RUMMY_HOME/transcripts`.
fn bundled_events(settings: &Settings) -> Events {
    let mut events = Events::default();
    events.register(Box::new(Transcript::new(transcripts_folder(settings))));
    events
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

/// What the LLM layer needs of the settings.
fn provider_settings(settings: &Settings) -> ProviderSettings {
    let providers = &settings.providers;
    let text = |value: &str| (!value.is_empty()).then(|| value.to_string());
    let concurrency = providers.concurrency.max(1);
    ProviderSettings {
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

/// Runs blocking file work on the blocking pool, never on an executor thread.
pub async fn blocking<T, F>(work: F) -> Result<T, AppError>
where
    F: FnOnce() -> Result<T, AppError> + Send + 'static,
    T: Send + 'static,
{
    web::block(work)
        .await
        .map_err(|error| AppError::Internal(format!("blocking task failed: {error}")))?
}

/// The DB actor's mailbox is gone: the server is stopping.
pub fn mailbox(error: actix::MailboxError) -> AppError {
    AppError::Internal(format!("database unavailable: {error}"))
}
