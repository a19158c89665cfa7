//! Notification frames between the instances sharing a PostgreSQL store, over
//! LISTEN/NOTIFY on the channel [`CHANNEL`]: the instance executing a run sends each frame it
//! numbered (`run/state`, `run/progress`, `run/proposal`), every other instance receives it
//! and hands it to its hub, which offers it to its clients with the same `seq`.
//!
//! Two threads of their own, each on a dedicated connection (never a pool's: a `LISTEN`
//! belongs to its session): the sender sends the frames in the order it is given them, a
//! frame past NOTIFY's 8000-byte payload limit as parts in one transaction (delivered
//! together, in order); the listener polls its connection every [`LISTEN_POLL`] (libpq
//! reads notifications without blocking) and joins the parts again. Either reconnects after
//! a lost connection; what is sent meanwhile is lost, and a client that sees the gap in `seq`
//! asks for a replay as after any dropped frame.

use std::collections::HashMap;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use diesel::sql_types::Text;
use diesel::{Connection, PgConnection, RunQueryDsl};

use crate::db::ids::{ProjectId, RunId};

/// The channel every instance of a store listens on.
pub const CHANNEL: &str = "rummy_frames";

/// How often the listener reads what arrived.
pub const LISTEN_POLL: Duration = Duration::from_millis(20);

/// Bytes of a frame one NOTIFY carries, below the 8000-byte limit with the header.
const PART_BYTES: usize = 7000;

/// How long a thread waits before connecting again.
const RECONNECT: Duration = Duration::from_secs(1);

/// A numbered frame of a run, crossing instances.
#[derive(Debug, Clone, PartialEq)]
pub struct BusFrame {
    pub project: ProjectId,
    pub run: RunId,
    pub seq: u64,
    pub text: Arc<str>,
}

/// The sending end, cheap to clone; [`stop`](Self::stop), or dropping every clone, ends both
/// threads.
#[derive(Clone)]
pub struct FrameBus {
    outgoing: Sender<BusFrame>,
    stopper: Arc<Stopper>,
}

/// Stops the threads when the last [`FrameBus`] goes.
struct Stopper(Arc<Stop>);

impl Drop for Stopper {
    fn drop(&mut self) {
        self.0.set();
    }
}

/// Whether the threads are to end, which they wait on between polls (woken at once).
#[derive(Default)]
struct Stop {
    stopped: Mutex<bool>,
    changed: Condvar,
}

impl Stop {
    fn set(&self) {
        *self
            .stopped
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) = true;
        self.changed.notify_all();
    }

    fn is_set(&self) -> bool {
        *self
            .stopped
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Waits up to `timeout` for the stop; true when stopped.
    fn wait(&self, timeout: Duration) -> bool {
        let stopped = self
            .stopped
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let (stopped, _) = self
            .changed
            .wait_timeout_while(stopped, timeout, |stopped| !*stopped)
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        *stopped
    }
}

impl FrameBus {
    /// Starts the sender and the listener on the database at `url`, as instance `instance`;
    /// `received` gets every frame another instance sends, in its order.
    pub fn start(
        url: &str,
        instance: &str,
        received: impl Fn(BusFrame) + Send + 'static,
    ) -> std::io::Result<FrameBus> {
        let (outgoing, queued) = mpsc::channel();
        let stopped = Arc::new(Stop::default());
        let sender = Sending {
            url: url.to_owned(),
            instance: instance.to_owned(),
            stopped: Arc::clone(&stopped),
        };
        std::thread::Builder::new()
            .name("rummy-bus-send".into())
            .spawn(move || sender.run(&queued))?;
        let listener = Listening {
            url: url.to_owned(),
            instance: instance.to_owned(),
            stopped: Arc::clone(&stopped),
        };
        std::thread::Builder::new()
            .name("rummy-bus-listen".into())
            .spawn(move || listener.run(&received))?;
        Ok(FrameBus {
            outgoing,
            stopper: Arc::new(Stopper(stopped)),
        })
    }

    /// Queues `frame` for the other instances; never waits.
    pub fn send(&self, frame: BusFrame) {
        let _ = self.outgoing.send(frame);
    }

    /// Ends both threads (the sender after what is queued).
    pub fn stop(&self) {
        self.stopper.0.set();
    }
}

/// A frame's parts as NOTIFY payloads: `instance`, project, run, seq, message, part and
/// parts, tab-separated, then the part's text.
fn payloads(instance: &str, message: u64, frame: &BusFrame) -> Vec<String> {
    let mut parts = Vec::new();
    let mut rest: &str = &frame.text;
    while !rest.is_empty() || parts.is_empty() {
        let mut end = rest.len().min(PART_BYTES);
        while !rest.is_char_boundary(end) {
            end -= 1;
        }
        parts.push(&rest[..end]);
        rest = &rest[end..];
    }
    let count = parts.len();
    parts
        .iter()
        .enumerate()
        .map(|(index, part)| {
            format!(
                "{instance}\t{}\t{}\t{}\t{message}\t{index}\t{count}\t{part}",
                frame.project, frame.run, frame.seq
            )
        })
        .collect()
}

/// One payload's header and text.
#[derive(Debug, PartialEq)]
struct Part<'a> {
    instance: &'a str,
    project: i64,
    run: i64,
    seq: u64,
    message: u64,
    index: usize,
    count: usize,
    text: &'a str,
}

fn parse(payload: &str) -> Option<Part<'_>> {
    let mut fields = payload.splitn(8, '\t');
    Some(Part {
        instance: fields.next()?,
        project: fields.next()?.parse().ok()?,
        run: fields.next()?.parse().ok()?,
        seq: fields.next()?.parse().ok()?,
        message: fields.next()?.parse().ok()?,
        index: fields.next()?.parse().ok()?,
        count: fields.next()?.parse().ok()?,
        text: fields.next()?,
    })
}

/// Joins the parts of each instance's messages into frames.
#[derive(Default)]
struct Assembly {
    partial: HashMap<(String, u64), Vec<String>>,
}

impl Assembly {
    /// The frame `payload` completes, if any.
    fn add(&mut self, part: Part<'_>) -> Option<BusFrame> {
        let frame = |text: &str| BusFrame {
            project: ProjectId(part.project),
            run: RunId(part.run),
            seq: part.seq,
            text: Arc::from(text),
        };
        if part.count <= 1 {
            return Some(frame(part.text));
        }
        let key = (part.instance.to_owned(), part.message);
        let parts = self.partial.entry(key.clone()).or_default();
        if parts.len() != part.index {
            self.partial.remove(&key);
            return None;
        }
        parts.push(part.text.to_owned());
        if parts.len() < part.count {
            return None;
        }
        let text = self.partial.remove(&key)?.concat();
        Some(frame(&text))
    }
}

struct Sending {
    url: String,
    instance: String,
    stopped: Arc<Stop>,
}

impl Sending {
    fn run(self, queued: &Receiver<BusFrame>) {
        let mut connection: Option<PgConnection> = None;
        let mut message = 0_u64;
        loop {
            let frame = match queued.recv_timeout(RECONNECT) {
                Ok(frame) => frame,
                Err(RecvTimeoutError::Timeout) if !self.stopped.is_set() => continue,
                Err(_) => return,
            };
            message += 1;
            if connection.is_none() {
                connection = PgConnection::establish(&self.url)
                    .map_err(|error| tracing::warn!(%error, "the frame bus cannot connect"))
                    .ok();
            }
            let Some(conn) = connection.as_mut() else {
                continue;
            };
            let payloads = payloads(&self.instance, message, &frame);
            let sent = conn.transaction(|conn| {
                for payload in payloads {
                    diesel::sql_query("SELECT pg_notify($1, $2)")
                        .bind::<Text, _>(CHANNEL)
                        .bind::<Text, _>(payload)
                        .execute(conn)?;
                }
                Ok::<_, diesel::result::Error>(())
            });
            if let Err(error) = sent {
                tracing::warn!(%error, run = %frame.run, "a frame for the other instances is lost");
                connection = None;
            }
        }
    }
}

struct Listening {
    url: String,
    instance: String,
    stopped: Arc<Stop>,
}

impl Listening {
    fn run(self, received: &impl Fn(BusFrame)) {
        while !self.stopped.is_set() {
            let listening = PgConnection::establish(&self.url)
                .map_err(|error| error.to_string())
                .and_then(|mut conn| {
                    diesel::sql_query(format!("LISTEN {CHANNEL}"))
                        .execute(&mut conn)
                        .map(|_| conn)
                        .map_err(|error| error.to_string())
                });
            match listening {
                Ok(mut conn) => self.receive(&mut conn, received),
                Err(error) => tracing::warn!(%error, "the frame bus cannot listen"),
            }
            self.stopped.wait(RECONNECT);
        }
    }

    /// Hands on what arrives until the connection fails or the bus stops.
    fn receive(&self, conn: &mut PgConnection, received: &impl Fn(BusFrame)) {
        let mut assembly = Assembly::default();
        while !self.stopped.is_set() {
            for notification in conn.notifications_iter() {
                let notification = match notification {
                    Ok(notification) => notification,
                    Err(error) => {
                        tracing::warn!(%error, "the frame bus lost its connection");
                        return;
                    }
                };
                let Some(part) = parse(&notification.payload) else {
                    tracing::warn!("the frame bus got a payload it cannot read");
                    continue;
                };
                if part.instance == self.instance {
                    continue;
                }
                if let Some(frame) = assembly.add(part) {
                    received(frame);
                }
            }
            self.stopped.wait(LISTEN_POLL);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(text: &str) -> BusFrame {
        BusFrame {
            project: ProjectId(3),
            run: RunId(7),
            seq: 1_700_000_000_000_001,
            text: Arc::from(text),
        }
    }

    #[test]
    fn a_frame_crosses_as_parts_under_the_payload_limit_and_is_joined_again() {
        let big = format!("{{\"text\":\"{}é\"}}", "x".repeat(PART_BYTES * 2));
        for text in ["{}", "a\tb\tc", big.as_str()] {
            let sent = payloads("a", 9, &frame(text));
            assert!(sent.iter().all(|payload| payload.len() < 8000));
            let mut assembly = Assembly::default();
            let mut joined = Vec::new();
            for payload in &sent {
                joined.extend(assembly.add(parse(payload).unwrap()));
            }
            assert_eq!(joined, vec![frame(text)]);
        }
        assert_eq!(payloads("a", 1, &frame(&big)).len(), 3);
    }

    #[test]
    fn a_message_missing_a_part_is_dropped_not_joined_wrong() {
        let big = "y".repeat(PART_BYTES * 2 + 1);
        let sent = payloads("a", 1, &frame(&big));
        let mut assembly = Assembly::default();
        assert_eq!(assembly.add(parse(&sent[0]).unwrap()), None);
        assert_eq!(assembly.add(parse(&sent[2]).unwrap()), None);
        assert_eq!(parse("not a payload"), None);
    }
}
