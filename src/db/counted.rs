//! Every statement a connection of the server sends is counted in the server's
//! [`WorkCounters`]: [`count_statements`] gives the connection diesel's instrumentation
//! ([`Counting`]), which counts each query as it starts (a prepared statement, a
//! `sql_query`, a `batch_execute`, so `BEGIN` and `COMMIT` too) by the kind of connection.
//! The writer's, the readers' and the frame bus sender's connections are counted; a test's
//! own connection is not.
//!
//! Counting is one relaxed atomic add per statement. The connection's instrumentation is
//! this one: a tracer that wants the statements too has to be called from here.

use std::sync::Arc;

use diesel::connection::{Instrumentation, InstrumentationEvent};
use diesel::Connection;

use crate::metrics::{StatementsOn, WorkCounters};

/// The instrumentation that counts a connection's statements.
pub(crate) struct Counting {
    work: Arc<WorkCounters>,
    on: StatementsOn,
    /// While set, nothing is counted (a test's measurement on the writer's connection).
    paused: bool,
}

impl Instrumentation for Counting {
    fn on_connection_event(&mut self, event: InstrumentationEvent<'_>) {
        if self.paused {
            return;
        }
        if let InstrumentationEvent::StartQuery { query, .. } = event {
            self.work.statement(self.on);
            #[cfg(feature = "testing")]
            self.work.statement_text(self.on, query);
            #[cfg(not(feature = "testing"))]
            let _ = query;
        }
    }
}

/// From now on the statements `conn` sends are counted in `work` as sent on `on`.
pub(crate) fn count_statements<C: Connection>(
    conn: &mut C,
    work: &Arc<WorkCounters>,
    on: StatementsOn,
) {
    conn.set_instrumentation(Counting {
        work: Arc::clone(work),
        on,
        paused: false,
    });
}

/// Runs `work` on `conn` without counting its statements (a counted connection's; any
/// other is left as it is).
#[cfg(feature = "testing")]
pub(crate) fn uncounted<C: Connection, T>(conn: &mut C, work: impl FnOnce(&mut C) -> T) -> T {
    let pause = |conn: &mut C, paused: bool| {
        if let Some(counting) = conn.instrumentation().downcast_mut::<Counting>() {
            counting.paused = paused;
        }
    };
    pause(conn, true);
    let value = work(conn);
    pause(conn, false);
    value
}

#[cfg(test)]
mod tests {
    use diesel::connection::SimpleConnection;
    use diesel::sql_types::BigInt;
    use diesel::RunQueryDsl;

    use super::*;
    use crate::db::connection::write_transaction;
    use crate::db::statement::statement;
    use crate::db::{open_connection, ConnectionSetup, Store};

    #[test]
    fn every_statement_of_a_counted_connection_is_counted_by_its_kind() {
        let store = Store::Sqlite(":memory:".into());
        let mut conn = open_connection(&store, ConnectionSetup::default()).unwrap();
        conn.batch_execute("CREATE TABLE n (v INTEGER)").unwrap();
        let work = Arc::new(WorkCounters::default());
        count_statements(&mut conn, &work, StatementsOn::Reader);
        write_transaction(&mut conn, |conn| -> diesel::QueryResult<usize> {
            statement("INSERT INTO n (v) VALUES (?)")
                .bind::<BigInt, _>(1)
                .execute(conn)?;
            diesel::sql_query("DELETE FROM n").execute(conn)
        })
        .unwrap();
        let count = work.count();
        assert_eq!(
            count.statements_on(StatementsOn::Reader),
            4,
            "BEGIN, the insert, the delete, COMMIT"
        );
        assert_eq!(count.statements_on(StatementsOn::Writer), 0);
    }

    #[cfg(feature = "testing")]
    #[test]
    fn what_runs_uncounted_is_not_counted_and_counting_goes_on_after() {
        let store = Store::Sqlite(":memory:".into());
        let mut conn = open_connection(&store, ConnectionSetup::default()).unwrap();
        let work = Arc::new(WorkCounters::default());
        count_statements(&mut conn, &work, StatementsOn::Writer);
        uncounted(&mut conn, |conn| conn.batch_execute("SELECT 1")).unwrap();
        assert_eq!(work.count().statements_on(StatementsOn::Writer), 0);
        conn.batch_execute("SELECT 1").unwrap();
        assert_eq!(work.count().statements_on(StatementsOn::Writer), 1);
    }
}
