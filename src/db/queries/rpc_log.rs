//! The RPC audit log: one row per call.

use diesel::prelude::*;

use crate::db::models::RpcLogInsertForm;
use crate::db::schema::rpc_log;
use crate::db::DbError;

/// Records a batch of calls in one statement.
pub fn insert_rpc_logs(
    conn: &mut SqliteConnection,
    forms: &[RpcLogInsertForm],
) -> Result<usize, DbError> {
    Ok(diesel::insert_into(rpc_log::table)
        .values(forms)
        .execute(conn)?)
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
}
