//! [`WorkCounters`]: what the server did, counted where it happens, so that the work a turn
//! costs is a number a test can pin (`tests/it/counted_work.rs`) and an operator can read on
//! `/metrics`: the SQL statements each kind of connection sent (`db::counted`, through
//! diesel's instrumentation), the writer's units of work (`db::actor`), the reads beside it
//! (`db::readers`), and the JSON-RPC frames handed to client connections with their bytes
//! (replies by `ws::session`, notifications by the hubs as they offer them). Each count is
//! one relaxed atomic add; the calls to the model are counted by each provider's
//! [`ProviderMetrics`](super::ProviderMetrics).
//!
//! With the `testing` feature the statements can also be counted by their text
//! ([`WorkCounters::record_statements`]), which formats each statement: a test's table of
//! what a turn runs, never a server's.

use std::sync::atomic::{AtomicU64, Ordering};

use super::Exposition;

/// The connections statements are counted by.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum StatementsOn {
    /// The writer's: units of work.
    Writer,
    /// The reader pools': reads beside the writer.
    Reader,
    /// The frame bus's sender (PostgreSQL): `pg_notify` of each frame for other instances.
    Bus,
}

impl StatementsOn {
    const ALL: [StatementsOn; 3] = [
        StatementsOn::Writer,
        StatementsOn::Reader,
        StatementsOn::Bus,
    ];

    /// Its label on `/metrics`.
    pub(crate) fn label(self) -> &'static str {
        match self {
            StatementsOn::Writer => "writer",
            StatementsOn::Reader => "reader",
            StatementsOn::Bus => "bus",
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// The server's counts of its own work since it started. Shared (an `Arc`) by everything
/// that counts.
#[derive(Debug, Default)]
pub(crate) struct WorkCounters {
    /// By [`StatementsOn::index`].
    statements: [AtomicU64; 3],
    units: AtomicU64,
    transactions: AtomicU64,
    reads: AtomicU64,
    frames: AtomicU64,
    frame_bytes: AtomicU64,
    #[cfg(feature = "testing")]
    texts: texts::StatementTexts,
}

/// The counts at one moment.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct WorkCount {
    /// SQL statements sent, by [`StatementsOn`]: transaction control (`BEGIN`, `COMMIT`)
    /// included.
    pub statements: [u64; 3],
    /// Units of work the writer ran.
    pub units: u64,
    /// The writer's transactions: one per unit, or fewer when units queued together shared
    /// one (`db::actor::group`).
    pub transactions: u64,
    /// Reads beside the writer, each one read transaction.
    pub reads: u64,
    /// JSON-RPC text frames handed to client connections to send.
    pub frames: u64,
    /// Their payload bytes.
    pub frame_bytes: u64,
}

impl WorkCount {
    /// The statements sent on `on`.
    pub(crate) fn statements_on(&self, on: StatementsOn) -> u64 {
        self.statements[on.index()]
    }
}

impl WorkCounters {
    /// A statement is sent on a connection of kind `on`.
    pub(crate) fn statement(&self, on: StatementsOn) {
        self.statements[on.index()].fetch_add(1, Ordering::Relaxed);
    }

    /// The writer runs a unit of work.
    pub(crate) fn unit(&self) {
        self.units.fetch_add(1, Ordering::Relaxed);
    }

    /// The writer begins a transaction.
    pub(crate) fn transaction(&self) {
        self.transactions.fetch_add(1, Ordering::Relaxed);
    }

    /// A read runs beside the writer.
    pub(crate) fn read(&self) {
        self.reads.fetch_add(1, Ordering::Relaxed);
    }

    /// A text frame of `bytes` is handed to a client connection.
    pub(crate) fn frame(&self, bytes: usize) {
        self.frames.fetch_add(1, Ordering::Relaxed);
        self.frame_bytes
            .fetch_add(u64::try_from(bytes).unwrap_or(u64::MAX), Ordering::Relaxed);
    }

    /// The counts now.
    pub(crate) fn count(&self) -> WorkCount {
        let load = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
        WorkCount {
            statements: self.statements.each_ref().map(load),
            units: load(&self.units),
            transactions: load(&self.transactions),
            reads: load(&self.reads),
            frames: load(&self.frames),
            frame_bytes: load(&self.frame_bytes),
        }
    }

    /// Writes these counters' families.
    pub(super) fn render(&self, out: &mut Exposition) {
        let count = self.count();
        out.family(
            "rummy_sql_statements_total",
            "counter",
            "SQL statements sent to the store (BEGIN and COMMIT included), by connection.",
        );
        for on in StatementsOn::ALL {
            let labels = format!("connection=\"{}\"", on.label());
            out.sample(
                "rummy_sql_statements_total",
                &labels,
                count.statements_on(on),
            );
        }
        out.family(
            "rummy_store_units_total",
            "counter",
            "Units of work the writer ran.",
        );
        out.sample("rummy_store_units_total", "", count.units);
        out.family(
            "rummy_store_transactions_total",
            "counter",
            "Transactions the writer ran: units queued together share one.",
        );
        out.sample("rummy_store_transactions_total", "", count.transactions);
        out.family(
            "rummy_store_reads_total",
            "counter",
            "Reads beside the writer, one read transaction each.",
        );
        out.sample("rummy_store_reads_total", "", count.reads);
        out.family(
            "rummy_frames_sent_total",
            "counter",
            "JSON-RPC text frames handed to client connections (replies and notifications).",
        );
        out.sample("rummy_frames_sent_total", "", count.frames);
        out.family(
            "rummy_frame_bytes_sent_total",
            "counter",
            "Payload bytes of those frames.",
        );
        out.sample("rummy_frame_bytes_sent_total", "", count.frame_bytes);
    }
}

#[cfg(feature = "testing")]
mod texts;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_count_is_its_own() {
        let work = WorkCounters::default();
        work.statement(StatementsOn::Writer);
        work.statement(StatementsOn::Writer);
        work.statement(StatementsOn::Bus);
        work.unit();
        work.transaction();
        work.read();
        work.frame(10);
        work.frame(5);
        let count = work.count();
        assert_eq!(count.statements_on(StatementsOn::Writer), 2);
        assert_eq!(count.statements_on(StatementsOn::Reader), 0);
        assert_eq!(count.statements_on(StatementsOn::Bus), 1);
        assert_eq!((count.units, count.reads), (1, 1));
        assert_eq!((count.frames, count.frame_bytes), (2, 15));
        let mut out = Exposition::default();
        work.render(&mut out);
        for line in [
            "rummy_sql_statements_total{connection=\"writer\"} 2",
            "rummy_sql_statements_total{connection=\"reader\"} 0",
            "rummy_sql_statements_total{connection=\"bus\"} 1",
            "rummy_store_units_total 1",
            "rummy_store_transactions_total 1",
            "rummy_store_reads_total 1",
            "rummy_frames_sent_total 2",
            "rummy_frame_bytes_sent_total 15",
        ] {
            assert!(out.text.lines().any(|l| l == line), "{line}:\n{}", out.text);
        }
    }
}
