//! The RPC audit log: one row per call.

use diesel::prelude::*;

use crate::db::models::{RpcLogInsertForm, RPC_LOG_TEXT_MAX_CHARS};
use crate::db::schema::rpc_log;
use crate::db::DbError;

/// Records a batch of calls in one statement; each params and result text is cut to
/// [`RPC_LOG_TEXT_MAX_CHARS`] characters.
pub fn insert_rpc_logs(
    conn: &mut SqliteConnection,
    forms: Vec<RpcLogInsertForm>,
) -> Result<usize, DbError> {
    let forms: Vec<RpcLogInsertForm> = forms
        .into_iter()
        .map(|form| RpcLogInsertForm {
            params: form.params.map(cut),
            result: form.result.map(cut),
            ..form
        })
        .collect();
    Ok(diesel::insert_into(rpc_log::table)
        .values(&forms)
        .execute(conn)?)
}

fn cut(text: String) -> String {
    match text.char_indices().nth(RPC_LOG_TEXT_MAX_CHARS) {
        Some((end, _)) => text[..end].to_owned(),
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::testing::TestDb;

    #[test]
    fn long_params_and_results_are_truncated() {
        let mut db = TestDb::new();
        let form = RpcLogInsertForm {
            project_id: None,
            method: "set".into(),
            rpc_id: Some("1".into()),
            params: Some("é".repeat(9_000)),
            result: Some("é".repeat(5_000)),
            error: None,
        };
        let short = RpcLogInsertForm {
            params: Some("{}".into()),
            result: Some("ok".into()),
            ..form.clone()
        };
        assert_eq!(insert_rpc_logs(&mut db.conn, vec![form, short]).unwrap(), 2);
        let stored: Vec<(Option<String>, Option<String>)> = rpc_log::table
            .order(rpc_log::id)
            .select((rpc_log::params, rpc_log::result))
            .load(&mut db.conn)
            .unwrap();
        let count = |text: &Option<String>| text.as_deref().map(|text| text.chars().count());
        let lengths: Vec<_> = stored
            .iter()
            .map(|(params, result)| (count(params), count(result)))
            .collect();
        assert_eq!(
            lengths,
            [
                (Some(RPC_LOG_TEXT_MAX_CHARS), Some(RPC_LOG_TEXT_MAX_CHARS)),
                (Some(2), Some(2))
            ]
        );
    }
}
