//! `getModels`, `addModel`, `removeModel`.

use serde::{Deserialize, Serialize};

use crate::db::models::ModelInsertForm;
use crate::db::queries::models;
use crate::error::AppError;
use crate::rpc::call::{CallContext, Reply};
use crate::rpc::params::{Page, Required};

#[derive(Serialize)]
struct ModelView {
    alias: String,
    actual: String,
    context_length: Option<i32>,
}

/// `getModels`: the catalogue, by alias.
pub(crate) async fn list(context: CallContext, page: Page) -> Result<Reply, AppError> {
    let rows = context
        .agent
        .db
        .read(move |conn| {
            models::list_models(conn, page.limit.map(i64::from), page.offset.map(i64::from))
        })
        .await?;
    let views: Vec<ModelView> = rows
        .into_iter()
        .map(|row| ModelView {
            alias: row.alias,
            actual: row.actual,
            context_length: row.context_length,
        })
        .collect();
    Reply::of(views)
}

/// `addModel` params.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct AddModelParams {
    alias: Required,
    actual: Required,
    #[serde(default)]
    context_length: Option<u32>,
}

#[derive(Serialize)]
struct AddModelResult {
    id: i64,
    alias: String,
}

/// `addModel`: insert or update an alias; the context length is kept when not given.
pub(crate) async fn add(context: CallContext, params: AddModelParams) -> Result<Reply, AppError> {
    if params.alias.chars().any(char::is_whitespace) {
        return Err(AppError::InvalidParam(
            "alias must not contain whitespace".into(),
        ));
    }
    let context_length = params
        .context_length
        .map(|length| i32::try_from(length).unwrap_or(i32::MAX));
    let row = context
        .agent
        .db
        .call(move |conn| {
            models::upsert_model(
                conn,
                &ModelInsertForm {
                    alias: params.alias.0,
                    actual: params.actual.0,
                    context_length,
                },
            )
        })
        .await?;
    Reply::of(AddModelResult {
        id: row.id.0,
        alias: row.alias,
    })
}

/// `removeModel` params.
#[derive(Debug, Deserialize)]
pub(crate) struct RemoveModelParams {
    alias: Required,
}

/// `removeModel`: ok whether or not the alias existed.
pub(crate) async fn remove(
    context: CallContext,
    params: RemoveModelParams,
) -> Result<Reply, AppError> {
    context
        .agent
        .db
        .call(move |conn| models::remove_model(conn, &params.alias))
        .await?;
    Reply::of(serde_json::json!({"status": "ok"}))
}
