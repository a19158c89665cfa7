//! The work a running server did, as a test counts it (`tests/it/counted_work.rs`): the
//! server's own counters ([`WorkCounters`](crate::metrics::WorkCounters), each provider's
//! requests) and what its store says of the writes ([`WorkDone`]), read while the server is
//! quiet ([`RunningServer::is_quiet`], [`RunningServer::settle_writes`]), so that a phase's
//! work is the difference of two readings.

use std::collections::BTreeMap;

use crate::app::RunningServer;
use crate::db::testing::stored::{rows_written, stored_bytes};
use crate::db::DbError;
use crate::metrics::StatementsOn;

/// What the server did since it started, at one moment.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WorkDone {
    /// SQL statements the writer's connection sent (BEGIN and COMMIT included).
    pub writer_statements: u64,
    /// SQL statements the readers' connections sent.
    pub reader_statements: u64,
    /// SQL statements the frame bus's sender sent (PostgreSQL).
    pub bus_statements: u64,
    /// Units of work of the writer, one transaction each.
    pub units: u64,
    /// Reads beside the writer, one read transaction each.
    pub reads: u64,
    /// Rows inserted, updated or deleted, triggers' included (the store's own count).
    pub rows_written: u64,
    /// Bytes of text and blobs the store's tables hold.
    pub stored_bytes: u64,
    /// JSON-RPC text frames handed to client connections.
    pub frames: u64,
    /// Their bytes.
    pub frame_bytes: u64,
    /// Requests made to the model providers.
    pub model_calls: u64,
    /// The statements by connection (`writer`, `reader`, `bus`) and normalised text, while
    /// [`RunningServer::record_statements`] is on.
    pub statements: BTreeMap<(String, String), u64>,
}

impl RunningServer {
    /// What it did so far. Its store is read on the writer's connection (uncounted): call it
    /// while the server is quiet and what the writer was handed is written
    /// ([`settle_writes`](Self::settle_writes)).
    pub async fn work_done(&self) -> Result<WorkDone, DbError> {
        let agent = &self.state.agent;
        let (rows, bytes) = agent
            .db
            .uncounted(|conn| Ok((rows_written(conn)?, stored_bytes(conn)?)))
            .await?;
        let count = agent.metrics.work().count();
        let unsigned = |value: i64| u64::try_from(value).unwrap_or_default();
        Ok(WorkDone {
            writer_statements: count.statements_on(StatementsOn::Writer),
            reader_statements: count.statements_on(StatementsOn::Reader),
            bus_statements: count.statements_on(StatementsOn::Bus),
            units: count.units,
            reads: count.reads,
            rows_written: unsigned(rows),
            stored_bytes: unsigned(bytes),
            frames: count.frames,
            frame_bytes: count.frame_bytes,
            model_calls: agent
                .llm
                .metrics()
                .iter()
                .map(|(_, provider)| provider.requests())
                .sum(),
            statements: agent
                .metrics
                .work()
                .statement_texts()
                .into_iter()
                .map(|((on, text), count)| ((on.label().to_owned(), text), count))
                .collect(),
        })
    }

    /// From now on (`true`) or no longer, statements are also counted by their text
    /// ([`WorkDone::statements`]); each is formatted, which costs the server time, not work.
    pub fn record_statements(&self, on: bool) {
        self.state.agent.metrics.work().record_statements(on);
    }

    /// Whether nothing is on its way inside the server: no run has an actor (when
    /// `loops_ended`: a loop waiting for the model has one), every hub has handled what it
    /// was sent, and the frame bus has sent what it was given. Polled by a test, with
    /// [`settle_writes`](Self::settle_writes) after.
    pub fn is_quiet(&self, loops_ended: bool) -> bool {
        let agent = &self.state.agent;
        (!loops_ended || agent.runs.live() == 0)
            && agent.hubs.all_handled()
            && agent.hubs.bus().is_none_or(|bus| bus.all_sent())
    }

    /// Writes the RPC audit rows gathered so far at once, and waits until the writer has
    /// handled everything handed to it before.
    pub async fn settle_writes(&self) -> Result<(), DbError> {
        self.state.agent.db.settle_writes().await
    }
}
