//! The RPC audit log: one row per call, and the pruning that keeps it within its bounds
//! while the server runs.

use crate::db::backend::per_backend;
use crate::db::Conn;
use diesel::prelude::*;
use diesel::sql_types::{BigInt, Integer};

use crate::db::models::RpcLogInsertForm;
use crate::db::schema::rpc_log;
use crate::db::statement::statement;
use crate::db::DbError;

/// How much of the log is kept; a zero bound is no bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RpcLogBounds {
    /// Days a row is kept.
    pub max_days: u32,
    /// Rows kept, the newest.
    pub max_rows: u64,
}

/// Records a batch of calls in one statement.
pub(crate) fn insert_rpc_logs(
    conn: &mut Conn,
    forms: &[RpcLogInsertForm],
) -> Result<usize, DbError> {
    Ok(per_backend!(conn, |conn| diesel::insert_into(
        rpc_log::table
    )
    .values(forms)
    .execute(conn))?)
}

/// Deletes the rows older than `max_days` days, then every row but those with the newest
/// `max_rows` ids; returns how many went. Ids only grow and rows only go oldest first, so
/// what is left is at most `max_rows` rows. Each delete starts from an index (`created_at`,
/// the primary key): with nothing over the bounds it is a lookup, so it may run after every
/// batch of rows.
pub(crate) fn prune(conn: &mut Conn, bounds: RpcLogBounds) -> Result<usize, DbError> {
    let mut deleted = 0;
    if bounds.max_days > 0 {
        let days = i32::try_from(bounds.max_days).unwrap_or(i32::MAX);
        deleted += statement(
            "DELETE FROM rpc_log WHERE created_at < datetime('now', '-' || ? || ' days')",
        )
        .bind::<Integer, _>(days)
        .execute(conn)?;
    }
    if bounds.max_rows > 0 {
        let rows = i64::try_from(bounds.max_rows).unwrap_or(i64::MAX);
        deleted += statement("DELETE FROM rpc_log WHERE id <= (SELECT max(id) FROM rpc_log) - ?")
            .bind::<BigInt, _>(rows)
            .execute(conn)?;
    }
    Ok(deleted)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::testing::TestDb;

    fn call(method: &str) -> RpcLogInsertForm {
        RpcLogInsertForm {
            project_id: None,
            method: method.into(),
            rpc_id: Some("1".into()),
            params: Some(r#"{"run":"r_1"}"#.into()),
            result: None,
            error: Some("Run not found.".into()),
            duration_ms: 12,
            status: Some(-32002),
            params_bytes: 13,
            result_bytes: None,
            run: Some("r_1".into()),
            person: Some("ana".into()),
        }
    }

    fn methods(conn: &mut Conn) -> Vec<String> {
        rpc_log::table
            .order(rpc_log::id)
            .select(rpc_log::method)
            .load(conn)
            .unwrap()
    }

    /// Rows `method` written `days` days ago.
    fn written_days_ago(conn: &mut Conn, method: &str, days: i32) {
        insert_rpc_logs(conn, &[call(method)]).unwrap();
        statement(
            "UPDATE rpc_log SET created_at = datetime('now', '-' || ? || ' days')
             WHERE id = (SELECT max(id) FROM rpc_log)",
        )
        .bind::<Integer, _>(days)
        .execute(conn)
        .unwrap();
    }

    #[test]
    fn a_batch_is_stored_with_every_column() {
        let mut db = TestDb::new();
        let conn = &mut db.conn;
        let success = RpcLogInsertForm {
            result: Some("{}".into()),
            error: None,
            status: None,
            result_bytes: Some(2),
            person: None,
            ..call("getRun")
        };
        assert_eq!(
            insert_rpc_logs(conn, &[call("getRun"), success]).unwrap(),
            2
        );
        type Row = (
            Option<String>,
            Option<i64>,
            Option<i64>,
            Option<i64>,
            Option<i64>,
            Option<String>,
            Option<String>,
        );
        let stored: Vec<Row> = rpc_log::table
            .order(rpc_log::id)
            .select((
                rpc_log::error,
                rpc_log::duration_ms,
                rpc_log::status,
                rpc_log::params_bytes,
                rpc_log::result_bytes,
                rpc_log::run,
                rpc_log::person,
            ))
            .load(conn)
            .unwrap();
        let run = Some("r_1".to_owned());
        assert_eq!(
            stored,
            [
                (
                    Some("Run not found.".into()),
                    Some(12),
                    Some(-32002),
                    Some(13),
                    None,
                    run.clone(),
                    Some("ana".into())
                ),
                (None, Some(12), None, Some(13), Some(2), run, None),
            ]
        );
    }

    #[test]
    fn rows_older_than_the_age_bound_go() {
        let mut db = TestDb::new();
        let conn = &mut db.conn;
        written_days_ago(conn, "ancient", 30);
        written_days_ago(conn, "last week", 8);
        written_days_ago(conn, "two days ago", 2);
        insert_rpc_logs(conn, &[call("now")]).unwrap();
        let no_bounds = RpcLogBounds::default();
        assert_eq!(prune(conn, no_bounds).unwrap(), 0);
        assert_eq!(methods(conn).len(), 4, "no bound keeps everything");
        let week = RpcLogBounds {
            max_days: 7,
            ..no_bounds
        };
        assert_eq!(prune(conn, week).unwrap(), 2);
        assert_eq!(methods(conn), ["two days ago", "now"]);
        let day = RpcLogBounds {
            max_days: 1,
            ..no_bounds
        };
        assert_eq!(prune(conn, day).unwrap(), 1);
        assert_eq!(methods(conn), ["now"]);
    }

    #[test]
    fn only_the_newest_rows_stay() {
        let mut db = TestDb::new();
        let conn = &mut db.conn;
        let batch: Vec<_> = (1..=10).map(|n| call(&format!("m{n}"))).collect();
        insert_rpc_logs(conn, &batch).unwrap();
        let three = RpcLogBounds {
            max_rows: 3,
            ..RpcLogBounds::default()
        };
        assert_eq!(prune(conn, three).unwrap(), 7);
        assert_eq!(methods(conn), ["m8", "m9", "m10"]);
        assert_eq!(prune(conn, three).unwrap(), 0, "at the bound nothing goes");
        insert_rpc_logs(conn, &[call("m11")]).unwrap();
        assert_eq!(prune(conn, three).unwrap(), 1);
        assert_eq!(methods(conn), ["m9", "m10", "m11"]);
        let ample = RpcLogBounds {
            max_rows: 50,
            ..three
        };
        assert_eq!(prune(conn, ample).unwrap(), 0);
    }
}
