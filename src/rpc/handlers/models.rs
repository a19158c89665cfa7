//! `getModels`, `addModel`, `removeModel`.

use serde::{Deserialize, Serialize};

use crate::db::models::ModelInsertForm;
use crate::db::queries::models;
use crate::error::AppError;
use crate::rpc::call::{CallContext, Reply};
use crate::rpc::params::{Page, Required};
use crate::usage::Price;

#[derive(Serialize)]
struct ModelView {
    alias: String,
    actual: String,
    context_length: Option<i32>,
    price: PriceView,
}

/// A model's price as `getModels` shows it: US dollars per million tokens, each field
/// spelt as `addModel` takes it ([`PriceParams`]).
#[derive(Serialize)]
struct PriceView {
    input: f64,
    cached_input: f64,
    output: f64,
}

impl PriceView {
    fn of(price: Price) -> PriceView {
        PriceView {
            input: price.input.dollars(),
            cached_input: price.cached_input.dollars(),
            output: price.output.dollars(),
        }
    }
}

/// `addModel`'s `price`: US dollars per million tokens, spelt as `getModels` shows it
/// ([`PriceView`]), as the settings' `[models.<alias>.price]` and every key of `caps`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct PriceParams {
    input: f64,
    /// The input price when not given.
    #[serde(default)]
    cached_input: Option<f64>,
    output: f64,
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
            price: PriceView::of(row.price()),
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
    /// None keeps the stored price (zero for a new model).
    #[serde(default)]
    price: Option<PriceParams>,
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
    let price = params
        .price
        .map(|price| Price::from_dollars(price.input, price.cached_input, price.output))
        .transpose()
        .map_err(|error| AppError::InvalidParam(format!("price: {error}")))?;
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
                    price,
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
