//! HTTP: the listener, the socket paths for plain requests, and the probes for
//! orchestrators.
//!
//! Every request asking for `Upgrade: websocket` goes to [`upgrade::serve`], which owns the
//! socket from then on; the routes here see only plain requests (a plain GET on the socket
//! path gets 426).

use std::io;
use std::net::SocketAddr;
use std::time::Duration;

use actix_http::HttpService;
use actix_service::{map_config, IntoServiceFactory, ServiceFactoryExt};
use actix_web::dev::{fn_service, AppConfig, Server};
use actix_web::http::{header, StatusCode};
use actix_web::{web, App, HttpRequest, HttpResponse};
use futures_util::FutureExt;

use crate::console;
use crate::db::queries;
use crate::metrics::StoreGauges;
use crate::ws::state::ServerState;
use crate::ws::{gate, upgrade};

/// Seconds a stopping server lets the loops it runs finish, and then its open connections.
pub(crate) const SHUTDOWN_SECS: u64 = 10;

/// Seconds a client has to close its side after the server's response, as actix-web's
/// `HttpServer` allows.
const CLIENT_DISCONNECT_SECS: u64 = 1;

/// Connections waiting to be accepted, as actix-web's `HttpServer` allows.
const BACKLOG: u32 = 1024;

/// Binds the configured address and builds the server (not yet running); returns it with
/// the address bound (the real port when 0 was asked for).
pub(crate) fn server(state: ServerState) -> io::Result<(Server, SocketAddr)> {
    let listener = bind(SocketAddr::new(
        state.agent.settings.server.host,
        state.agent.settings.server.port,
    ))?;
    let addr = listener.local_addr()?;
    let builder = Server::build()
        .disable_signals()
        .shutdown_timeout(SHUTDOWN_SECS);
    let shutdown = builder.graceful_shutdown_signal();
    let builder = builder.listen("rummy", listener, move || {
        let shutdown = shutdown.clone();
        let sockets = state.clone();
        let app = App::new()
            .app_data(web::Data::new(state.clone()))
            .app_data(web::PayloadConfig::new(
                state.agent.settings.server.max_frame_bytes,
            ))
            .configure(configure)
            .configure(|config| {
                console::configure(config, &state.agent.settings.server.console_path);
            })
            .into_factory()
            .map_err(|error| error.error_response());
        HttpService::build()
            .client_disconnect_timeout(Duration::from_secs(CLIENT_DISCONNECT_SECS))
            .tcp_nodelay(true)
            .local_addr(addr)
            .graceful_shutdown_signal(move || {
                let shutdown = shutdown.clone();
                async move { shutdown.notified().await }
            })
            .upgrade(fn_service(move |(request, framed)| {
                upgrade::serve(sockets.clone(), request, framed).map(Ok::<(), actix_http::Error>)
            }))
            // The app config's host only matters for URL generation, which rummy never does.
            .finish(map_config(app, |()| AppConfig::default()))
            .tcp()
    })?;
    Ok((builder.run(), addr))
}

fn bind(addr: SocketAddr) -> io::Result<std::net::TcpListener> {
    let socket = if addr.is_ipv4() {
        tokio::net::TcpSocket::new_v4()?
    } else {
        tokio::net::TcpSocket::new_v6()?
    };
    socket.set_reuseaddr(true)?;
    socket.bind(addr)?;
    socket.listen(BACKLOG)?.into_std()
}

/// Routes every plain HTTP path rummy serves.
fn configure(config: &mut web::ServiceConfig) {
    for path in upgrade::SOCKET_PATHS {
        config.route(path, web::get().to(websocket));
    }
    config
        .route("/healthz", web::get().to(healthz))
        .route("/readyz", web::get().to(readyz))
        .route("/metrics", web::get().to(metrics));
}

/// A plain GET on the socket path: the gates still answer first (a client learns it needs a
/// token before it learns it needs WebSocket). Upgrade requests never get here: the
/// listener hands them to [`upgrade::serve`].
async fn websocket(request: HttpRequest, app: web::Data<ServerState>) -> HttpResponse {
    if let Err(refusal) = gate::admit(request.head(), &app.access, &app.agent.settings.server) {
        return refusal.response();
    }
    HttpResponse::build(StatusCode::UPGRADE_REQUIRED)
        .insert_header((header::UPGRADE, "websocket"))
        .body("this endpoint speaks JSON-RPC over WebSocket")
}

async fn healthz() -> HttpResponse {
    HttpResponse::Ok().content_type("text/plain").body("ok\n")
}

/// Ready while the store answers in time and the server is not stopping (a stopping one
/// finishes its running loops first: a proxy sends new clients elsewhere meanwhile).
async fn readyz(state: web::Data<ServerState>) -> HttpResponse {
    if state.agent.runs.is_stopping() {
        return HttpResponse::ServiceUnavailable()
            .content_type("text/plain")
            .body("not ready: stopping\n");
    }
    let stall = Duration::from_millis(state.agent.settings.work.stall_ms);
    match state.agent.db.ready(stall).await {
        Ok(()) => HttpResponse::Ok()
            .content_type("text/plain")
            .body("ready\n"),
        Err(error) => HttpResponse::ServiceUnavailable()
            .content_type("text/plain")
            .body(format!("not ready: {error}\n")),
    }
}

/// Prometheus text; behind an admin's token (or the shared one), when tokens are set, unless
/// `RUMMY_METRICS_OPEN`. The store's gauges are read beside the writer, so a scrape never
/// waits for a unit of work.
async fn metrics(request: HttpRequest, state: web::Data<ServerState>) -> HttpResponse {
    if !state.agent.settings.server.metrics_open {
        if let Err(refusal) = gate::authenticate_admin(request.head(), &state.access) {
            return refusal.response();
        }
    }
    let store = state
        .agent
        .db
        .read(|conn| {
            let runs = queries::runs::count_by_status(conn)?;
            let queue = queries::loops::queue_depth(conn)?;
            let replay_bytes = queries::run_events::kept_bytes(conn)?;
            let gauges = StoreGauges {
                runs_by_status: runs
                    .into_iter()
                    .map(|(status, count)| (status.code(), count))
                    .collect(),
                loops_pending: queue.pending,
                loops_running: queue.running,
                runs_with_work: queue.runs,
            };
            Ok((gauges, replay_bytes))
        })
        .await;
    let (store, replay_bytes) = match store {
        Ok(read) => read,
        Err(error) => {
            return HttpResponse::ServiceUnavailable()
                .content_type("text/plain")
                .body(format!("cannot read the store: {error}\n"))
        }
    };
    let text = state.agent.metrics.render(
        &store,
        usize::try_from(replay_bytes).unwrap_or(usize::MAX),
        &state.agent.llm.metrics(),
    );
    HttpResponse::Ok()
        .content_type("text/plain; version=0.0.4")
        .body(text)
}
