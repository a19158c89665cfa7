//! Asking the instance holding a run's lease: a call for a run whose loop another instance
//! executes is sent to that instance over the bus ([`BusCommand`], a JSON body), which
//! acknowledges it at once, executes it and answers; the asking instance returns that answer
//! to its client unchanged. What a call and its answer say is the caller's business: the
//! RPC layer sends `run/abort`, `run/resolve` and `run/inject` (`rpc::held_calls`) and
//! executes them when asked (`rpc::handlers::held`); here they are typed at both ends and
//! carried as JSON.
//!
//! Without an acknowledgement within `ACK_WAIT`, or once the holder's heartbeat row has
//! lapsed before it acknowledged, the asker acts itself, as a single instance would (the
//! holder died or the bus lost the command). Once acknowledged, it waits for the answer as
//! long as the holder's heartbeat lives; a holder that dies then is [`HolderGone`].

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::Duration;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::mpsc;

use crate::cluster::bus::{BusCommand, BusMessage, FrameBus};
use crate::cluster::instance::Instance;
use crate::db::ids::RunId;
use crate::db::queries::instances;
use crate::db::queries::runs::now_ms;
use crate::db::DbHandle;

/// How long an asker waits for the holder to acknowledge before it acts itself.
const ACK_WAIT: Duration = Duration::from_secs(30);

/// The holder acknowledged a call and then stopped before it answered: the call may have
/// been executed, so it is not executed again.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "The instance executing this run ({holder}) stopped before it answered; \
     getRun shows what it did."
)]
pub(crate) struct HolderGone {
    /// The holder's instance id.
    pub holder: String,
}

/// A command's body on the bus; `id` names the call among its asker's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
enum Body<C, A> {
    Call { id: u64, call: C },
    Acked { id: u64 },
    Answered { id: u64, answer: A },
}

/// What the asker of one call hears back; the answer still as JSON, read by the asker.
enum Heard {
    Acked,
    Answered(Value),
}

/// This instance's end: the calls it asked and waits to have answered, and the bus.
#[derive(Clone, Default)]
pub(crate) struct LeaseHolder {
    bus: Arc<OnceLock<FrameBus>>,
    next: Arc<AtomicU64>,
    waiting: Arc<Mutex<HashMap<u64, mpsc::UnboundedSender<Heard>>>>,
}

impl LeaseHolder {
    /// Sends the calls on `bus` from now on (once).
    pub(crate) fn connect(&self, bus: FrameBus) {
        let _ = self.bus.set(bus);
    }

    /// Has the live instance holding `run`'s lease, if another than `me`, execute `call`; its
    /// answer. `None` when `me` is to act itself: without a bus, when no other instance
    /// holds the lease, or when the holder did not acknowledge in time.
    pub(crate) async fn ask<C, A>(
        &self,
        db: &DbHandle,
        me: &Instance,
        run: RunId,
        call: C,
    ) -> Option<Result<A, HolderGone>>
    where
        C: Serialize,
        A: DeserializeOwned,
    {
        let bus = self.bus.get()?;
        let holder = db
            .read(move |conn| instances::holder(conn, run, now_ms()))
            .await
            .ok()??;
        if holder == me.id() {
            return None;
        }
        let id = self.next.fetch_add(1, Ordering::SeqCst);
        let (heard, hearing) = mpsc::unbounded_channel();
        self.lock().insert(id, heard);
        let body: Body<C, ()> = Body::Call { id, call };
        send(bus, me.id().to_owned(), holder.clone(), &body);
        let waits = Waits {
            check: me.beat_interval(),
            ack: ACK_WAIT,
        };
        let holder: &str = &holder;
        let answer = wait_for_answer(hearing, waits, holder, || is_alive(db, holder)).await;
        self.lock().remove(&id);
        answer
    }

    /// Takes a command for this instance: a call is acknowledged, executed by `execute`
    /// and answered; an acknowledgement or an answer goes to its waiting asker.
    pub(crate) async fn take<C, A, F, Fut>(&self, command: BusCommand, execute: F)
    where
        C: DeserializeOwned,
        A: Serialize,
        F: FnOnce(C) -> Fut,
        Fut: Future<Output = A>,
    {
        let body: Body<C, Value> = match serde_json::from_str(&command.body) {
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
                send::<(), ()>(bus, from.clone(), to.clone(), &Body::Acked { id });
                let answer = execute(call).await;
                send::<(), A>(bus, from, to, &Body::Answered { id, answer });
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

fn send<C: Serialize, A: Serialize>(bus: &FrameBus, from: String, to: String, body: &Body<C, A>) {
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
/// is [`HolderGone`]. An answer that does not read as an `A` is dropped, as any command that
/// does not read is.
async fn wait_for_answer<A, F>(
    mut hearing: mpsc::UnboundedReceiver<Heard>,
    waits: Waits,
    holder: &str,
    mut alive: impl FnMut() -> F,
) -> Option<Result<A, HolderGone>>
where
    A: DeserializeOwned,
    F: Future<Output = bool>,
{
    let ack_deadline = tokio::time::Instant::now() + waits.ack;
    let mut acked = false;
    loop {
        match tokio::time::timeout(waits.check, hearing.recv()).await {
            Ok(Some(Heard::Acked)) => acked = true,
            Ok(Some(Heard::Answered(answer))) => match serde_json::from_value(answer) {
                Ok(answer) => return Some(Ok(answer)),
                Err(error) => {
                    tracing::warn!(%error, "an answer from another instance does not read");
                }
            },
            Ok(None) => return None,
            Err(_) => {
                if !acked && tokio::time::Instant::now() >= ack_deadline {
                    tracing::warn!(holder, "the lease holder did not acknowledge; acting here");
                    return None;
                }
                if !alive().await {
                    return acked.then(|| {
                        Err(HolderGone {
                            holder: holder.to_owned(),
                        })
                    });
                }
            }
        }
    }
}

/// Whether `instance`'s heartbeat row is alive; a failed read counts as alive (the wait
/// goes on rather than acting twice).
async fn is_alive(db: &DbHandle, instance: &str) -> bool {
    let id = instance.to_owned();
    db.read(move |conn| instances::is_alive(conn, &id, now_ms()))
        .await
        .unwrap_or(true)
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
    ) -> Option<Result<Value, HolderGone>> {
        tokio::time::timeout(
            Duration::from_secs(60),
            wait_for_answer(hearing, waits, "b", alive),
        )
        .await
        .expect("the wait ended")
    }

    fn answer() -> Value {
        serde_json::json!({"result": {"status": "ok"}})
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
            Some(Ok(answer()))
        );
    }

    #[tokio::test]
    async fn an_acknowledged_call_whose_holder_dies_is_answered_with_an_error() {
        let (heard, hearing) = mpsc::unbounded_channel();
        heard.send(Heard::Acked).unwrap();
        let forever = Duration::from_secs(3600);
        let gone = waited(hearing, waits(forever), || std::future::ready(false)).await;
        assert_eq!(gone, Some(Err(HolderGone { holder: "b".into() })));
        drop(heard);
    }

    #[tokio::test]
    async fn an_answer_that_does_not_read_is_dropped_and_the_wait_goes_on() {
        let (heard, hearing) = mpsc::unbounded_channel();
        heard.send(Heard::Acked).unwrap();
        heard
            .send(Heard::Answered(serde_json::json!("not a number")))
            .unwrap();
        heard.send(Heard::Answered(serde_json::json!(7))).unwrap();
        let answer: Option<Result<u32, HolderGone>> = tokio::time::timeout(
            Duration::from_secs(60),
            wait_for_answer(hearing, waits(Duration::ZERO), "b", || {
                std::future::ready(true)
            }),
        )
        .await
        .expect("the wait ended");
        assert_eq!(answer, Some(Ok(7)));
    }

    /// A call of the shape the RPC layer sends: a tagged method, text with tabs, nothing.
    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    #[serde(tag = "method", rename_all = "camelCase")]
    enum Call {
        Resolve {
            path: String,
            output: Option<String>,
        },
        Abort,
    }

    #[test]
    fn a_call_and_its_answers_read_back_as_they_were_sent() {
        let bodies: [Body<Call, Value>; 5] = [
            Body::Call {
                id: 3,
                call: Call::Resolve {
                    path: "sh://turn_1/echo".into(),
                    output: Some("hi\tthere".into()),
                },
            },
            Body::Call {
                id: 4,
                call: Call::Abort,
            },
            Body::Acked { id: 3 },
            Body::Answered {
                id: 3,
                answer: serde_json::json!({"error": {"code": -32602, "message": "nothing"}}),
            },
            Body::Answered {
                id: 4,
                answer: serde_json::json!({"result": {"status": 102}}),
            },
        ];
        for body in bodies {
            let text = serde_json::to_string(&body).unwrap();
            assert_eq!(
                serde_json::from_str::<Body<Call, Value>>(&text).unwrap(),
                body
            );
        }
    }
}
