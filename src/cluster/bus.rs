//! Notification frames between the instances sharing a PostgreSQL store, over
//! LISTEN/NOTIFY on the channel `rummy_frames`: the instance executing a run sends each frame
//! it numbered (`run/state`, `run/progress`, `run/proposal`), every other instance receives
//! it and hands it to its hub, which offers it to its clients with the same `seq`.
//!
//! Beside the frames, the channel `rummy_commands` carries [`BusCommand`]s: a client's
//! `run/abort`, `run/resolve` or `run/inject` for the instance holding the run's lease, and
//! that instance's acknowledgement and answer, each addressed to one instance; and the
//! channel `rummy_broadcasts` a project's unnumbered frames ([`BusBroadcast`]: a plugin's
//! `ui/render` and `ui/notify`, `run/presence`), which every other instance offers to its
//! clients of the project; and the channel `rummy_inbox` a person's `inbox/changed`
//! ([`BusInbox`]), which every other instance offers to that person's connections there.
//!
//! Two threads of their own, each on a dedicated connection (never a pool's: a `LISTEN`
//! belongs to its session): the sender sends the frames in the order it is given them, a
//! frame past NOTIFY's 8000-byte payload limit as parts in one transaction (delivered
//! together, in order); the listener polls its connection every `LISTEN_POLL` (libpq
//! reads notifications without blocking) and joins the parts again. A message of one part is
//! one statement (`pg_notify` in a transaction of its own), so a frame costs one round trip. Either reconnects after a lost
//! connection; what is sent meanwhile is lost, and a client that sees the gap in `seq` asks
//! for a replay as after any dropped frame. The sender's statements are counted in the
//! server's [`WorkCounters`] (one instance alone on PostgreSQL sends every frame too).

use std::collections::HashMap;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use diesel::sql_types::Text;
use diesel::{Connection, PgConnection, RunQueryDsl};

use crate::db::connect_postgres;
use crate::db::counted::count_statements;
use crate::db::ids::{ProjectId, RunId};
use crate::metrics::{StatementsOn, WorkCounters};

/// The channel every instance of a store listens on.
const CHANNEL: &str = "rummy_frames";

/// The channel of [`BusCommand`]s.
const COMMAND_CHANNEL: &str = "rummy_commands";

/// The channel of [`BusBroadcast`]s.
const BROADCAST_CHANNEL: &str = "rummy_broadcasts";

/// The channel of [`BusInbox`]es.
const INBOX_CHANNEL: &str = "rummy_inbox";

/// How often the listener reads what arrived.
const LISTEN_POLL: Duration = Duration::from_millis(20);

/// Bytes of a message one NOTIFY carries, below the 8000-byte limit with the header.
const PART_BYTES: usize = 7000;

/// How long a thread waits before connecting again.
const RECONNECT: Duration = Duration::from_secs(1);

/// How many failed attempts in a row to listen pass between two warnings about them.
const WARN_EVERY: u32 = 60;

/// A numbered frame of a run, crossing instances.
#[derive(Debug, Clone, PartialEq)]
pub struct BusFrame {
    pub project: ProjectId,
    pub run: RunId,
    pub seq: u64,
    pub text: Arc<str>,
}

/// A message from instance `from` to instance `to` alone; what `body` says is the sender's
/// and the receiver's business (`cluster::lease_holder`).
#[derive(Debug, Clone, PartialEq)]
pub struct BusCommand {
    pub from: String,
    pub to: String,
    pub body: Arc<str>,
}

/// An unnumbered frame for every client of a project, on whichever instance.
#[derive(Debug, Clone, PartialEq)]
pub struct BusBroadcast {
    pub project: ProjectId,
    pub text: Arc<str>,
}

/// An `inbox/changed` frame for one person's connections (`None`: the operator's), on
/// whichever instance.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct BusInbox {
    pub person: Option<String>,
    pub text: Arc<str>,
}

/// What crosses the bus.
#[derive(Debug, Clone, PartialEq)]
pub enum BusMessage {
    Frame(BusFrame),
    Command(BusCommand),
    Broadcast(BusBroadcast),
    Inbox(BusInbox),
}

/// The sending end, cheap to clone; [`stop`](Self::stop), or dropping every clone, ends both
/// threads.
#[derive(Clone)]
pub struct FrameBus {
    outgoing: Sender<BusMessage>,
    stopper: Arc<Stopper>,
    /// Messages given to the sender that it has not finished with.
    #[cfg(feature = "testing")]
    unsent: Arc<std::sync::atomic::AtomicU64>,
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
    /// `received` gets every frame another instance sends, in its order, and every command
    /// for this instance. The sender's statements are counted in `work`.
    pub(crate) fn start(
        url: &str,
        instance: &str,
        work: &Arc<WorkCounters>,
        received: impl Fn(BusMessage) + Send + 'static,
    ) -> std::io::Result<FrameBus> {
        let (outgoing, queued) = mpsc::channel();
        let stopped = Arc::new(Stop::default());
        #[cfg(feature = "testing")]
        let unsent = Arc::default();
        let sender = Sending {
            url: url.to_owned(),
            instance: instance.to_owned(),
            stopped: Arc::clone(&stopped),
            work: Arc::clone(work),
            #[cfg(feature = "testing")]
            unsent: Arc::clone(&unsent),
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
            #[cfg(feature = "testing")]
            unsent,
        })
    }

    /// Queues `message` for the other instances; never waits.
    pub fn send(&self, message: BusMessage) {
        #[cfg(feature = "testing")]
        self.unsent
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let _ = self.outgoing.send(message);
    }

    /// Whether the sender has finished with every message it was given (sent or lost).
    #[cfg(feature = "testing")]
    pub(crate) fn all_sent(&self) -> bool {
        self.unsent.load(std::sync::atomic::Ordering::SeqCst) == 0
    }

    /// Ends both threads (the sender after what is queued).
    pub fn stop(&self) {
        self.stopper.0.set();
    }
}

/// `text` in parts under [`PART_BYTES`] each, cut on character boundaries; at least one.
fn split(text: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let mut rest = text;
    while !rest.is_empty() || parts.is_empty() {
        let mut end = rest.len().min(PART_BYTES);
        while !rest.is_char_boundary(end) {
            end -= 1;
        }
        parts.push(&rest[..end]);
        rest = &rest[end..];
    }
    parts
}

/// A message's parts as NOTIFY payloads: `head`, then the message's number among its
/// sender's, the part's index, the number of parts and the part's text, tab-separated.
fn payloads(head: &str, message: u64, text: &str) -> Vec<String> {
    let parts = split(text);
    let count = parts.len();
    parts
        .iter()
        .enumerate()
        .map(|(index, part)| format!("{head}\t{message}\t{index}\t{count}\t{part}"))
        .collect()
}

/// A frame's payloads; the head is the sending instance, the project, the run and the seq.
fn frame_payloads(instance: &str, message: u64, frame: &BusFrame) -> Vec<String> {
    let head = format!(
        "{instance}\t{}\t{}\t{}",
        frame.project, frame.run, frame.seq
    );
    payloads(&head, message, &frame.text)
}

/// A command's payloads; the head is the sending instance and the one it is for.
fn command_payloads(message: u64, command: &BusCommand) -> Vec<String> {
    let head = format!("{}\t{}", command.from, command.to);
    payloads(&head, message, &command.body)
}

/// A broadcast's payloads; the head is the sending instance and the project.
fn broadcast_payloads(instance: &str, message: u64, broadcast: &BusBroadcast) -> Vec<String> {
    let head = format!("{instance}\t{}", broadcast.project);
    payloads(&head, message, &broadcast.text)
}

/// One payload's part of a message.
#[derive(Debug, PartialEq)]
struct Part<'a> {
    /// The sending instance.
    sender: &'a str,
    /// The message's number among its sender's.
    message: u64,
    index: usize,
    count: usize,
    text: &'a str,
}

impl<'a> Part<'a> {
    /// The part whose numbers and text are the last four of `fields`.
    fn read(sender: &'a str, mut fields: impl Iterator<Item = &'a str>) -> Option<Part<'a>> {
        Some(Part {
            sender,
            message: fields.next()?.parse().ok()?,
            index: fields.next()?.parse().ok()?,
            count: fields.next()?.parse().ok()?,
            text: fields.next()?,
        })
    }
}

/// Where a frame's payload says it belongs.
#[derive(Debug, PartialEq)]
struct FrameHead {
    project: i64,
    run: i64,
    seq: u64,
}

impl FrameHead {
    fn frame(&self, text: String) -> BusFrame {
        BusFrame {
            project: ProjectId(self.project),
            run: RunId(self.run),
            seq: self.seq,
            text: Arc::from(text),
        }
    }
}

fn parse_frame(payload: &str) -> Option<(FrameHead, Part<'_>)> {
    let mut fields = payload.splitn(8, '\t');
    let sender = fields.next()?;
    let head = FrameHead {
        project: fields.next()?.parse().ok()?,
        run: fields.next()?.parse().ok()?,
        seq: fields.next()?.parse().ok()?,
    };
    Some((head, Part::read(sender, fields)?))
}

/// A broadcast's payload: its project, and its part.
fn parse_broadcast(payload: &str) -> Option<(ProjectId, Part<'_>)> {
    let mut fields = payload.splitn(6, '\t');
    let sender = fields.next()?;
    let project = ProjectId(fields.next()?.parse().ok()?);
    Some((project, Part::read(sender, fields)?))
}

/// An inbox message's payloads; the head is the sending instance, the text the message as
/// JSON.
fn inbox_payloads(instance: &str, message: u64, inbox: &BusInbox) -> Vec<String> {
    let text = serde_json::to_string(inbox).unwrap_or_default();
    payloads(instance, message, &text)
}

/// An inbox message's payload: its part.
fn parse_inbox(payload: &str) -> Option<Part<'_>> {
    let mut fields = payload.splitn(5, '\t');
    let sender = fields.next()?;
    Part::read(sender, fields)
}

/// A command's payload: the instance it is for, and its part.
fn parse_command(payload: &str) -> Option<(&str, Part<'_>)> {
    let mut fields = payload.splitn(6, '\t');
    let sender = fields.next()?;
    let to = fields.next()?;
    Some((to, Part::read(sender, fields)?))
}

/// Joins the parts of each instance's messages.
#[derive(Default)]
struct Assembly {
    partial: HashMap<(String, u64), Vec<String>>,
}

impl Assembly {
    /// The text of the message `part` completes, if any.
    fn add(&mut self, part: Part<'_>) -> Option<String> {
        if part.count <= 1 {
            return Some(part.text.to_owned());
        }
        let key = (part.sender.to_owned(), part.message);
        let parts = self.partial.entry(key.clone()).or_default();
        if parts.len() != part.index {
            self.partial.remove(&key);
            return None;
        }
        parts.push(part.text.to_owned());
        if parts.len() < part.count {
            return None;
        }
        Some(self.partial.remove(&key)?.concat())
    }
}

struct Sending {
    url: String,
    instance: String,
    stopped: Arc<Stop>,
    work: Arc<WorkCounters>,
    #[cfg(feature = "testing")]
    unsent: Arc<std::sync::atomic::AtomicU64>,
}

impl Sending {
    fn run(self, queued: &Receiver<BusMessage>) {
        let mut connection: Option<PgConnection> = None;
        let mut message = 0_u64;
        loop {
            let message_to_send = match queued.recv_timeout(RECONNECT) {
                Ok(message) => message,
                Err(RecvTimeoutError::Timeout) if !self.stopped.is_set() => continue,
                Err(_) => return,
            };
            message += 1;
            #[cfg(feature = "testing")]
            let _finished = Finished(&self.unsent);
            if connection.is_none() {
                connection = connect_postgres(&self.url)
                    .map_err(|error| tracing::warn!(%error, "the frame bus cannot connect"))
                    .ok()
                    .map(|mut conn| {
                        count_statements(&mut conn, &self.work, StatementsOn::Bus);
                        conn
                    });
            }
            let Some(conn) = connection.as_mut() else {
                continue;
            };
            let (channel, payloads) = match &message_to_send {
                BusMessage::Frame(frame) => {
                    (CHANNEL, frame_payloads(&self.instance, message, frame))
                }
                BusMessage::Command(command) => {
                    (COMMAND_CHANNEL, command_payloads(message, command))
                }
                BusMessage::Broadcast(broadcast) => (
                    BROADCAST_CHANNEL,
                    broadcast_payloads(&self.instance, message, broadcast),
                ),
                BusMessage::Inbox(inbox) => (
                    INBOX_CHANNEL,
                    inbox_payloads(&self.instance, message, inbox),
                ),
            };
            let sent = notify(conn, channel, payloads);
            if let Err(error) = sent {
                tracing::warn!(%error, channel, "a message for the other instances is lost");
                connection = None;
            }
        }
    }
}

/// Sends `payloads` on `channel`: one alone as one statement (its own transaction), several
/// in one transaction, so that they are delivered together.
fn notify(
    conn: &mut PgConnection,
    channel: &str,
    payloads: Vec<String>,
) -> diesel::QueryResult<()> {
    let send = |conn: &mut PgConnection, payload: String| {
        diesel::sql_query("SELECT pg_notify($1, $2)")
            .bind::<Text, _>(channel)
            .bind::<Text, _>(payload)
            .execute(conn)
            .map(drop)
    };
    match <[String; 1]>::try_from(payloads) {
        Ok([payload]) => send(conn, payload),
        Err(payloads) => conn.transaction(|conn| {
            payloads
                .into_iter()
                .try_for_each(|payload| send(conn, payload))
        }),
    }
}

/// Marks a message finished with when dropped, however its sending ended.
#[cfg(feature = "testing")]
struct Finished<'a>(&'a std::sync::atomic::AtomicU64);

#[cfg(feature = "testing")]
impl Drop for Finished<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
    }
}

struct Listening {
    url: String,
    instance: String,
    stopped: Arc<Stop>,
}

impl Listening {
    fn run(self, received: &impl Fn(BusMessage)) {
        let mut failures: u32 = 0;
        while !self.stopped.is_set() {
            let listening = connect_postgres(&self.url)
                .map_err(|error| error.to_string())
                .and_then(|mut conn| {
                    [CHANNEL, COMMAND_CHANNEL, BROADCAST_CHANNEL, INBOX_CHANNEL]
                        .into_iter()
                        .try_for_each(|channel| {
                            diesel::sql_query(format!("LISTEN {channel}"))
                                .execute(&mut conn)
                                .map(drop)
                        })
                        .map(|()| conn)
                        .map_err(|error| error.to_string())
                });
            match listening {
                Ok(mut conn) => {
                    if failures > 0 {
                        tracing::info!(failures, "the frame bus listens again");
                    }
                    failures = 0;
                    self.receive(&mut conn, received);
                }
                Err(error) => {
                    if failures.is_multiple_of(WARN_EVERY) {
                        tracing::warn!(%error, failures, "the frame bus cannot listen");
                    }
                    failures = failures.saturating_add(1);
                }
            }
            self.stopped.wait(RECONNECT);
        }
    }

    /// Hands on what arrives until the connection fails or the bus stops.
    fn receive(&self, conn: &mut PgConnection, received: &impl Fn(BusMessage)) {
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
                if let Some(message) = self.take(&mut assembly, &notification) {
                    received(message);
                }
            }
            self.stopped.wait(LISTEN_POLL);
        }
    }

    /// The message `notification` completes, if it is for this instance: another's frame or
    /// broadcast, or a command to this one.
    fn take(
        &self,
        assembly: &mut Assembly,
        notification: &diesel::pg::PgNotification,
    ) -> Option<BusMessage> {
        if notification.channel == COMMAND_CHANNEL {
            let Some((to, part)) = parse_command(&notification.payload) else {
                tracing::warn!("the frame bus got a command it cannot read");
                return None;
            };
            if to != self.instance {
                return None;
            }
            let from = part.sender.to_owned();
            let body = assembly.add(part)?;
            return Some(BusMessage::Command(BusCommand {
                from,
                to: self.instance.clone(),
                body: Arc::from(body),
            }));
        }
        if notification.channel == BROADCAST_CHANNEL {
            let Some((project, part)) = parse_broadcast(&notification.payload) else {
                tracing::warn!("the frame bus got a broadcast it cannot read");
                return None;
            };
            if part.sender == self.instance {
                return None;
            }
            let text = assembly.add(part)?;
            return Some(BusMessage::Broadcast(BusBroadcast {
                project,
                text: Arc::from(text),
            }));
        }
        if notification.channel == INBOX_CHANNEL {
            let Some(part) = parse_inbox(&notification.payload) else {
                tracing::warn!("the frame bus got an inbox message it cannot read");
                return None;
            };
            if part.sender == self.instance {
                return None;
            }
            let text = assembly.add(part)?;
            return serde_json::from_str(&text).ok().map(BusMessage::Inbox);
        }
        let Some((head, part)) = parse_frame(&notification.payload) else {
            tracing::warn!("the frame bus got a payload it cannot read");
            return None;
        };
        if part.sender == self.instance {
            return None;
        }
        Some(BusMessage::Frame(head.frame(assembly.add(part)?)))
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

    fn big() -> String {
        format!("{{\"text\":\"{}é\"}}", "x".repeat(PART_BYTES * 2))
    }

    #[test]
    fn a_frame_crosses_as_parts_under_the_payload_limit_and_is_joined_again() {
        let big = big();
        for text in ["{}", "a\tb\tc", big.as_str()] {
            let sent = frame_payloads("a", 9, &frame(text));
            assert!(sent.iter().all(|payload| payload.len() < 8000));
            let mut assembly = Assembly::default();
            let mut joined = Vec::new();
            for payload in &sent {
                let (head, part) = parse_frame(payload).unwrap();
                joined.extend(assembly.add(part).map(|text| head.frame(text)));
            }
            assert_eq!(joined, vec![frame(text)]);
        }
        assert_eq!(frame_payloads("a", 1, &frame(&big)).len(), 3);
    }

    #[test]
    fn a_command_crosses_as_parts_to_the_one_instance_it_is_for() {
        let big = big();
        for body in ["{}", "a\tb", big.as_str()] {
            let command = BusCommand {
                from: "a".into(),
                to: "b".into(),
                body: Arc::from(body),
            };
            let sent = command_payloads(4, &command);
            assert!(sent.iter().all(|payload| payload.len() < 8000));
            let mut assembly = Assembly::default();
            let mut joined = Vec::new();
            for payload in &sent {
                let (to, part) = parse_command(payload).unwrap();
                assert_eq!((to, part.sender), ("b", "a"));
                joined.extend(assembly.add(part));
            }
            assert_eq!(joined, vec![body.to_owned()]);
        }
        assert_eq!(parse_command("a\tb\tx\t0\t1\t{}"), None);
    }

    #[test]
    fn a_broadcast_crosses_as_parts_with_its_project() {
        let big = big();
        for text in ["{}", "a\tb", big.as_str()] {
            let broadcast = BusBroadcast {
                project: ProjectId(5),
                text: Arc::from(text),
            };
            let sent = broadcast_payloads("a", 2, &broadcast);
            assert!(sent.iter().all(|payload| payload.len() < 8000));
            let mut assembly = Assembly::default();
            let mut joined = Vec::new();
            for payload in &sent {
                let (project, part) = parse_broadcast(payload).unwrap();
                assert_eq!((project, part.sender), (ProjectId(5), "a"));
                joined.extend(assembly.add(part));
            }
            assert_eq!(joined, vec![text.to_owned()]);
        }
        assert_eq!(parse_broadcast("a\tx\t0\t0\t1\t{}"), None);
    }

    #[test]
    fn an_inbox_message_crosses_as_parts_with_its_person() {
        let big = big();
        for (person, text) in [(None, "{}"), (Some("ada\tlovelace"), big.as_str())] {
            let inbox = BusInbox {
                person: person.map(str::to_owned),
                text: Arc::from(text),
            };
            let sent = inbox_payloads("a", 3, &inbox);
            assert!(sent.iter().all(|payload| payload.len() < 8000));
            let mut assembly = Assembly::default();
            let mut joined = Vec::new();
            for payload in &sent {
                let part = parse_inbox(payload).unwrap();
                assert_eq!(part.sender, "a");
                joined.extend(assembly.add(part));
            }
            let joined: Vec<BusInbox> = joined
                .iter()
                .map(|text| serde_json::from_str(text).unwrap())
                .collect();
            assert_eq!(joined, vec![inbox]);
        }
    }

    #[test]
    fn a_message_missing_a_part_is_dropped_not_joined_wrong() {
        let big = "y".repeat(PART_BYTES * 2 + 1);
        let sent = frame_payloads("a", 1, &frame(&big));
        let mut assembly = Assembly::default();
        assert_eq!(assembly.add(parse_frame(&sent[0]).unwrap().1), None);
        assert_eq!(assembly.add(parse_frame(&sent[2]).unwrap().1), None);
        assert_eq!(parse_frame("not a payload"), None);
    }
}
