//! `rummy-load fake-llm`: an OpenAI-compatible responder that answers every chat completion
//! at once with `<summarize>ok</summarize>`, so a loop ends after one turn and what is
//! measured is the server's own per-turn work, not model time.
//!
//! `GET /v1/models` and `GET /props` report the context size (for discovery);
//! `GET /stats` reports how many completions were served (for turns per second).

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use actix_web::dev::ServerHandle;
use actix_web::rt::task::JoinHandle;
use actix_web::{web, App, HttpResponse, HttpServer};
use serde_json::{json, Value};

/// The whole reply of every completion.
pub const REPLY: &str = "<summarize>ok</summarize>";

/// The model id `/v1/models` lists.
pub const MODEL_ID: &str = "rummy-load-fake";

/// Request bodies up to this size are accepted (a turn's packet can be large).
const MAX_REQUEST_BYTES: usize = 64 * 1024 * 1024;

/// Characters per token of the usage estimate.
const CHARS_PER_TOKEN: usize = 4;

/// What the responder shares between requests.
struct Shared {
    context_size: u64,
    completions: AtomicU64,
}

/// A started responder.
pub struct FakeLlm {
    /// Where it listens.
    pub addr: SocketAddr,
    handle: ServerHandle,
    running: JoinHandle<std::io::Result<()>>,
}

impl FakeLlm {
    /// Binds `addr` (port 0 picks one) and starts answering, inside an actix system.
    pub fn start(addr: SocketAddr, context_size: u64) -> anyhow::Result<FakeLlm> {
        let shared = web::Data::new(Shared {
            context_size,
            completions: AtomicU64::new(0),
        });
        let server = HttpServer::new(move || {
            App::new()
                .app_data(shared.clone())
                .app_data(web::PayloadConfig::new(MAX_REQUEST_BYTES))
                .route("/v1/chat/completions", web::post().to(chat_completion))
                .route("/v1/models", web::get().to(models))
                .route("/props", web::get().to(props))
                .route("/stats", web::get().to(stats))
        })
        .workers(1)
        .disable_signals()
        .shutdown_timeout(1)
        .bind(addr)?;
        let addr = server
            .addrs()
            .first()
            .copied()
            .ok_or_else(|| anyhow::anyhow!("the fake LLM bound no address"))?;
        let server = server.run();
        let handle = server.handle();
        let running = actix_web::rt::spawn(server);
        Ok(FakeLlm {
            addr,
            handle,
            running,
        })
    }

    /// Stops answering and waits until the server has stopped.
    pub async fn stop(self) -> anyhow::Result<()> {
        self.handle.stop(true).await;
        self.running.await??;
        Ok(())
    }
}

/// Serves on `addr` until `lifetime` has passed or the process is interrupted.
pub async fn serve(addr: SocketAddr, context_size: u64, lifetime: Duration) -> anyhow::Result<()> {
    let fake = FakeLlm::start(addr, context_size)?;
    eprintln!("fake LLM listening on http://{}", fake.addr);
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = tokio::time::sleep(lifetime) => {}
    }
    fake.stop().await
}

async fn chat_completion(shared: web::Data<Shared>, body: web::Bytes) -> HttpResponse {
    let Ok(request) = serde_json::from_slice::<Value>(&body) else {
        return HttpResponse::BadRequest().json(
            json!({"error": {"message": "the body is not JSON", "type": "invalid_request"}}),
        );
    };
    let number = shared.completions.fetch_add(1, Ordering::Relaxed) + 1;
    HttpResponse::Ok().json(completion(&request, number))
}

/// The completion answering `request`, the `number`th served.
fn completion(request: &Value, number: u64) -> Value {
    let model = request
        .get("model")
        .and_then(Value::as_str)
        .unwrap_or(MODEL_ID);
    let prompt_chars: usize = request
        .get("messages")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|message| message.get("content").and_then(Value::as_str))
        .map(|content| content.chars().count())
        .sum();
    let prompt_tokens = prompt_chars.div_ceil(CHARS_PER_TOKEN);
    let completion_tokens = REPLY.len().div_ceil(CHARS_PER_TOKEN);
    let created = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| since.as_secs());
    json!({
        "id": format!("chatcmpl-load-{number}"),
        "object": "chat.completion",
        "created": created,
        "model": model,
        "choices": [{
            "index": 0,
            "message": {"role": "assistant", "content": REPLY},
            "finish_reason": "stop",
        }],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    })
}

async fn models(shared: web::Data<Shared>) -> HttpResponse {
    HttpResponse::Ok().json(json!({
        "object": "list",
        "data": [{
            "id": MODEL_ID,
            "object": "model",
            "owned_by": "rummy-load",
            "context_length": shared.context_size,
        }],
    }))
}

async fn props(shared: web::Data<Shared>) -> HttpResponse {
    HttpResponse::Ok().json(json!({
        "default_generation_settings": {"n_ctx": shared.context_size},
        "model_path": MODEL_ID,
    }))
}

async fn stats(shared: web::Data<Shared>) -> HttpResponse {
    HttpResponse::Ok().json(json!({"completions": shared.completions.load(Ordering::Relaxed)}))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_completion_says_summarize_and_estimates_usage() {
        let request = json!({
            "model": "fake",
            "messages": [
                {"role": "system", "content": "12345678"},
                {"role": "user", "content": "abc"},
            ],
        });
        let reply = completion(&request, 3);
        assert_eq!(reply["choices"][0]["message"]["content"], REPLY);
        assert_eq!(reply["model"], "fake");
        assert_eq!(reply["id"], "chatcmpl-load-3");
        assert_eq!(reply["usage"]["prompt_tokens"], 3);
        assert_eq!(
            reply["usage"]["completion_tokens"],
            REPLY.len().div_ceil(CHARS_PER_TOKEN)
        );
    }

    #[test]
    fn a_request_without_model_gets_the_fake_id() {
        let reply = completion(&json!({"messages": []}), 1);
        assert_eq!(reply["model"], MODEL_ID);
        assert_eq!(reply["usage"]["prompt_tokens"], 0);
    }
}
