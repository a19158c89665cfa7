//! `run/delta`: the model's words as they come, for the connections that asked for them
//! (`run/watch` with `deltas: true`), and for no one else.
//!
//! A turn's call tells its [`TurnText`] the reply's text as it streams in; at most every
//! [`DELTA_EVERY`] (and once at the stream's end) it hands each connection watching the
//! run's deltas what that connection has not been sent of the turn's text yet, in one
//! frame: pieces coalesce while the turn runs, and a connection whose mailbox is full gets
//! the rest with the next frame instead of losing it (each connection's pieces of a turn,
//! concatenated, are the turn's text from its start). Nothing waits on a connection, so a
//! slow one never slows the run (its socket's own limits drop it, `ws::pump`). A turn no
//! connection watches when its call starts has no `TurnText`, and its call is not streamed
//! (`llm::client`): a connection that starts watching during that call sees the turn's
//! reply when it is recorded, and the words of the turns after.
//!
//! Deltas are not run notifications: not numbered, not kept, never replayed, and sent only
//! on the instance that runs the turn (a client of another instance sees the turn's reply
//! when it is recorded, `run/state`). The reply the parser reads is the whole one,
//! unchanged.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use actix::prelude::SendError;
use actix::Recipient;
use serde::Serialize;

use crate::db::ids::RunId;
use crate::hub::{ConnId, Outbound};
use crate::llm::TextListener;
use crate::metrics::WorkCounters;

/// The longest a piece of a reply waits before it is sent to the watchers.
pub(crate) const DELTA_EVERY: Duration = Duration::from_millis(75);

/// A connection watching a run's deltas, and how much of which turn it was sent.
struct Watcher {
    run: RunId,
    recipient: Recipient<Outbound>,
    /// The loop and turn `sent` counts bytes of.
    turn: (i64, i64),
    sent: usize,
}

/// This instance's connections that asked for the deltas of a run. Cheap to clone.
#[derive(Clone)]
pub(crate) struct LiveText {
    watchers: Arc<Mutex<HashMap<ConnId, Watcher>>>,
    work: Arc<WorkCounters>,
}

impl LiveText {
    /// No watcher yet; the frames handed over are counted in `work`.
    pub(crate) fn new(work: Arc<WorkCounters>) -> LiveText {
        LiveText {
            watchers: Arc::default(),
            work,
        }
    }

    /// Sends `conn` the deltas of `run` from now on (of another run no longer): of the
    /// turn under way, its text from the start.
    pub(crate) fn watch(&self, conn: ConnId, run: RunId, recipient: Recipient<Outbound>) {
        self.lock().insert(
            conn,
            Watcher {
                run,
                recipient,
                turn: (0, 0),
                sent: 0,
            },
        );
    }

    /// Sends `conn` no more deltas.
    pub(crate) fn leave(&self, conn: ConnId) {
        self.lock().remove(&conn);
    }

    /// Sends `conn` no more deltas of `run` (those of another run it watches go on).
    pub(crate) fn unwatch(&self, conn: ConnId, run: RunId) {
        let mut watchers = self.lock();
        if watchers
            .get(&conn)
            .is_some_and(|watcher| watcher.run == run)
        {
            watchers.remove(&conn);
        }
    }

    /// What a turn's call tells of its reply's text; `None` when no connection watches the
    /// run's deltas now.
    pub(crate) fn turn(
        &self,
        run: RunId,
        alias: &str,
        loop_id: i64,
        turn: i64,
    ) -> Option<TurnText> {
        if !self.lock().values().any(|watcher| watcher.run == run) {
            return None;
        }
        Some(TurnText {
            live: self.clone(),
            run,
            alias: alias.to_owned(),
            turn: (loop_id, turn),
            last: Mutex::new(None),
        })
    }

    /// Hands each watcher of `run` what it was not sent of `text`, the text so far of `turn`.
    fn send(&self, run: RunId, alias: &str, turn: (i64, i64), text: &str) {
        let mut watchers = self.lock();
        for watcher in watchers.values_mut().filter(|watcher| watcher.run == run) {
            if watcher.turn != turn || watcher.sent > text.len() {
                watcher.turn = turn;
                watcher.sent = 0;
            }
            let Some(piece) = text.get(watcher.sent..).filter(|piece| !piece.is_empty()) else {
                continue;
            };
            let Some(frame) = frame(alias, turn, piece) else {
                return;
            };
            let length = frame.len();
            match watcher.recipient.try_send(Outbound(frame)) {
                Ok(()) => {
                    watcher.sent = text.len();
                    self.work.frame(length);
                }
                Err(SendError::Full(_) | SendError::Closed(_)) => {}
            }
        }
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<ConnId, Watcher>> {
        self.watchers
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// `run/delta` params.
#[derive(Serialize)]
struct Delta<'a> {
    /// Run alias.
    run: &'a str,
    #[serde(rename = "loop")]
    loop_id: i64,
    turn: i64,
    /// What follows the text the connection was sent of this turn.
    text: &'a str,
}

#[derive(Serialize)]
struct DeltaFrame<'a> {
    jsonrpc: &'static str,
    method: &'static str,
    params: Delta<'a>,
}

fn frame(alias: &str, (loop_id, turn): (i64, i64), text: &str) -> Option<Arc<str>> {
    let frame = DeltaFrame {
        jsonrpc: "2.0",
        method: "run/delta",
        params: Delta {
            run: alias,
            loop_id,
            turn,
            text,
        },
    };
    match serde_json::to_string(&frame) {
        Ok(text) => Some(Arc::from(text)),
        Err(error) => {
            tracing::error!(%error, "cannot serialize run/delta");
            None
        }
    }
}

/// One turn's reply as it streams in, sent to the run's delta watchers at most every
/// [`DELTA_EVERY`] and at its end.
pub(crate) struct TurnText {
    live: LiveText,
    run: RunId,
    alias: String,
    turn: (i64, i64),
    /// When the watchers were last looked at.
    last: Mutex<Option<Instant>>,
}

impl TextListener for TurnText {
    fn grew(&self, text: &str, done: bool) {
        let now = Instant::now();
        {
            let mut last = self
                .last
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if !done && last.is_some_and(|last| now.duration_since(last) < DELTA_EVERY) {
                return;
            }
            *last = Some(now);
        }
        self.live.send(self.run, &self.alias, self.turn, text);
    }
}

#[cfg(test)]
mod tests {
    use actix::{Actor, Addr, Context, Handler, Message};

    use super::*;

    /// A connection's mailbox of one frame, keeping the texts of the deltas it takes.
    #[derive(Default)]
    struct Mailbox {
        texts: Vec<String>,
    }

    impl Actor for Mailbox {
        type Context = Context<Self>;
    }

    impl Handler<Outbound> for Mailbox {
        type Result = ();

        fn handle(&mut self, Outbound(frame): Outbound, _: &mut Context<Self>) {
            let frame: serde_json::Value = serde_json::from_str(&frame).unwrap();
            self.texts
                .push(frame["params"]["text"].as_str().unwrap().to_owned());
        }
    }

    /// Takes the texts the mailbox's owner has read so far.
    #[derive(Message)]
    #[rtype(result = "Vec<String>")]
    struct Taken;

    impl Handler<Taken> for Mailbox {
        type Result = Vec<String>;

        fn handle(&mut self, _: Taken, _: &mut Context<Self>) -> Vec<String> {
            std::mem::take(&mut self.texts)
        }
    }

    #[actix::test]
    async fn a_full_mailbox_gets_what_it_missed_with_the_next_frame_and_nothing_waits() {
        let mailbox: Addr<Mailbox> = Mailbox::create(|context| {
            context.set_mailbox_capacity(1);
            Mailbox::default()
        });
        let live = LiveText::new(Arc::default());
        let run = RunId(7);
        live.watch(1, run, mailbox.clone().recipient());

        // The connection reads nothing until the test awaits (this thread runs it): the
        // first frame fills its mailbox, the second finds it full and is not waited for.
        let (sent, done) = std::sync::mpsc::channel();
        let sender = live.clone();
        std::thread::spawn(move || {
            sender.send(run, "r", (1, 1), "Hello");
            sender.send(run, "r", (1, 1), "Hello, wor");
            sent.send(()).unwrap();
        });
        done.recv_timeout(std::time::Duration::from_secs(60))
            .expect("the sender went on past a full mailbox (a blocked one never would)");
        assert_eq!(mailbox.send(Taken).await.unwrap(), ["Hello"]);

        live.send(run, "r", (1, 1), "Hello, world!");
        assert_eq!(
            mailbox.send(Taken).await.unwrap(),
            [", world!"],
            "what the full mailbox missed comes with the next frame"
        );
    }
}
