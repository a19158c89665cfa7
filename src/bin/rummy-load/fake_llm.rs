//! `rummy-load fake-llm`: rummy's scripted LLM server with an empty script, answering every
//! chat completion at once, so what is measured is the server's own per-turn work, not model
//! time. A loop lasts `--turns N` turns: a turn whose `<progress turn="T">` is not a multiple
//! of N records a fact and says `<update>`, the others say `<summarize>ok</summarize>` (so
//! every loop of a run lasts N turns).
//!
//! `GET /v1/models` and `GET /props` report the context size (for discovery);
//! `GET /stats` reports how many completions were served (for turns per second).

use std::io;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use rummy::testing::fake_llm::{FakeLlm, Step, WhenExhausted};
use serde_json::Value;

/// The reply that ends a loop.
const REPLY: &str = "<summarize>ok</summarize>";

/// Binds `address` (port 0 picks one) and starts answering in loops of `turns` turns, inside
/// an actix system; the requests are counted, not kept.
pub(crate) fn start(address: SocketAddr, context_size: u32, turns: u64) -> io::Result<FakeLlm> {
    let turns = turns.max(1);
    let respond = move |request: &Value| Step::reply(reply_for(request, turns));
    FakeLlm::builder([])
        .address(address)
        .n_ctx(context_size)
        .when_exhausted(WhenExhausted::Respond(Arc::new(respond)))
        .forget_requests()
        .try_start()
}

/// Serves on `address` until `lifetime` has passed or the process is interrupted.
pub(crate) async fn serve(
    address: SocketAddr,
    context_size: u32,
    turns: u64,
    lifetime: Duration,
) -> anyhow::Result<()> {
    let fake = start(address, context_size, turns)?;
    eprintln!("fake LLM listening on {}", fake.base_url());
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = tokio::time::sleep(lifetime) => {}
    }
    fake.stop().await;
    Ok(())
}

/// The turn number the request's `<progress turn="T">` reports, if any.
fn progress_turn(request: &Value) -> Option<u64> {
    const OPENING: &str = "<progress turn=\"";
    request
        .get("messages")?
        .as_array()?
        .iter()
        .filter_map(|message| message.get("content").and_then(Value::as_str))
        .find_map(|content| {
            let rest = &content[content.find(OPENING)? + OPENING.len()..];
            rest[..rest.find('"')?].parse().ok()
        })
}

/// The reply to `request` in loops of `turns` turns.
fn reply_for(request: &Value, turns: u64) -> String {
    match progress_turn(request) {
        Some(turn) if turn % turns != 0 => format!(
            "<known path=\"known://load/{turn}\">turn {turn} done</known>\
             <update>turn {turn}</update>"
        ),
        _ => REPLY.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn at(turn: u64, turns: u64) -> String {
        let user = format!("<progress turn=\"{turn}\">…</progress>\n<prompt>go</prompt>");
        reply_for(
            &json!({"messages": [{"role": "user", "content": user}]}),
            turns,
        )
    }

    #[test]
    fn loops_of_three_turns_update_twice_then_summarize() {
        assert!(at(1, 3).contains("<update>turn 1</update>"), "{}", at(1, 3));
        assert!(
            at(2, 3).contains("<known path=\"known://load/2\">"),
            "{}",
            at(2, 3)
        );
        assert_eq!(at(3, 3), REPLY);
        assert!(at(4, 3).contains("<update>"));
        assert_eq!(at(6, 3), REPLY);
    }

    #[test]
    fn one_turn_loops_and_requests_without_progress_summarize() {
        assert_eq!(at(1, 1), REPLY);
        assert_eq!(at(7, 1), REPLY);
        assert_eq!(reply_for(&json!({"messages": []}), 3), REPLY);
    }
}
