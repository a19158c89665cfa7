//! `rummy-load fake-llm`: rummy's scripted LLM server with an empty script, answering every
//! chat completion at once with `<summarize>ok</summarize>`, so a loop ends after one turn
//! and what is measured is the server's own per-turn work, not model time.
//!
//! `GET /v1/models` and `GET /props` report the context size (for discovery);
//! `GET /stats` reports how many completions were served (for turns per second).

use std::io;
use std::net::SocketAddr;
use std::time::Duration;

use rummy::llm::fake::{FakeLlm, Reply, WhenExhausted};

/// The whole reply of every completion.
const REPLY: &str = "<summarize>ok</summarize>";

/// Binds `address` (port 0 picks one) and starts answering, inside an actix system; the
/// requests are counted, not kept.
pub fn start(address: SocketAddr, context_size: u32) -> io::Result<FakeLlm> {
    FakeLlm::builder([])
        .address(address)
        .n_ctx(context_size)
        .when_exhausted(WhenExhausted::Reply(Reply::new(REPLY)))
        .forget_requests()
        .try_start()
}

/// Serves on `address` until `lifetime` has passed or the process is interrupted.
pub async fn serve(
    address: SocketAddr,
    context_size: u32,
    lifetime: Duration,
) -> anyhow::Result<()> {
    let fake = start(address, context_size)?;
    eprintln!("fake LLM listening on {}", fake.base_url());
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = tokio::time::sleep(lifetime) => {}
    }
    fake.stop().await;
    Ok(())
}
