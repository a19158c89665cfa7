//! Plain HTTP: the WebSocket entry with its gates, and the probes for orchestrators.
//!
//! The gates run before the upgrade: a wrong or missing token gets 401, a browser
//! `Origin` not on the allow-list gets 403, a plain GET on the socket path gets 426.

use std::time::Duration;

use actix_web::{http::header, web, HttpRequest, HttpResponse};
use actix_web_actors::ws;

use crate::db::queries;
use crate::ws::session::WsSession;
use crate::ws::state::ServerState;

/// Routes every HTTP path rummy serves.
pub fn configure(config: &mut web::ServiceConfig) {
    config
        .route("/", web::get().to(websocket))
        .route("/rpc", web::get().to(websocket))
        .route("/healthz", web::get().to(healthz))
        .route("/readyz", web::get().to(readyz))
        .route("/metrics", web::get().to(metrics));
}

async fn websocket(
    request: HttpRequest,
    stream: web::Payload,
    app: web::Data<ServerState>,
) -> actix_web::Result<HttpResponse> {
    if let Some(token) = &app.agent.settings.server.auth_token {
        if !presents_token(&request, token.expose()) {
            return Ok(HttpResponse::Unauthorized()
                .insert_header((header::WWW_AUTHENTICATE, "Bearer"))
                .body("a valid bearer token is required"));
        }
    }
    if let Some(origin) = request.headers().get(header::ORIGIN) {
        let allowed = origin.to_str().is_ok_and(|origin| {
            app.agent
                .settings
                .server
                .allowed_origins
                .iter()
                .any(|allowed| allowed == origin)
        });
        if !allowed {
            return Ok(HttpResponse::Forbidden().body("origin not allowed"));
        }
    }
    if !is_upgrade(&request) {
        return Ok(
            HttpResponse::build(actix_web::http::StatusCode::UPGRADE_REQUIRED)
                .insert_header((header::UPGRADE, "websocket"))
                .body("this endpoint speaks JSON-RPC over WebSocket"),
        );
    }
    let session = WsSession::new(app.connections.next_id(), app.get_ref().clone());
    ws::WsResponseBuilder::new(session, &request, stream)
        .frame_size(app.agent.settings.server.max_frame_bytes)
        .start()
}

fn is_upgrade(request: &HttpRequest) -> bool {
    request
        .headers()
        .get(header::UPGRADE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| value.eq_ignore_ascii_case("websocket"))
}

fn presents_token(request: &HttpRequest, expected: &str) -> bool {
    let from_header = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.strip_prefix("Bearer "))
        .map(str::trim);
    if from_header.is_some_and(|token| constant_time_eq(token, expected)) {
        return true;
    }
    web::Query::<std::collections::HashMap<String, String>>::from_query(request.query_string())
        .ok()
        .and_then(|query| query.get("token").cloned())
        .is_some_and(|token| constant_time_eq(&token, expected))
}

/// Compares without an early exit, so timing does not reveal a matching prefix.
fn constant_time_eq(given: &str, expected: &str) -> bool {
    let given = given.as_bytes();
    let expected = expected.as_bytes();
    let mut difference = given.len() ^ expected.len();
    for (index, byte) in expected.iter().enumerate() {
        difference |= usize::from(byte ^ given.get(index).copied().unwrap_or(0));
    }
    difference == 0
}

async fn healthz() -> HttpResponse {
    HttpResponse::Ok().content_type("text/plain").body("ok\n")
}

async fn readyz(state: web::Data<ServerState>) -> HttpResponse {
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

async fn metrics(state: web::Data<ServerState>) -> HttpResponse {
    let runs = state
        .agent
        .db
        .call(queries::runs::count_by_status)
        .await
        .unwrap_or_default();
    let runs: Vec<(i32, i64)> = runs
        .into_iter()
        .map(|(status, count)| (status.code(), count))
        .collect();
    HttpResponse::Ok()
        .content_type("text/plain; version=0.0.4")
        .body(state.agent.metrics.render(&runs))
}

#[cfg(test)]
mod tests {
    use super::constant_time_eq;

    #[test]
    fn tokens_compare_exactly() {
        assert!(constant_time_eq("s3cret", "s3cret"));
        assert!(!constant_time_eq("s3cre", "s3cret"));
        assert!(!constant_time_eq("s3cret!", "s3cret"));
        assert!(!constant_time_eq("", "s3cret"));
    }
}
