//! The RPC audit log: one row per call.

use diesel::prelude::*;

use crate::db::ids::RpcLogId;
use crate::db::models::{RpcLogInsertForm, RPC_LOG_RESULT_MAX_CHARS};
use crate::db::schema::rpc_log;
use crate::db::DbError;

/// Records one call; the result text is cut to [`RPC_LOG_RESULT_MAX_CHARS`] characters.
pub fn insert_rpc_log(
    conn: &mut SqliteConnection,
    form: &RpcLogInsertForm,
) -> Result<RpcLogId, DbError> {
    let mut form = form.clone();
    form.result = form
        .result
        .map(|result| result.chars().take(RPC_LOG_RESULT_MAX_CHARS).collect());
    Ok(diesel::insert_into(rpc_log::table)
        .values(&form)
        .returning(rpc_log::id)
        .get_result::<i64>(conn)
        .map(RpcLogId)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::testing::TestDb;

    #[test]
    fn long_results_are_truncated() {
        let mut db = TestDb::new();
        let form = RpcLogInsertForm {
            project_id: None,
            method: "ping".into(),
            rpc_id: Some("1".into()),
            params: Some("{}".into()),
            result: Some("é".repeat(5_000)),
            error: None,
        };
        let id = insert_rpc_log(&mut db.conn, &form).unwrap();
        let stored: Option<String> = rpc_log::table
            .find(id.0)
            .select(rpc_log::result)
            .first(&mut db.conn)
            .unwrap();
        assert_eq!(
            stored.map(|text| text.chars().count()),
            Some(RPC_LOG_RESULT_MAX_CHARS)
        );
    }
}
