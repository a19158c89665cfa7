//! Asking the instance holding a run's lease: a client's `run/abort`, `run/resolve` or
//! `run/inject` for a run whose loop another instance executes is sent to that instance
//! over the frame bus ([`BusCommand`], JSON bodies), which acknowledges it at once, executes
//! it as if its own client had sent it and answers with the method's result or error; the
//! asking instance returns that answer to its client unchanged.
//!
//! Without an acknowledgement within [`ACK_WAIT`], or once the holder's heartbeat row has
//! lapsed before it acknowledged, the asker acts itself, as a single instance would (the
//! holder died or the bus lost the command). Once acknowledged, it waits for the answer as
//! long as the holder's heartbeat lives.

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::mpsc;

use crate::agent::AgentContext;
use crate::db::bus::{BusCommand, BusMessage, FrameBus};
use crate::db::ids::RunId;
use crate::db::queries::instances;
use crate::db::queries::runs::now_ms;
use crate::error::{code, RpcError};
use crate::plugins::resolve::Resolution;

/// How long an asker waits for the holder to acknowledge before it acts itself.
pub const ACK_WAIT: Duration = Duration::from_secs(30);

/// A method a client sent for `run`, on behalf of `person`, to be executed by the holder.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HeldCall {
    pub run: RunId,
    pub person: Option<String>,
    pub method: HeldMethod,
}

/// The methods the holder executes for another instance's clients, with their params
/// already checked by the instance the client sent them to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "method", rename_all = "camelCase")]
pub enum HeldMethod {
    /// `run/abort`.
    Abort,
    /// `run/resolve`.
    Resolve(ResolveCall),
    /// `run/inject` of `message`.
    Inject { message: String },
}

/// One resolution: the proposal at `path`, what the client did and its output.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResolveCall {
    pub path: String,
    pub action: Resolution,
    pub output: Option<String>,
}

/// The holder's answer: the method's JSON-RPC result or error.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum HeldAnswer {
    Result(Value),
    Error(RpcError),
}

/// A command's body on the bus; `id` names the call among its asker's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
enum Body {
    Call { id: u64, call: HeldCall },
    Acked { id: u64 },
    Answered { id: u64, answer: HeldAnswer },
}

/// What the asker of one call hears back.
enum Heard {
    Acked,
    Answered(HeldAnswer),
}

/// This instance's end: the calls it asked and waits to have answered, and the bus.
#[derive(Clone, Default)]
pub struct LeaseHolder {
    bus: Arc<OnceLock<FrameBus>>,
    next: Arc<AtomicU64>,
    waiting: Arc<Mutex<HashMap<u64, mpsc::UnboundedSender<Heard>>>>,
}

impl LeaseHolder {
    /// Sends the calls on `bus` from now on (once).
    pub fn connect(&self, bus: FrameBus) {
        let _ = self.bus.set(bus);
    }

    /// Has the live instance holding `call.run`'s lease, if another, execute `call`; its
    /// answer. `None` when this instance is to act itself: without a bus, when no other
    /// instance holds the lease, or when the holder did not acknowledge in time.
    pub async fn ask(&self, agent: &AgentContext, call: HeldCall) -> Option<HeldAnswer> {
        let bus = self.bus.get()?;
        let me = agent.runs.instance().id().to_owned();
        let run = call.run;
        let holder = agent
            .db
            .read(move |conn| instances::holder(conn, run, now_ms()))
            .await
            .ok()??;
        if holder == me {
            return None;
        }
        let id = self.next.fetch_add(1, Ordering::SeqCst);
        let (heard, hearing) = mpsc::unbounded_channel();
        self.lock().insert(id, heard);
        send(bus, me, holder.clone(), &Body::Call { id, call });
        let waits = Waits {
            check: agent.runs.instance().beat_interval(),
            ack: ACK_WAIT,
        };
        let holder: &str = &holder;
        let answer = wait_for_answer(hearing, waits, holder, || is_alive(agent, holder)).await;
        self.lock().remove(&id);
        answer
    }

    /// Takes a command for this instance: a call is acknowledged, executed by `execute`
    /// and answered; an acknowledgement or an answer goes to its waiting asker.
    pub async fn take<F, Fut>(&self, command: BusCommand, execute: F)
    where
        F: FnOnce(HeldCall) -> Fut,
        Fut: Future<Output = HeldAnswer>,
    {
        let body: Body = match serde_json::from_str(&command.body) {
            Ok(body) => body,
            Err(error) => {
                tracing::warn!(%error, "a command from another instance does not read");
                return;
            }
        };
        let (id, heard) = match body {
            Body::Call { id, call } => {
                let Some(bus) = self.bus.get() else {
                    return;
                };
                let (from, to) = (command.to, command.from);
                send(bus, from.clone(), to.clone(), &Body::Acked { id });
                let answer = execute(call).await;
                send(bus, from, to, &Body::Answered { id, answer });
                return;
            }
            Body::Acked { id } => (id, Heard::Acked),
            Body::Answered { id, answer } => (id, Heard::Answered(answer)),
        };
        if let Some(waiting) = self.lock().get(&id) {
            let _ = waiting.send(heard);
        }
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<u64, mpsc::UnboundedSender<Heard>>> {
        self.waiting
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

fn send(bus: &FrameBus, from: String, to: String, body: &Body) {
    match serde_json::to_string(body) {
        Ok(body) => bus.send(BusMessage::Command(BusCommand {
            from,
            to,
            body: Arc::from(body),
        })),
        Err(error) => tracing::warn!(%error, "a command for another instance does not encode"),
    }
}

/// How an asker waits.
#[derive(Debug, Clone, Copy)]
struct Waits {
    /// How often it checks that the holder lives.
    check: Duration,
    /// How long it waits for the acknowledgement.
    ack: Duration,
}

/// The answer of `holder`, heard on `hearing`; `None` when it did not acknowledge within
/// `waits.ack` or `alive` says it is gone first. An acknowledged call whose holder then dies
/// is answered with an error: it may have been executed, so it is not executed again.
async fn wait_for_answer<F>(
    mut hearing: mpsc::UnboundedReceiver<Heard>,
    waits: Waits,
    holder: &str,
    mut alive: impl FnMut() -> F,
) -> Option<HeldAnswer>
where
    F: Future<Output = bool>,
{
    let ack_deadline = tokio::time::Instant::now() + waits.ack;
    let mut acked = false;
    loop {
        match tokio::time::timeout(waits.check, hearing.recv()).await {
            Ok(Some(Heard::Acked)) => acked = true,
            Ok(Some(Heard::Answered(answer))) => return Some(answer),
            Ok(None) => return None,
            Err(_) => {
                if !acked && tokio::time::Instant::now() >= ack_deadline {
                    tracing::warn!(holder, "the lease holder did not acknowledge; acting here");
                    return None;
                }
                if !alive().await {
                    return acked.then(|| holder_gone(holder));
                }
            }
        }
    }
}

/// Whether `instance`'s heartbeat row is alive; a failed read counts as alive (the wait
/// goes on rather than acting twice).
async fn is_alive(agent: &AgentContext, instance: &str) -> bool {
    let id = instance.to_owned();
    agent
        .db
        .read(move |conn| instances::is_alive(conn, &id, now_ms()))
        .await
        .unwrap_or(true)
}

fn holder_gone(holder: &str) -> HeldAnswer {
    HeldAnswer::Error(RpcError {
        code: code::INTERNAL,
        message: format!(
            "The instance executing this run ({holder}) stopped before it answered; \
             getRun shows what it did."
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Checks every 10 ms; the acknowledgement waited for `ack`.
    fn waits(ack: Duration) -> Waits {
        Waits {
            check: Duration::from_millis(10),
            ack,
        }
    }

    /// A guard against a wait that never ends (no measure of speed).
    async fn waited(
        hearing: mpsc::UnboundedReceiver<Heard>,
        waits: Waits,
        alive: impl FnMut() -> std::future::Ready<bool>,
    ) -> Option<HeldAnswer> {
        tokio::time::timeout(
            Duration::from_secs(60),
            wait_for_answer(hearing, waits, "b", alive),
        )
        .await
        .expect("the wait ended")
    }

    fn answer() -> HeldAnswer {
        HeldAnswer::Result(serde_json::json!({"status": "ok"}))
    }

    #[tokio::test]
    async fn an_unacknowledged_call_is_the_asker_s_to_execute_after_the_wait() {
        let (_heard, hearing) = mpsc::unbounded_channel();
        let checks = AtomicU64::new(0);
        let alive = || {
            checks.fetch_add(1, Ordering::SeqCst);
            std::future::ready(true)
        };
        assert_eq!(
            waited(hearing, waits(Duration::from_millis(50)), alive).await,
            None
        );
        assert!(
            checks.load(Ordering::SeqCst) >= 1,
            "the holder was checked meanwhile"
        );
    }

    #[tokio::test]
    async fn an_unacknowledged_call_of_a_gone_holder_is_the_asker_s_at_once() {
        let (_heard, hearing) = mpsc::unbounded_channel();
        let forever = Duration::from_secs(3600);
        assert_eq!(
            waited(hearing, waits(forever), || std::future::ready(false)).await,
            None
        );
    }

    #[tokio::test]
    async fn an_acknowledged_call_waits_past_the_ack_wait_for_its_answer() {
        let (heard, hearing) = mpsc::unbounded_channel();
        heard.send(Heard::Acked).unwrap();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(100)).await;
            heard.send(Heard::Answered(answer())).unwrap();
        });
        assert_eq!(
            waited(hearing, waits(Duration::ZERO), || std::future::ready(true)).await,
            Some(answer())
        );
    }

    #[tokio::test]
    async fn an_acknowledged_call_whose_holder_dies_is_answered_with_an_error() {
        let (heard, hearing) = mpsc::unbounded_channel();
        heard.send(Heard::Acked).unwrap();
        let forever = Duration::from_secs(3600);
        let gone = waited(hearing, waits(forever), || std::future::ready(false)).await;
        assert_eq!(gone, Some(holder_gone("b")));
        let Some(HeldAnswer::Error(error)) = gone else {
            panic!("an error: {gone:?}");
        };
        assert_eq!(error.code, code::INTERNAL);
        drop(heard);
    }

    #[test]
    fn a_call_and_its_answers_read_back_as_they_were_sent() {
        let bodies = [
            Body::Call {
                id: 3,
                call: HeldCall {
                    run: RunId(9),
                    person: Some("ann".into()),
                    method: HeldMethod::Resolve(ResolveCall {
                        path: "sh://turn_1/echo".into(),
                        action: Resolution::Accept,
                        output: Some("hi\tthere".into()),
                    }),
                },
            },
            Body::Call {
                id: 4,
                call: HeldCall {
                    run: RunId(9),
                    person: None,
                    method: HeldMethod::Inject {
                        message: "also the tests".into(),
                    },
                },
            },
            Body::Acked { id: 3 },
            Body::Answered {
                id: 3,
                answer: HeldAnswer::Error(RpcError {
                    code: -32602,
                    message: "nothing".into(),
                }),
            },
            Body::Answered {
                id: 4,
                answer: HeldAnswer::Result(serde_json::json!({"status": 102})),
            },
        ];
        for body in bodies {
            let text = serde_json::to_string(&body).unwrap();
            assert_eq!(serde_json::from_str::<Body>(&text).unwrap(), body);
        }
    }
}
