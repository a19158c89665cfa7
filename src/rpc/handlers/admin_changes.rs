//! The audit of admins' changes (people, caps, models and their prices, MCP servers, the
//! personal-key requirement, tokens revoked) and of people's own secrets and sign-ins:
//! [`record`] notes one in the unit of work of the change (or after the users file is
//! written), and `admin/changes` reads them, newest first.

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::agent::allow::{person_key, person_of};
use crate::db::queries::admin_changes::{self, AdminChangeRow};
use crate::db::{Conn, DbError};
use crate::error::AppError;
use crate::rpc::call::{CallContext, Reply};

/// `admin/changes` params.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ChangesParams {
    /// How many, 1 to 200 (default 50).
    #[serde(default)]
    limit: Option<i64>,
    /// Those before this change's id (the next page).
    #[serde(default)]
    before: Option<i64>,
}

/// One change as `admin/changes` answers it.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct ChangeView {
    id: i64,
    /// `YYYY-MM-DD HH:MM:SS` UTC.
    at: String,
    /// Who made it (`null`: the operator).
    by: Option<String>,
    action: String,
    subject: String,
    detail: Value,
}

impl ChangeView {
    fn of(row: AdminChangeRow) -> ChangeView {
        ChangeView {
            id: row.id,
            at: row.made_at,
            by: person_of(&row.made_by),
            action: row.action,
            subject: row.subject,
            detail: serde_json::from_str(&row.detail).unwrap_or(Value::Null),
        }
    }
}

/// Notes that `by` (the operator for `None`) made the change `action` to `subject`;
/// `detail` must hold no token or secret.
pub(crate) fn record(
    conn: &mut Conn,
    by: Option<&str>,
    action: &str,
    subject: &str,
    detail: &Value,
) -> Result<(), DbError> {
    admin_changes::record(conn, person_key(by), action, subject, &detail.to_string())
}

/// `admin/changes`: the latest changes, newest first.
pub(crate) async fn list(context: CallContext, params: ChangesParams) -> Result<Reply, AppError> {
    let limit = params.limit.unwrap_or(50);
    if !(1..=200).contains(&limit) {
        return Err(AppError::InvalidParam(format!(
            "limit must be 1 to 200 (got {limit})"
        )));
    }
    let before = params.before;
    let rows = context
        .agent
        .db
        .read(move |conn| admin_changes::latest(conn, limit, before))
        .await?;
    let changes: Vec<ChangeView> = rows.into_iter().map(ChangeView::of).collect();
    Reply::of(json!({ "changes": changes }))
}
